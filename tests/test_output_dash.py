"""An output option given '-' (stdout, as some tools read it): no cyclesim output goes to
stdout, so it is refused before anything runs, one line and exit 2, instead of a file named
'-' (4 MB for `run --vcd -`) that an interrupt would not even clean up."""

from __future__ import annotations

from pathlib import Path

import pytest

from cyclesim.cli import main

ROOT = Path(__file__).resolve().parents[1]
WORKED = [str(ROOT / "tests/cases/worked/03_single_buffer" / f"{p}.yaml") for p in ("arch", "workload", "mapping")]  # fmt: skip
MULTICORE = ROOT / "examples" / "multicore"
CHIP = [str(MULTICORE / f) for f in ("chip_bus_2core.yaml", "workload.yaml", "layer_by_layer_2core.yaml")]  # fmt: skip


@pytest.mark.parametrize(
    "argv",
    [
        ["run", *WORKED, "--vcd", "-"],
        ["run", *WORKED, "--perfetto", "-"],
        ["run", *WORKED, "--events", "-"],
        ["run", *WORKED, "--dram-trace", "-"],
        ["chip", *CHIP, "--fst", "-"],
    ],
    ids=lambda argv: f"{argv[0]} {argv[-2]}",
)
def test_dash_is_refused_as_an_output(argv, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{argv[-2]} -" in err and "stdout" in err, err
    assert list(tmp_path.iterdir()) == []
