"""The cycle counts the examples' READMEs state are what the replay gives today.

An example's "what it found" is a measurement typed into prose; the engine's rules move (this
project tightened them round by round) and a README that is not re-read goes stale without a
test failing (two did: a new user found them). Each claim is read from the README text, so a
README edited by hand and a replay that moves both fail here, naming the line.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from cyclesim.analysis.simulate import replay
from cyclesim.chip.api import replay_chip
from cyclesim.engine.verify import VERIFY_ENVIRONMENT_VARIABLE
from cyclesim.spec import load_architecture, load_mapping, load_workload

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


@pytest.fixture(autouse=True)
def _no_second_replay(monkeypatch):
    """The numbers are the point here, not fast-forward (every other test replay checks it
    against a full replay): one replay per claim keeps this file to seconds."""
    monkeypatch.setenv(VERIFY_ENVIRONMENT_VARIABLE, "0")


def number(text: str) -> int:
    return int(text.replace(",", ""))


def table_rows(readme: Path, columns: int) -> list[tuple[int, list[str]]]:
    """(line number, cells) of every markdown table row with at least `columns` cells."""
    rows = []
    for i, line in enumerate(readme.read_text().splitlines(), 1):
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) >= columns and not set(cells[0]) <= {"-"}:
            rows.append((i, cells))
    return rows


def cycles_of(arch: str, workload: str, mapping: str) -> int:
    a, w = load_architecture(str(ROOT / arch)), load_workload(str(ROOT / workload))
    return replay(a, w, load_mapping(str(ROOT / mapping), a, w), progress=False).cycles


def test_simple_3level_states_its_cycles():
    readme = EXAMPLES / "simple_3level" / "README.md"
    found = re.search(r"The replay takes ([\d,]+) cycles", readme.read_text())
    assert found, f"{readme}: the sentence 'The replay takes N cycles' is gone"
    got = cycles_of(
        "hw_models/simple_3level.yaml",
        "examples/simple_3level/workload.yaml",
        "examples/simple_3level/mapping.yaml",
    )
    assert number(found.group(1)) == got, (
        f"{readme}: says {found.group(1)}, the replay gives {got:,}"
    )


def multicore_rows():
    readme = EXAMPLES / "multicore" / "README.md"
    rows = [(i, c) for i, c in table_rows(readme, 4) if c[0].startswith("chip_")]
    assert len(rows) == 10, f"{readme}: expected the 10-row results table"
    return [pytest.param(i, c[0].split()[0], c[1], c[2], id=f"line{i}") for i, c in rows]


@pytest.mark.parametrize("line, chip, mapping, cycles", multicore_rows())
def test_multicore_table_rows(line, chip, mapping, cycles):
    # the chip column may be "`chip_bus_2core` (one 32-b bus)": its first word names the file
    chip = chip.strip("`")
    folder = EXAMPLES / "multicore"
    res = replay_chip(folder / f"{chip}.yaml", folder / "workload.yaml", folder / f"{mapping}.yaml")
    assert res.cycles == number(cycles), (
        f"examples/multicore/README.md:{line}: says {cycles}, the replay gives {res.cycles:,}"
    )


def test_eyeriss_memsize_table():
    """Both settings in both port layouts: the issue layout is the committed YAML, the shipped
    one is built by the ZigZag converter from ZigZag's own files (as `make demo` does)."""
    sys.path.insert(0, str(EXAMPLES / "eyeriss_memsize"))
    import memsize

    readme = EXAMPLES / "eyeriss_memsize" / "README.md"
    rows = [(i, c) for i, c in table_rows(readme, 3) if c[1] in memsize.LAYOUTS]
    assert {(c[0], c[1]) for _, c in rows} == {
        (s, lay) for s in memsize.SETTINGS for lay in memsize.LAYOUTS
    }
    got = {}
    for line, (setting, layout, cycles, *_) in rows:
        spec = memsize.imported_spec(setting, layout)
        got[setting, layout] = replay(
            spec.architecture, spec.workload, spec.mapping, progress=False
        ).cycles
        assert got[setting, layout] == number(cycles), (
            f"{readme}:{line}: {setting} {layout} says {cycles}, the replay gives "
            f"{got[setting, layout]:,}"
        )
    # the sentence built on the issue rows: "faster, by N cycles (P %)"
    text = readme.read_text()
    found = re.search(r"really faster, by ([\d,]+) cycles \(([\d.]+) %\)", text)
    assert found, f"{readme}: the sentence 'really faster, by N cycles (P %)' is gone"
    large, small = got["large", "issue"], got["small", "issue"]
    assert number(found.group(1)) == large - small
    assert found.group(2) == f"{100 * (large - small) / large:.1f}"


def test_resnet50_dram_table_and_controller():
    readme = EXAMPLES / "resnet50_dram" / "README.md"
    text = readme.read_text()
    row = re.search(r"^\| cycles \| ([\d,]+) \| ([\d,]+) \|", text, re.M)
    assert row, f"{readme}: the '| cycles | bandwidth-only | DDR4 |' row is gone"
    files = ("examples/resnet50_dram/workload.yaml", "examples/resnet50_dram/mapping.yaml")
    assert cycles_of("hw_models/tpu_like.yaml", *files) == number(row.group(1))
    assert cycles_of("hw_models/tpu_like_ddr4.yaml", *files) == number(row.group(2))
    controller = re.search(r"The layer then takes \*\*([\d,]+) cycles\*\*", text)
    assert controller, f"{readme}: the controller's 'The layer then takes **N cycles**' is gone"
    got = cycles_of("hw_models/tpu_like_ddr4_controller.yaml", *files)
    assert got == number(controller.group(1))
