"""Layers (docs/design.md "Layers"): every import of a cyclesim module follows an arrow of DESIGN.

    spec -> schedule -> engine -> results -> views (report, VCD / FST, Perfetto, plots, HTML)
    analysis (explain's what-if replays, sweeps, the Python API)    checks/<peer>/

Arrows point down only: a module imports its own layer and the layers above it, never one
below; views read results only (neither the engine nor the schedule it runs). Beside the
column: errors, outputs, the vocabulary (causes, waits, directions) and the pure-Python switch
(compiled.py) are the foundation everyone may use (they import no other cyclesim
module); the DRAM and L1 models (cyclesim/dram, cyclesim/l1) sit beside spec (which validates
their blocks) and import only spec and the foundation. Entry points (analysis, checks, chip,
the command lines) may import anything and nothing imports them — so only they start a
replay, and explain's what-if replays live in their own module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "cyclesim"

COLUMN = ("spec", "schedule", "engine", "results", "views")  # top to bottom
FOUNDATION = ("compiled", "errors", "outputs", "vocabulary")
MODELS = ("dram", "l1")
ENTRY = ("analysis", "checks", "chip", "cli", "__main__")
# a command line inside a model's package is an entry point of its own (`cyclesim dram`, `l1`)
ENTRY_MODULES = ("cyclesim.dram.cli", "cyclesim.l1.cli")
EXPLAIN_REPLAYS = "cyclesim.analysis.explain.replays"  # explain's what-if replays, alone
# what starts a replay, by the module that defines it: the engine runs a plan; analysis.simulate
# is the one facade (inputs -> plan -> engine -> results), `replay` its core returning a Result;
# `traced` and the trace writers beside it replay an untraced run once more with tracing
_SIMULATE_STARTERS = ("replay", "simulate", "traced", "write_vcd", "write_perfetto")
REPLAY_STARTERS = {
    "cyclesim.engine": ("replay_plan",),
    "cyclesim.engine.run": ("replay_plan",),
    "cyclesim.analysis.simulate": _SIMULATE_STARTERS,
    "cyclesim": _SIMULATE_STARTERS[1:],  # the package's lazy public names
}

# Imports against an arrow, kept until a planned restructuring removes them; each entry must
# still occur (the test below fails once it is gone, so the list cannot go stale). None is left:
# the engine builds no results since analysis.simulate became the one facade.
KNOWN: set[tuple[str, str]] = set()


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


def module_name(path: Path) -> str:
    """cyclesim/engine/run.py -> cyclesim.engine.run (a package's __init__ -> the package)."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def part_of(module: str) -> str | None:
    """The layer a cyclesim module belongs to: a COLUMN, FOUNDATION, MODELS or ENTRY name,
    "report" (the text report, a view), None for the package itself (its lazy public names)."""
    parts = module.split(".")
    if parts[0] != "cyclesim" or len(parts) < 2:
        return None
    if any(module == m or module.startswith(m + ".") for m in ENTRY_MODULES):
        return "cli"
    return "views" if parts[1] == "report" else parts[1]


def may_import(importer: str, imported: str) -> bool:
    """Does DESIGN's layering allow a module of layer `importer` to import layer `imported`?"""
    if imported is None or imported == importer or imported in FOUNDATION:
        return True
    if importer in ENTRY:
        return True
    if imported in ENTRY:
        return False
    if importer in FOUNDATION:
        return False
    if importer in MODELS:
        return imported == "spec" or imported in MODELS and importer == imported
    if importer == "spec":
        return imported in MODELS  # spec validates the DRAM and L1 blocks with their schemas
    if importer == "views":
        return imported in ("spec", "results")  # views read results only
    if imported in MODELS:
        return True
    return COLUMN.index(imported) < COLUMN.index(importer)


def import_edges() -> list[tuple[str, int, str, str, str]]:
    """(file, line, importer module, imported module, its layer) of every cyclesim import
    that crosses from one layer to another."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = module_name(path)
        layer = part_of(name)
        for line, mod in imported_modules(path):
            other = part_of(mod)
            if mod.startswith("cyclesim.") and other != layer:
                out.append((str(path.relative_to(PACKAGE.parent)), line, name, mod, other))
    return out


def is_known(importer: str, imported: str) -> bool:
    return any(
        (importer == a or importer.startswith(a + ".")) and imported.startswith(b) for a, b in KNOWN
    )


def test_every_import_follows_an_arrow_of_the_design():
    bad = [
        f"{f}:{line} ({part_of(name)}) imports {mod} ({other})"
        for f, line, name, mod, other in import_edges()
        if not may_import(part_of(name), other) and not is_known(name, mod)
    ]
    assert not bad, "\n".join(bad)


def test_every_known_exception_still_occurs():
    """An entry of KNOWN that no import needs any more is to be deleted (the arrow holds)."""
    edges = [(name, mod) for _, _, name, mod, _ in import_edges()]
    stale = [k for k in KNOWN if not any(is_known(a, b) and a.startswith(k[0]) for a, b in edges)]
    assert not stale, f"remove from KNOWN: {stale}"


def test_only_entry_points_start_a_replay():
    """A replay (engine.replay_plan, analysis.simulate's simulate and replay) is started by an
    entry point only, and within explain only by its what-if module."""
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = module_name(path)
        for line, mod in imported_modules(path):
            source, _, last = mod.rpartition(".")
            if last not in REPLAY_STARTERS.get(source, ()):
                continue
            if name == source or name in ("cyclesim.engine", "cyclesim.engine.run"):
                continue  # where it is defined (the engine's package re-exports replay_plan)
            in_explain = name.startswith("cyclesim.analysis.explain.")
            if part_of(name) not in ENTRY or in_explain and name != EXPLAIN_REPLAYS:
                bad.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {mod}")
    assert not bad, "\n".join(bad)


# The rules themselves, on hand-picked imports (a rule that allows everything is no rule).
@pytest.mark.parametrize(
    "importer, imported, allowed",
    [
        ("schedule", "spec", True),  # an arrow down
        ("spec", "schedule", False),  # up
        ("results", "engine", True),  # results read the engine's records
        ("engine", "results", False),  # the engine does not build results
        ("views", "results", True),
        ("views", "engine", False),  # views read results only
        ("views", "schedule", False),
        ("engine", "analysis", False),  # nothing imports an entry point
        ("analysis", "engine", True),  # entry points import anything
        ("dram", "spec", True),  # a model reads its block with spec's loader
        ("dram", "engine", False),
        ("spec", "l1", True),  # spec validates the L1 block with the L1 model's schema
        ("errors", "spec", False),  # the foundation imports nothing
        ("engine", "outputs", True),
    ],
)
def test_the_rules_of_the_arrows(importer, imported, allowed):
    assert may_import(importer, imported) is allowed


def test_the_walk_sees_an_import_inside_a_function(tmp_path):
    """The walk finds imports inside functions too (a test that cannot fail is no test)."""
    f = tmp_path / "m.py"
    f.write_text(
        "def g():\n    from cyclesim.engine import replay_plan\n    import cyclesim.engine.run\n"
    )
    assert [m for _, m in imported_modules(f)] == [
        "cyclesim.engine",
        "cyclesim.engine.replay_plan",
        "cyclesim.engine.run",
    ]
