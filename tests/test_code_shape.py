"""Shapes a newcomer can read: no module over 400 lines and no function over 80 without the
reason written at its top (a docstring line starting "Over 400 lines:" or "Over 80 lines:"),
so that a long one is long on purpose (one hot loop, one file format read in order), not by
drift."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "cyclesim"
MODULE_LINES, FUNCTION_LINES = 400, 80


def _sources() -> list[Path]:
    # the compiled DRAM copies (_<module>_native.py) exist only while make native runs
    return sorted(p for p in PACKAGE.rglob("*.py") if not p.name.endswith("_native.py"))


def _says_why(doc: str | None, limit: int) -> bool:
    """Does the docstring give a reason: a line 'Over <limit> lines: <at least a few words>'?"""
    for line in (doc or "").splitlines():
        text = line.strip()
        if text.startswith(f"Over {limit} lines:") and len(text.split()) >= 7:
            return True
    return False


def long_modules() -> list[str]:
    out = []
    for path in _sources():
        text = path.read_text()
        lines = len(text.splitlines())
        if lines > MODULE_LINES and not _says_why(ast.get_docstring(ast.parse(text)), 400):
            out.append(f"{path.relative_to(PACKAGE.parent)}: {lines} lines")
    return out


def long_functions() -> list[str]:
    out = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > FUNCTION_LINES and not _says_why(ast.get_docstring(node), 80):
                    where = f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"
                    out.append(f"{where} {node.name}: {lines} lines")
    return out


def test_every_module_over_400_lines_says_why() -> None:
    assert long_modules() == []


def test_every_function_over_80_lines_says_why() -> None:
    assert long_functions() == []


def test_a_reason_is_a_sentence_not_a_marker() -> None:
    assert _says_why("Reads a file.\n\nOver 80 lines: the format's sections, read in order.", 80)
    assert not _says_why("Over 80 lines: yes.", 80)  # a marker, not a reason
    assert not _says_why("Over 400 lines: one loop that must stay in one frame.", 80)
