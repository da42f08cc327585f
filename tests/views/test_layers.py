"""Layers: views read results only. No module under cyclesim/views imports the engine (or the
schedule it runs); what-if replays live in cyclesim/analysis."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

VIEWS = Path(__file__).resolve().parents[2] / "cyclesim" / "views"
FORBIDDEN = ("cyclesim.engine", "cyclesim.schedule")


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in a file, at any depth (functions included)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
            out += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return out


@pytest.mark.parametrize("path", sorted(VIEWS.glob("*.py")), ids=lambda p: p.name)
def test_views_do_not_import_the_engine(path):
    bad = [
        f"{path.name}:{line} imports {mod}"
        for line, mod in imported_modules(path)
        if any(mod == f or mod.startswith(f + ".") for f in FORBIDDEN)
    ]
    assert not bad, "; ".join(bad)


def test_the_check_sees_an_engine_import(tmp_path):
    """The walk finds imports inside functions too (a test that cannot fail is no test)."""
    f = tmp_path / "m.py"
    f.write_text(
        "def g():\n    from cyclesim.engine import replay\n    import cyclesim.engine.run\n"
    )
    assert [m for _, m in imported_modules(f)] == [
        "cyclesim.engine",
        "cyclesim.engine.replay",
        "cyclesim.engine.run",
    ]


def test_every_cause_has_its_own_plot_colour():
    """A new root cause must get a colour of its own, distinct from the phases' and the others'."""
    from cyclesim.results.attribution import CAUSES
    from cyclesim.views.plots import CAUSE_COLORS, PHASE_COLORS

    assert set(CAUSES) <= set(CAUSE_COLORS)
    colours = [CAUSE_COLORS[c] for c in CAUSES]
    assert len(set(colours)) == len(colours)
    assert not set(colours) & set(PHASE_COLORS.values())


def test_the_timeline_never_draws_a_tensor_in_a_causes_colour():
    """The timeline's legend lists the PE array's causes next to the Einsums and tensors (one
    palette colour each, in order of appearance): no palette colour may be a cause's, nor the
    grey of the PE array's port use, nor repeat within the palette."""
    from cyclesim.views.plots import _PALETTE, CAUSE_COLORS

    assert len(set(_PALETTE)) == len(_PALETTE) >= 12
    assert not set(_PALETTE) & {*CAUSE_COLORS.values(), "#444444"}
