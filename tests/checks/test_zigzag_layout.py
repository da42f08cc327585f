"""The ZigZag adapter is one package whose modules never import each other in a circle."""

from __future__ import annotations

import ast
from pathlib import Path

import cyclesim.checks.zigzag as package

PACKAGE = "cyclesim.checks.zigzag"


def _imports() -> dict[str, set[str]]:
    """Module -> the package modules it imports, lazily or not (TYPE_CHECKING ones included)."""
    graph: dict[str, set[str]] = {}
    for path in Path(package.__file__).parent.glob("*.py"):
        name = path.stem
        graph[name] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                if node.module.startswith(PACKAGE + "."):
                    graph[name].add(node.module.removeprefix(PACKAGE + ".").split(".")[0])
                elif node.module == PACKAGE:
                    graph[name] |= {alias.name for alias in node.names}
    return graph


def test_no_module_of_the_zigzag_package_imports_another_in_a_circle():
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
    assert not cycles, cycles


def test_the_old_flat_modules_are_gone():
    checks = Path(package.__file__).parent.parent
    assert not list(checks.glob("zigzag_*.py"))
    assert not (checks / "peers" / "zigzag.py").exists()
