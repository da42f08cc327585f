"""The Stream adapter is one package whose modules never import each other in a circle (data flows
one way: read -> peer/schedule -> pernode -> arithmetic/replay -> check -> plot/cli)."""

from __future__ import annotations

import ast
from pathlib import Path

import cyclesim.checks.stream as package

PACKAGE = "cyclesim.checks.stream"


def _imports() -> dict[str, set[str]]:
    """Module -> the package modules it imports, lazily or not."""
    graph: dict[str, set[str]] = {}
    for path in Path(package.__file__).parent.glob("*.py"):
        graph[path.stem] = {
            node.module.removeprefix(PACKAGE + ".").split(".")[0]
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.startswith(PACKAGE + ".")
        }
    return graph


def test_no_module_of_the_stream_package_imports_another_in_a_circle():
    graph = _imports()
    cycles = []

    def visit(module: str, path: list[str]) -> None:
        for target in sorted(graph.get(module, ())):
            if target in path:
                cycles.append(path[path.index(target) :] + [target])
            else:
                visit(target, path + [target])

    for module in sorted(graph):
        visit(module, [module])
    assert not cycles


def test_the_runner_imports_nothing_of_cyclesim():
    # it runs in Stream's own interpreter, where cyclesim is not installed
    tree = ast.parse((Path(package.__file__).parent / "peer_runner.py").read_text())
    modules = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    modules += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in modules if m.startswith("cyclesim")]
