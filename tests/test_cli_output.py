"""Machine-readable output: schema_version and one naming in JSON, --csv summaries, -q/-v logging."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from cyclesim.cli import main

CASE = Path(__file__).resolve().parent / "cases" / "worked" / "03_single_buffer"
FILES = [str(CASE / f"{part}.yaml") for part in ("arch", "workload", "mapping")]
FILES_OF_A_CASE = ("workload.yaml", "mapping.yaml")


def test_run_json_starts_with_the_schema_version(capsys):
    assert main(["run", *FILES, "--json", "--no-progress"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert next(iter(doc)) == "schema_version" and doc["schema_version"] == 1
    assert doc["cycles"] == 52 and doc["stall_cycles"] == 24


def test_explain_json_has_the_schema_version_and_cycles(capsys):
    assert main(["explain", *FILES, "--json", "--no-verify", "-q"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema_version"] == 1 and doc["cycles"] == 52
    assert doc["non_compute_cycles"] == 52 - 16


def read_csv(path: Path) -> list[dict]:
    with path.open() as fh:
        return list(csv.DictReader(fh))


def test_csv_summaries_hold_the_hand_derived_numbers(tmp_path, capsys):
    assert main(["run", *FILES, "--csv", str(tmp_path), "-q"]) == 0
    (run,) = read_csv(tmp_path / "compute_report.csv")
    # case 03: 8 onload + 16 ideal + 24 stall + 4 offload = 52, every wait is bandwidth;
    # one PE doing 16 MACs in 52 cycles: 30.769 % of what it could do
    assert (run["cycles"], run["onload_cycles"], run["stall_cycles"]) == ("52", "8", "24")
    assert run["cause_bandwidth_cycles"] == "36" and run["cause_contention_cycles"] == "0"
    assert run["mac_utilisation_pct"] == run["compute_utilisation_pct"] == "30.769"
    memories = {row["memory"]: row for row in read_csv(tmp_path / "memory_report.csv")}
    assert list(memories) == ["DRAM", "wbuf", "acc", "abuf"]  # outermost first
    dram = memories["DRAM"]
    # DRAM: 16 values of A read (128 b), 4 values of Z written (32 b); (128 + 32) / 52 b/cycle
    # over ports 4 + 8 = 12 b/cycle wide
    assert (dram["read_bits"], dram["write_bits"], dram["port_width_bits"]) == ("128", "32", "12")
    assert float(dram["bandwidth_bits_per_cycle"]) == pytest.approx(160 / 52, abs=1e-6)
    assert float(dram["bandwidth_used_pct"]) == pytest.approx(100 * 160 / 52 / 12, abs=1e-3)


def test_a_run_names_the_files_it_wrote_unless_quiet(tmp_path, capsys):
    # found by a new user: `run --html/--vcd/--plot` wrote its files without a word (only -v
    # named them), where sweep and rank print what they wrote
    assert main(["run", *FILES, "--csv", str(tmp_path), "--no-progress"]) == 0
    out, err = capsys.readouterr()
    written = sorted(line.removeprefix("cyclesim: wrote ") for line in err.splitlines())
    assert written == sorted(str(p) for p in tmp_path.iterdir()) and written
    assert "wrote" not in out  # stdout keeps the report alone


def test_verbose_logs_what_is_done_and_quiet_says_nothing(tmp_path, capsys):
    assert main(["-v", "run", *FILES, "--csv", str(tmp_path), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "cyclesim: replayed" in err and "compute_report.csv" in err
    assert main(["run", *FILES, "--csv", str(tmp_path), "-q"]) == 0
    assert capsys.readouterr().err == ""


def test_quiet_and_verbose_together_are_refused(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["run", *FILES, "-q", "-v"])
    assert exc.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "usage"),
    [
        (["chip", "--bogus", "a", "b", "c"], "cyclesim chip"),
        (["run", "--bogus", "a", "b", "c"], "cyclesim run"),
        (["check", "scalesim", "a", "b", "--bogus"], "cyclesim check scalesim"),
        (["--bogus", "run", "a", "b", "c"], "cyclesim"),  # before the command: the top level's
    ],
)
def test_an_unknown_option_gets_the_usage_of_its_command(args, usage, capsys):
    """`chip --bogus a b c` printed the top-level usage, not chip's."""
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: {usage} [-h]")
    assert err.endswith(f"{usage}: error: unrecognized arguments: --bogus\n")


