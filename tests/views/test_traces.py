"""traces/ holds the dumps of the example cases; fresh dumps equal them byte for byte, and
GTKWave (batch mode, under Xvfb) loads every one with all the signals of its save file."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from view_cases import ROOT

from cyclesim.analysis.regen_traces import CASES, write_case

TRACES = ROOT / "traces"
REGEN = "run `make traces` and review the diff if the change is intended"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_fresh_dumps_equal_the_stored_traces(case, tmp_path):
    for path in write_case(case, tmp_path):
        stored = TRACES / case.name / path.name
        assert stored.exists(), f"{stored} is missing: {REGEN}"
        assert path.read_bytes() == stored.read_bytes(), (
            f"{stored} differs from a fresh dump: {REGEN}"
        )


GTKWAVE_SCRIPT = """\
puts "CYCLESIM facs [gtkwave::getNumFacs]"
puts "CYCLESIM shown [llength [gtkwave::getDisplayedSignals]]"
puts "CYCLESIM max [gtkwave::getMaxTime]"
gtkwave::/File/Quit
"""


def _gtkwave_command() -> list[str]:
    if shutil.which("gtkwave") is None:
        pytest.skip(
            "gtkwave is not installed (Debian packages gtkwave and xvfb: see the Makefile's gtkwave-deps)"
        )
    if shutil.which("xvfb-run") is None:
        pytest.skip(
            "xvfb-run is not installed (Debian package xvfb: see the Makefile's gtkwave-deps)"
        )
    return ["xvfb-run", "-a", "gtkwave"]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_gtkwave_loads_the_vcd_and_shows_every_signal_of_the_save_file(case, tmp_path):
    cmd = _gtkwave_command()
    vcd, gtkw, _ = write_case(case, tmp_path)
    script = tmp_path / "q.tcl"
    script.write_text(GTKWAVE_SCRIPT)
    # as a user would open it: from the trace's folder (the save file names the VCD relative to it)
    out = subprocess.run([*cmd, "-S", str(script), gtkw.name], cwd=gtkw.parent, capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    facts = dict(
        line.split()[1:3] for line in out.stdout.splitlines() if line.startswith("CYCLESIM ")
    )
    n_vars = vcd.read_text().count("$var ")
    # a trace line names its signal after the alias it shows: `+{DRAM rd busy} cyclesim.DRAM.rd.busy`
    n_traces = sum(
        1 for line in gtkw.read_text().splitlines() if line.split("} ")[-1].startswith("cyclesim.")
    )
    assert facts, f"gtkwave printed nothing: rc={out.returncode}\n{out.stdout}\n{out.stderr}"
    assert int(facts["facs"]) == n_vars
    assert int(facts["shown"]) == n_traces == n_vars
    last = max(int(line[1:]) for line in vcd.read_text().splitlines() if line.startswith("#"))
    assert int(facts["max"]) == last


def test_vcd2fst_converts_every_stored_vcd(tmp_path):
    if shutil.which("vcd2fst") is None:
        pytest.skip("vcd2fst (from the Debian package gtkwave) is not installed")
    for case in CASES:
        out = subprocess.run(["vcd2fst", str(TRACES / case.name / "trace.vcd"), str(tmp_path / f"{case.name}.fst")],
                             capture_output=True, text=True, timeout=60)  # fmt: skip
        assert out.returncode == 0, out.stderr
        assert (tmp_path / f"{case.name}.fst").stat().st_size > 0
