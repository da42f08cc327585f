"""The cycle counts the examples' READMEs state are what the replay gives today.

An example's "what it found" is a measurement typed into prose; the engine's rules move (this
project tightened them round by round) and a README that is not re-read goes stale without a
test failing (two did: a new user found them). Each claim is read from the README text, so a
README edited by hand and a replay that moves both fail here, naming the line.
"""

from __future__ import annotations

import json
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


def test_l1_placement_pool_sentence(capsys):
    # found: the README said an 884,736 B pool; `cyclesim l1 ... --compare` printed 921,600
    from cyclesim.cli import main

    readme = EXAMPLES / "l1_placement" / "README.md"
    pattern = (
        r"layer's ([\d,]+) B pool leaves no room for the QKV matmul's ([\d,]+) B of CBs "
        r"\(CB end\s+([\d,]+) > pool at ([\d,]+)\)"
    )
    found = re.search(pattern, readme.read_text())
    assert found, f"{readme}: the sentence on the pool policy's clash is gone"
    stated = [number(g) for g in found.groups()]
    main(
        ["l1", str(EXAMPLES / "l1_placement" / "deep_composite.yaml"), "--policy", "pool", "--json"]
    )
    run = json.loads(capsys.readouterr().out)["policies"][0]
    ops = {op["path"]: op for op in run["ops"]}
    got = [
        ops["encoder_layer"]["pool_bytes"],
        ops["encoder_layer/attention_block/linear_qkv"]["cb_peak_bytes"],
        run["failure"]["cb_region_end"],
        run["failure"]["lowest_heap_address"],
    ]
    assert stated == got, (
        f"{readme}: says {stated} (pool, QKV CBs, CB end, pool at), l1 gives {got}"
    )


def test_scalesim_cb2a_2_stall_causes(capsys):
    # found: the README said 285,286 of DRAM.rd_ofmap and 13,549 of DRAM.rd_ifmap; the check
    # printed 285,770 and 9,045 (and 4,056 of buffer_full). The replay's side only (--no-peer):
    # the causes are the replay's, SCALE-Sim's run takes a minute
    from cyclesim.cli import main

    readme = EXAMPLES / "scalesim" / "README.md"
    pattern = (
        r"The replay stalls ([\d,]+) cycles, ([\d,]+) of them `bandwidth`\s+of `DRAM.rd_ofmap`"
        r".*?; ([\d,]+) more are `DRAM.rd_ifmap`.*? and ([\d,]+) `buffer_full` of `ofmap_sram`"
    )
    found = re.search(pattern, readme.read_text(), re.S)
    assert found, f"{readme}: the CB2a_2 sentence on the replay's stall causes is gone"
    stated = [number(g) for g in found.groups()]
    folder = EXAMPLES / "scalesim"
    argv = ["check", "scalesim", str(folder / "ws_32x32_user_bw10.cfg"),
            str(folder / "resnet50_conv2x.csv"), "--no-peer", "--json"]  # fmt: skip
    main(argv)
    doc = json.loads(capsys.readouterr().out)
    stall = [t["value"] for t in doc["terms"] if (t["term"], t["source"]) == ("stall_cycles", "replay")]  # fmt: skip
    causes = next(n for n in doc["notes"] if n.startswith("CB2a_2: replay's non-compute cycles"))
    by_cause = {name: number(n) for name, n in re.findall(r"compute (\w+ [\w.]+) \(\w\) ([\d,]+)", causes)}  # fmt: skip
    got = [
        int(stall[0]),
        by_cause["bandwidth DRAM.rd_ofmap"],
        by_cause["bandwidth DRAM.rd_ifmap"],
        by_cause["buffer_full ofmap_sram"],
    ]
    assert stated == got, f"{readme}: says {stated} (stall, rd_ofmap, rd_ifmap, buffer_full), the check gives {got}"  # fmt: skip