def test_dram_and_l1_json_start_with_the_schema_version(tmp_path, capsys):
    """Every JSON document the CLI prints carries the version, not only run/check/explain/sweep."""
    trace = tmp_path / "dma.trace"
    trace.write_text("0x0 READ 0\n0x40 READ 1\n0x100000 WRITE 2\n")
    assert main(["dram", "DDR4_8Gb_x8_2400", str(trace), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert next(iter(doc)) == "schema_version" and doc["requests"] == 3
    ops = Path(__file__).parents[1] / "examples" / "l1_placement" / "deep_composite.yaml"
    assert main(["l1", str(ops), "--compare", "--json", "--no-timeline"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert next(iter(doc)) == "schema_version" and doc["schema_version"] == 1


def test_bandwidth_used_is_over_every_instance_of_a_memory(tmp_path):
    # tpu_like's acc holds one column of accumulators per array column: shared across rows, so
    # 32 instances, each with a 64-b read and a 64-b write port. The run reads and writes Z there
    # 2 x 1,073,741,824 bits in 1,179,854 cycles (the report's accesses): 1,820.1 b/cycle over
    # all 32 instances' 32 x 128 = 4,096 b/cycle is 44.4 % (over one instance's 128: 1,422 %,
    # the bug). wreg: one per PE, 32 x 32 = 1,024 instances of 8 + 8 b.
    root = Path(__file__).resolve().parents[1]
    gemm = root / "examples" / "tpu_gemm"
    files = [str(root / "hw_models" / "tpu_like.yaml"), *(str(gemm / f) for f in FILES_OF_A_CASE)]
    assert main(["run", *files, "--csv", str(tmp_path), "-q"]) == 0
    memories = {row["memory"]: row for row in read_csv(tmp_path / "memory_report.csv")}
    acc = memories["acc"]
    assert acc["instances"] == "32" and acc["port_width_bits"] == "128"
    assert float(acc["bandwidth_used_pct"]) == pytest.approx(
        100 * 2 * 1_073_741_824 / 1_179_854 / 4096, abs=1e-3
    )
    for row in memories.values():
        assert 0 <= float(row["bandwidth_used_pct"]) <= 100, row


def test_quiet_prints_no_report(capsys):
    # -q is "errors only": the 35-line report was printed all the same; --json, asked for by
    # name, still goes to stdout
    assert main(["run", *FILES, "-q"]) == 0
    assert capsys.readouterr() == ("", "")
    assert main(["-q", "run", *FILES, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cycles"] == 52


ROOT = Path(__file__).resolve().parents[1]
CHIP = [str(ROOT / "examples" / "multicore" / f) for f in ("chip_bus_2core.yaml", "workload.yaml", "layer_by_layer_2core.yaml")]  # fmt: skip
SCALESIM = ROOT / "examples" / "scalesim"
REPORTS = {  # every command with a report, and how it is run
    "chip": ["chip", *CHIP],
    "l1": ["l1", str(ROOT / "examples" / "l1_placement" / "softmax.yaml")],
    "dram": ["dram", "DDR4_8Gb_x8_2400", "TRACE"],
    "explain": ["explain", *FILES, "--no-verify"],
    "check scalesim": [
        "check",
        "scalesim",
        str(SCALESIM / "ws_8x16_calc.cfg"),
        str(SCALESIM / "gemm_small.csv"),
        "--no-peer",
    ],  # fmt: skip
}


@pytest.mark.parametrize("command", REPORTS)
def test_quiet_prints_no_report_in_any_command(command, tmp_path, monkeypatch, capsys):
    # found: -q quieted only `run`; chip, l1, dram, explain and check printed their reports
    monkeypatch.chdir(tmp_path)
    (tmp_path / "TRACE").write_text("0x0 READ 0\n0x40 WRITE 9\n")
    code = main(REPORTS[command])
    assert capsys.readouterr().out  # the report, without -q
    assert main([*REPORTS[command], "-q"]) == code
    assert capsys.readouterr() == ("", "")


def test_quiet_and_verbose_on_both_sides_of_the_command_are_refused(capsys):
    """`cyclesim -q run -v ...`: each flag alone is allowed on either side, and argparse refuses
    both on one side; split across the command they ran quiet, -v silently dropped."""
    with pytest.raises(SystemExit) as exc:
        main(["-q", "run", "-v", "a.yaml", "w.yaml", "m.yaml"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: cyclesim run") and err.endswith("contradict each other\n")
