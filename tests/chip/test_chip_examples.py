"""examples/multicore as its README gives it: each command's cycles as the table says, every
core's cycles accounted for, and the CLI's --json and error paths."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cyclesim.cli import main

EX = Path("examples/multicore")
README = (EX / "README.md").read_text()
RUNS = [(m.group(1), m.group(2), int(m.group(3).replace(",", "")))
        for m in re.finditer(r"^\| `(chip_\w+)`[^|]*\| `(\w+)` \| ([\d,]+) \|", README, re.M)]  # fmt: skip


def test_readme_lists_every_example():
    assert len(RUNS) == 10


@pytest.mark.parametrize("chip, mapping, cycles", RUNS)
def test_example_cycles_as_the_readme_says(chip, mapping, cycles, capsys):
    args = [str(EX / f"{chip}.yaml"), str(EX / "workload.yaml"), str(EX / f"{mapping}.yaml")]
    assert main(["chip", *args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["cycles"] == cycles
    for core in out["cores"]:
        assert core["compute_cycles"] + sum(r["cycles"] for r in core["causes"]) == cycles
    assert main(["chip", *args]) == 0
    assert re.search(rf"^cycles +{cycles:,}$", capsys.readouterr().out, re.M)


def test_bad_mapping_is_one_line_exit_2(tmp_path, capsys):
    bad = tmp_path / "m.yaml"
    bad.write_text(
        (EX / "layer_by_layer_2core.yaml").read_text().replace("parts: 2", "parts: 3", 1)
    )
    code = main(["chip", str(EX / "chip_bus_2core.yaml"), str(EX / "workload.yaml"), str(bad)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "m.yaml:" in err and "layers[0].split[0].parts" in err


def test_dram_device_needs_the_chip_clock(tmp_path, capsys):
    chip = tmp_path / "chip.yaml"
    text = (EX / "chip_bus_2core_ddr4.yaml").read_text().replace("clock_mhz: 1000\n", "")
    chip.write_text(text.replace("core.yaml", str((EX / "core.yaml").resolve())))
    code = main(
        ["chip", str(chip), str(EX / "workload.yaml"), str(EX / "layer_by_layer_2core.yaml")]
    )
    err = capsys.readouterr().err
    assert code == 2 and "clock_mhz" in err and err.count("\n") == 1


def test_no_fast_forward_gives_the_same_run(capsys):
    """The cores' step replays without fast-forward: the same chip run, bit for bit."""
    args = [
        str(EX / "chip_bus_2core.yaml"),
        str(EX / "workload.yaml"),
        str(EX / "fused_rows_2core.yaml"),
    ]
    runs = []
    for extra in ([], ["--no-fast-forward"]):
        assert main(["chip", *args, "--json", *extra]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out.pop("fast_forward")["steps"] is not bool(extra)
        out.pop("wall_seconds")
        runs.append(out)
    assert runs[0] == runs[1]


def test_readme_explain_figures(capsys):
    """The README's --explain figures for the 2-core bus, fused in row tiles."""
    args = [
        str(EX / "chip_bus_2core.yaml"),
        str(EX / "workload.yaml"),
        str(EX / "fused_rows_2core.yaml"),
    ]
    assert main(["chip", *args, "--explain", "--json"]) == 0
    found = {r["remedy"]: r["cycles"] for r in json.loads(capsys.readouterr().out)["explain"]}
    assert found["conv1: tile of 4 along oy (was 2)"] == 12598
    assert found["W2 sent to each core on its own (no multicast)"] == 13086
    assert found["DRAM port twice as wide (rw 16 -> 32 b/cycle)"] == 14230
    for cycles in ("12,598", "13,086", "14,230"):
        assert cycles in README


def test_run_and_chip_point_to_each_other(capsys):
    """A chip given to `run`, or one core's architecture given to `chip`: one line saying which
    command reads it, exit 2."""
    code = main(["run", str(EX / "chip_bus_2core.yaml"), str(EX / "workload.yaml"),
                 str(EX / "layer_by_layer_2core.yaml")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "cyclesim chip ARCH WORKLOAD MAPPING" in err and err.count("\n") == 1
    code = main(["chip", str(EX / "core.yaml"), str(EX / "workload.yaml"),
                 str(EX / "layer_by_layer_2core.yaml")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "one core's architecture" in err and "cyclesim run" in err


def _edited(tmp_path, mapping: str, *edits: tuple[str, str]) -> str:
    """A copy of the example mapping with each (old, new) edit applied once."""
    text = (EX / f"{mapping}.yaml").read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    (tmp_path / f"{mapping}.yaml").write_text(text)
    return str(tmp_path / f"{mapping}.yaml")


@pytest.mark.parametrize(
    "chip, mapping, edits, cycles",
    [  # the README's "Try next" list, each edit as it says, and the cycles it gives
        ("chip_bus_2core", "fused_rows_2core",
         [("  - {tensor: A, via: network}", "  - {tensor: A, via: network}\n"
           "  - {tensor: W2, multicast: false}")], 13_086),
        ("chip_bus_2core", "fused_rows_2core",
         [("tile: [{rank: oy, size: 2}]", "tile: [{rank: oy, size: 4}]"),
          ("{type: temporal, rank: oy, bound: 2}", "{type: temporal, rank: oy, bound: 4}")],
         12_598),
        ("chip_mesh_4core", "layer_by_layer_4core",
         [("tensors:\n", "tensors:\n  - {tensor: W1, route: [d0, c01, c13, d2]}\n")], 8_150),
    ],
)  # fmt: skip
def test_readme_try_next_as_it_says(tmp_path, chip, mapping, edits, cycles, capsys):
    path = _edited(tmp_path, mapping, *edits)
    assert main(["chip", str(EX / f"{chip}.yaml"), str(EX / "workload.yaml"), path]) == 0
    assert re.search(rf"^cycles +{cycles:,}$", capsys.readouterr().out, re.M)
    assert f"{cycles:,}" in README


def test_the_fast_forward_note_reads_on_a_terminal(capsys):
    # the note was one 200-column line ending "...of that shape); inside the steps on": it
    # now says the steps' setting first and wraps at 96 columns
    args = [str(EX / "chip_bus_2core.yaml"), str(EX / "workload.yaml")]
    assert main(["chip", *args, str(EX / "layer_by_layer_2core.yaml"), "--no-fast-forward"]) == 0
    out = capsys.readouterr().out
    note = out[out.index("fast-forward:") : out.index("replayed in")].splitlines()
    assert note[0].startswith("fast-forward: inside the steps off (--no-fast-forward); off at")
    assert len(note) > 1 and all(len(line) <= 96 for line in note)


def test_dram_device_causes_name_the_other_transfer(capsys):
    """With DDR4 behind the port, core c0 waits 89 cycles on A because the device's data bus
    still serves another part of A (the timer's `contention`, docs/dram_causes.md): the row
    names that transfer and its core (it had no competitor, and a cause the chip docs gave
    only to links and buses)."""
    args = [str(EX / "chip_bus_2core_ddr4.yaml"), str(EX / "workload.yaml"),
            str(EX / "layer_by_layer_2core.yaml")]  # fmt: skip
    assert main(["chip", *args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = [r for core in out["cores"] for r in core["causes"]]
    at_device = [r for r in rows if r["where"] == "dram" and r["cause"] in ("contention", "bank_conflict")]  # fmt: skip
    assert at_device and all(r["competitor"] and r["competitor_core"] for r in at_device)
    c0 = next(r for r in at_device if r["cycles"] == 89)
    assert (c0["tensor"], c0["competitor"], c0["competitor_core"]) == ("A", "A[0:8,0:8,0:8] dram->c0", "c0")  # fmt: skip


def test_no_report_line_ends_in_blanks(capsys):
    """An `idle` row names nothing after its share: it ended in a blank."""
    args = [str(EX / "chip_bus_2core.yaml"), str(EX / "workload.yaml"), str(EX / "fused_rows_2core.yaml")]  # fmt: skip
    assert main(["chip", *args]) == 0
    out = capsys.readouterr().out
    assert " idle " in out and not [line for line in out.splitlines() if line != line.rstrip()]
