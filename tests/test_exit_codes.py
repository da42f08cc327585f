"""The exit codes of `cyclesim`: 0 success, 1 a found failure, 2 bad input, 3 no progress, 4 out of memory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from replay_helpers import case_files
from test_deadlock import ARCH, WORKLOAD, mapping

from cyclesim import __version__
from cyclesim.cli import main

ROOT = Path(__file__).resolve().parents[1]
WORKED = case_files(ROOT / "tests/cases/worked/03_single_buffer")
L1_REPLAY = ROOT / "examples" / "l1_replay"


def test_a_run_exits_0(capsys):
    assert main(["run", *WORKED]) == 0
    assert "52" in capsys.readouterr().out  # the hand-derived 52 cycles of worked example 03


def test_an_l1_clash_exits_1_from_run_and_from_l1(capsys):
    files = [str(L1_REPLAY / f) for f in ("arch.yaml", "workload.yaml", "mapping_too_big.yaml")]
    assert main(["run", *files, "--no-progress"]) == 1
    clash = ROOT / "examples" / "l1_placement" / "clash_fragmentation.yaml"
    assert main(["l1", str(clash)]) == 1
    assert "Traceback" not in capsys.readouterr().err


def test_a_wrong_file_exits_2_naming_it(tmp_path, capsys):
    arch = tmp_path / "arch.yaml"
    arch.write_text(Path(WORKED[0]).read_text().replace("width_bits: 4,", "width_bits: -4,"))
    assert main(["run", str(arch), *WORKED[1:]]) == 2
    err = capsys.readouterr().err
    assert f"{arch}:15: field 'memories[0].ports[0].width_bits'" in err


def test_an_unwritable_output_exits_2_before_the_replay(tmp_path, capsys):
    blocked = tmp_path / "file"
    blocked.write_text("")
    assert main(["run", *WORKED, "--vcd", str(blocked / "run.vcd")]) == 2
    err = capsys.readouterr().err
    assert "--vcd" in err and "cannot be written" in err and err.count("\n") == 1


def test_a_deadlock_exits_3(tmp_path, monkeypatch, capsys):
    # the consumer-first tree of test_deadlock, with the loader's static order check off
    monkeypatch.setattr("cyclesim.spec.mapping._check_order", lambda mapping, workload: None)
    files = []
    for name, data in (("a", ARCH), ("w", WORKLOAD), ("m", mapping(["consumer", "producer"]))):
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(data))
        files.append(str(path))
    assert main(["run", *files, "--no-progress"]) == 3
    assert "cannot progress" in capsys.readouterr().err


def test_version_and_help_as_a_user_runs_them():
    run = [sys.executable, "-m", "cyclesim"]
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    version = subprocess.run([*run, "--version"], capture_output=True, text=True, env=env)
    # the version, then which DRAM timer and engine a replay uses (dram/native.py,
    # engine/native.py)
    lines = version.stdout.splitlines()
    assert version.returncode == 0 and lines[0] == f"cyclesim {__version__}"
    assert lines[1].startswith("DRAM timer: ") and lines[2].startswith("engine: ")
    assert lines[3].startswith("FST writer: ")
    assert lines[4].startswith("VCD and Perfetto JSON text: ") and len(lines) == 5
    helped = subprocess.run([*run, "--help"], capture_output=True, text=True, env=env).stdout
    assert "exit codes:" in helped and "3  the replay cannot progress" in helped


def test_an_output_that_fails_midway_leaves_no_other_output(tmp_path, capsys, monkeypatch):
    # the disk fills while the Perfetto trace is written, after the VCD and its .gtkw were:
    # the run exits 2 with one line, and takes the VCD and .gtkw with it (a half set of
    # outputs would look like a finished run); a file that was there before is left alone
    import cyclesim.views

    def disk_full(res, path, **kwargs):
        Path(path).write_text('{"traceEvents": [')  # what a writer leaves when cut off
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(cyclesim.views, "write_perfetto_files", disk_full)
    before = tmp_path / "notes.csv"  # .csv: an --events suffix (any other is refused up front)
    before.write_text("mine")
    vcd, trace = tmp_path / "run.vcd", tmp_path / "run.json"
    code = main(["run", *WORKED, "--vcd", str(vcd), "--perfetto", str(trace), "--events",
                 str(before)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2
    assert err == f"cyclesim: cannot write {trace}: No space left on device\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.csv"]
    assert before.read_text() == "mine"  # --events comes after --perfetto: never written


def test_a_plot_that_fails_takes_the_plots_before_it(tmp_path, capsys, monkeypatch):
    # the timeline (fourth of five plots) fails: breakdown, stalls and ports, written before
    # it, go too; the plot folder the run made stays (empty)
    import cyclesim.views.plots as plots

    def disk_full(act, path, *args, **kwargs):
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(plots, "plot_timeline", disk_full)
    code = main(
        ["run", *WORKED, "--plot", str(tmp_path / "plots"), "--vcd", str(tmp_path / "r.vcd")]
    )
    assert code == 2
    assert "No space left on device" in capsys.readouterr().err
    assert [p.name for p in tmp_path.rglob("*") if p.is_file()] == []


def test_a_csv_summary_that_cannot_be_written_takes_the_traces_with_it(tmp_path, capsys):
    # --csv is the last writer: compute_report.csv is already a folder (a user's mistake), so
    # the summaries fail after the VCD and its .gtkw were written; the run exits 2 with one
    # line and leaves no half set of outputs (the folder that was there stays)
    (tmp_path / "rep" / "compute_report.csv").mkdir(parents=True)
    vcd = tmp_path / "run.vcd"
    code = main(
        ["run", *WORKED, "--no-progress", "--vcd", str(vcd), "--csv", str(tmp_path / "rep")]
    )
    assert code == 2
    assert "compute_report.csv" in capsys.readouterr().err
    assert [p.name for p in tmp_path.rglob("*") if p.is_file()] == []


L1_OPS = str(
    Path(__file__).resolve().parents[1] / "examples" / "l1_placement" / "deep_composite.yaml"
)


@pytest.mark.parametrize(
    ("plot", "says"),
    [
        # matplotlib saved '--plot DIR' as DIR.png (here /tmp.png) and `l1` said "written to DIR"
        (".", "--plot . is a directory; a file path is expected"),
        # and '--plot map' as map.png, while `l1` said "written to map"
        ("map", "--plot map: the suffix chooses the format; use one of .png, .svg, .pdf"),
    ],
)
def test_l1_plot_is_an_image_path_or_refused(tmp_path, capsys, monkeypatch, plot, says):
    monkeypatch.chdir(tmp_path)
    assert main(["l1", L1_OPS, "--plot", plot]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err
    assert (
        list(tmp_path.iterdir()) == [] and not (tmp_path.parent / f"{tmp_path.name}.png").exists()
    )


def test_an_empty_l1_ops_file_says_it_is_empty(tmp_path, capsys):
    (tmp_path / "ops.yaml").write_text("")
    assert main(["l1", str(tmp_path / "ops.yaml")]) == 2
    assert (
        "ops.yaml: the ops file is empty; expected a mapping with `model:`"
        in capsys.readouterr().err
    )


def test_running_out_of_memory_is_one_line_exit_4_and_removes_begun_outputs(
    tmp_path, capsys, monkeypatch
):
    """A replay whose records do not fit: no traceback, what ran out and what to try, exit 4,
    and the output file it had begun is gone (the MemoryError is injected mid-run)."""
    import cyclesim.results.result_build as result

    events = tmp_path / "events.csv"

    def out_of_memory(raw):
        events.write_text("start,end\n0,")  # a writer that got this far
        raise MemoryError

    monkeypatch.setattr(result, "attribute", out_of_memory)
    assert main(["run", *WORKED, "--events", str(events)]) == 4
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "ran out of memory running run" in err and "--window" in err
    assert "--layer" not in err and "--workers" not in err  # options `run` does not have
    assert not events.exists()


def test_every_exit_code_is_in_help_and_in_docs():
    """`cyclesim --help` and docs/exit_codes.md list the same codes, 4 and 130/143 included."""
    import re

    from cyclesim.cli import EXIT_CODES, build_parser

    assert EXIT_CODES in build_parser().format_help()
    codes = set(re.findall(r"^\s+(\d+)(?:, (\d+))?\s", EXIT_CODES, re.M))
    listed = {c for pair in codes for c in pair if c}
    assert listed == {"0", "1", "2", "3", "4", "130", "143"}
    doc = (ROOT / "docs" / "exit_codes.md").read_text()
    assert {c for c in re.findall(r"^\| (\d+) \|", doc, re.M)} == listed
    # docs/cli.md had a table of its own without 130/143 or the missing peer: it links instead
    cli = (ROOT / "docs" / "cli.md").read_text()
    assert not re.findall(r"^\| (\d+) \|", cli, re.M) and "(exit_codes.md)" in cli
    assert all(code in cli for code in listed)


def test_the_out_of_memory_line_of_dram_suggests_only_what_dram_has(tmp_path, capsys, monkeypatch):
    """dram's line suggested --layer, --workers and a trace --window, options it lacks."""
    import cyclesim.dram.trace as trace

    def out_of_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(trace, "simulate_trace", out_of_memory)
    (tmp_path / "t.trc").write_text("0x0 READ 0\n")
    assert main(["dram", "DDR4_8Gb_x8_2400", str(tmp_path / "t.trc")]) == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ran out of memory running dram" in err
    assert "a shorter trace" in err
    assert not any(option in err for option in ("--layer", "--workers", "--window")), err
