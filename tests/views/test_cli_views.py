"""`cyclesim run --vcd --perfetto --plot --events --window --only`, the events table, the trace filter."""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd
import pytest
from replay_helpers import case_files
from view_cases import CASES

from cyclesim.cli import main
from cyclesim.engine import TraceFilter
from cyclesim.errors import TraceError
from cyclesim.views import parse_window
from cyclesim.views.tables import events, write_events


def files(case: str) -> list[str]:
    return case_files(CASES[case])


def test_run_writes_every_requested_view(tmp_path, capsys):
    out = tmp_path / "out"
    args = ["run", *files("dma_two_tensors"), "--vcd", str(out / "t.vcd"), "--perfetto", str(out / "t.json"),
            "--plot", str(out / "plots"), "--events", str(out / "e.csv"), "--no-progress"]  # fmt: skip
    out.mkdir()
    assert main(args) == 0
    assert "cycles" in capsys.readouterr().out
    for name in (
        "t.vcd",
        "t.gtkw",
        "t.json",
        "e.csv",
        "plots/breakdown.png",
        "plots/ports.png",
        "plots/timeline.png",
        "plots/stalls.png",
        "plots/occupancy.png",
    ):
        assert (out / name).stat().st_size > 0, name
    assert '[dumpfile] "t.vcd"' in (out / "t.gtkw").read_text()


def test_run_window_and_only_filter_the_trace(tmp_path):
    assert main(["run", *files("03_single_buffer"), "--events", str(tmp_path / "e.csv"), "--window", "10:34",
                 "--only", "abuf,PE"]) == 0  # fmt: skip
    df = pd.read_csv(tmp_path / "e.csv")
    assert set(df["resource"]) == {"A@abuf fill", "PE array"}
    assert df["end"].min() >= 10 and df["start"].max() < 34


@pytest.mark.parametrize(
    "text, expected", [("10:34", (10, 34)), (":50", (0, 50)), ("7:", (7, None))]
)
def test_window_syntax(text, expected):
    assert parse_window(text) == expected


@pytest.mark.parametrize("text", ["10", "a:b", "5:5", "9:3", "-1:4"])
def test_bad_windows_are_refused(text):
    with pytest.raises(argparse.ArgumentTypeError):
        parse_window(text)


def test_bad_window_on_the_command_line_is_one_message(capsys):
    with pytest.raises(SystemExit):
        main(["run", *files("03_single_buffer"), "--vcd", "x.vcd", "--window", "9:3"])
    assert "empty or negative" in capsys.readouterr().err


def test_events_table_is_long_with_typed_columns(traced, tmp_path):
    res = traced("03_single_buffer")
    df = write_events(res, tmp_path / "e.parquet")
    back = pd.read_parquet(tmp_path / "e.parquet")
    assert list(back.columns) == [
        "start",
        "end",
        "resource",
        "kind",
        "einsum",
        "tensor",
        "memory",
        "tile",
        "bits",
    ]
    assert back["start"].dtype == "int64" and back["bits"].dtype == "int64"
    assert len(df) == 4 + 4 + 1  # four fills of A, four PE segments, one write-back of Z
    assert (df[df["kind"] == "fill"]["bits"] == 32).all()
    with pytest.raises(TraceError, match="csv or .parquet"):
        write_events(res, tmp_path / "e.xlsx")


def test_trace_filter_keeps_the_window_and_counts_what_came_before(traced):
    res = traced("03_single_buffer", TraceFilter(10, 34, ("abuf",)))
    rec = res.raw.rec
    assert [t[:2] for t in rec.transfers] == [(12, 20), (24, 32)]
    assert rec.pe_segments == []
    assert rec.occupancy_before == {4: [1, 0]}  # tile 0 of A entered at 8, before the window
    assert all(10 <= t < 34 for t, _, _ in rec.occupancy)
    assert res.cycles == 52 and res.stall_cycles == 24  # filtering never changes the run


def test_only_the_ports_a_filter_names_or_uses_are_drawn(traced):
    # --only abuf on 03_single_buffer: A's fills move DRAM.dram_rd -> abuf.abuf_wr; abuf's
    # read port is named by its memory. wbuf, acc and DRAM's write port are neither named nor
    # used by a recorded transfer (the PE segments are filtered out), so no view draws them.
    res = traced("03_single_buffer", TraceFilter(10, 34, ("abuf",)))
    act = res.activity()
    assert sorted(act.ports) == ["DRAM.dram_rd", "abuf.abuf_rd", "abuf.abuf_wr"]
    assert set(act.pe_ports) == set(act.ports) == set(act.port_memory) == set(act.port_width)
    assert sorted(res.port_table()["port"]) == sorted(act.ports)


def test_trace_filter_refuses_an_empty_window():
    with pytest.raises(ValueError, match="empty or negative"):
        TraceFilter(5, 5)


def test_events_need_a_traced_run():
    from view_cases import load_case

    from cyclesim.analysis.simulate import replay

    with pytest.raises(TraceError):
        events(replay(*load_case("01_compute_bound"), progress=False))


def test_run_default_path_writes_fst_and_gzipped_perfetto(tmp_path, capsys):
    """As a user runs it: no --no-progress (the bar decides by itself), every compressed format."""
    import gzip
    import json

    from cyclesim.views.fst_native import fst_writer

    args = ["run", *files("03_single_buffer"), "--vcd", str(tmp_path / "t.vcd"),
            "--perfetto", str(tmp_path / "t.json.gz")]  # fmt: skip
    if fst_writer() is not None:
        args += ["--fst", str(tmp_path / "t.fst")]
    assert main(args) == 0
    doc = json.loads(gzip.decompress((tmp_path / "t.json.gz").read_bytes()))
    assert any(e.get("cat") == "stall" for e in doc["traceEvents"])
    if fst_writer() is not None:
        assert (tmp_path / "t.fst").read_bytes()[:1] == b"\x00"  # FST header block
        assert (tmp_path / "t.gtkw").exists()


def test_the_writers_show_a_progress_bar(traced, tmp_path, capsys):
    from cyclesim.views.perfetto_json import write_chrome_json
    from cyclesim.views.vcd import write_vcd

    res = traced("03_single_buffer")
    write_vcd(res, tmp_path / "t.vcd", progress=True)
    write_chrome_json(res, tmp_path / "t.json", progress=True)
    err = capsys.readouterr().err
    assert "VCD t.vcd" in err and "cycle" in err


def test_an_unknown_perfetto_suffix_is_refused_with_the_accepted_ones(tmp_path, capsys):
    """`--perfetto x.txt` wrote Chrome JSON to a .txt without a word: now the suffix must name a
    format Perfetto opens, and the one line lists them; nothing runs, nothing is written."""
    assert main(["run", *files("01_compute_bound"), "--perfetto", str(tmp_path / "x.txt"),
                 "--no-progress"]) == 2  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "x.txt" in err
    for suffix in (".json", ".json.gz", ".pftrace", ".pb"):
        assert suffix in err
    assert not (tmp_path / "x.txt").exists()


def test_the_timeline_legend_says_what_each_colour_is(traced, tmp_path, monkeypatch):
    # 03_single_buffer over its whole run: the PE array computes matvec and waits (bandwidth),
    # A's fills and Z's write-back cross the ports; a legend entry 'A' alone read like a port
    # or a memory, so a transfer's colour is labelled 'moving <tensor>'
    import cyclesim.views.plots as plots

    figures = []
    monkeypatch.setattr(plots, "_save", lambda fig, path: figures.append(fig))
    res = traced("03_single_buffer")
    plots.plot_timeline(res.activity(), tmp_path / "t.png", (0, res.cycles))
    (fig,) = figures
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "compute matvec" in labels and "PE array's use of a port" in labels
    assert {"moving A", "moving Z"} <= set(labels)
    assert not {"A", "B", "Z"} & set(labels)


def test_a_one_cycle_stall_is_a_visible_bar_on_the_log_scale_stall_plot(
    traced, tmp_path, monkeypatch
):
    """05's stalls: 24 spatial cycles and 4, 1, 1 of bandwidth and latency. The bars started at
    0 on a log axis opened at 0.8, so a 1-cycle bar was the sliver 0.8..1 (a tenth of a decade)
    beside a 10^5-cycle one. They start at half a cycle: the 1-cycle bar spans 0.5..1, a
    factor of 2, and at least 2% of the axis's width. Every bar is in its cause's colour."""
    import matplotlib.colors

    import cyclesim.views.plots as plots

    figures = []
    monkeypatch.setattr(plots, "_save", lambda fig, path: figures.append(fig))
    res = traced("05_narrow_innermost_port")
    plots.plot_stalls(res, tmp_path / "s.png")
    (fig,) = figures
    ax = fig.axes[0]
    bars = ax.patches[: len(res.stalls)]
    assert sorted(round(b.get_x() + b.get_width(), 6) for b in bars) == [1, 1, 4, 24]
    assert {b.get_x() for b in bars} == {plots.STALL_BASE} == {ax.get_xlim()[0]}
    fig.canvas.draw()
    axis_pixels = ax.get_window_extent().width
    for bar in bars:
        assert bar.get_window_extent().width >= 0.02 * axis_pixels
    causes = res.stalls.iloc[::-1]["cause"].head(len(bars))  # drawn largest on top
    for bar, cause in zip(bars, causes, strict=True):
        assert matplotlib.colors.to_hex(bar.get_facecolor()) == plots.CAUSE_COLORS[cause].lower()


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        # a name that matches nothing used to leave its resource out silently
        (
            ["--vcd", "t.vcd", "--only", "PE,abuff"],
            "--only 'abuff' names nothing in this run: did you mean 'abuf'?",
        ),
        (["--vcd", "t.vcd", "--only", "nothere"], "(known: A, A@DRAM, A@abuf, B"),
        # --window / --only without a trace to keep did nothing at all
        (["--window", "0:10"], "--window and --only choose what a trace keeps: give one of --vcd"),
        (["--window", "0:10"], "--plot, --events or --html with them"),  # --html was left out
        (["--only", "PE"], "--window and --only choose what a trace keeps"),
        # a file where a folder is wanted: was "cannot write ...: File exists" after the replay
        (["--plot", "arch.yaml"], "--plot arch.yaml is a file; a directory is expected"),
        (["--csv", "arch.yaml"], "--csv arch.yaml is a file; a directory is expected"),
        # refused before the replay, not after it
        (["--events", "t.txt"], "--events t.txt: the suffix chooses the format; use one of .csv"),
        # found by a new user: a waveform or a saved run under another format's suffix was
        # written without a word (--vcd a.fst wrote FST, --fst b.vcd FST bytes into a .vcd)
        (["--vcd", "a.fst"], "--vcd a.fst: this file's name must end in .vcd"),
        (["--fst", "b.vcd"], "--fst b.vcd: this file's name must end in .fst"),
        (["--save-run", "s.yaml"], "--save-run s.yaml: this file's name must end in .json"),
    ],
)
def test_trace_options_that_would_do_nothing_are_refused_before_the_run(
    tmp_path, capsys, monkeypatch, extra, says
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "arch.yaml").write_text("a file\n")
    assert main(["run", *files("03_single_buffer"), *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("cyclesim: ") and says in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["arch.yaml"]  # nothing written


def test_only_accepts_every_port_the_trace_shows(tmp_path):
    # the PE array's own ports (abuf.abuf_rd, acc.acc_wr) are traced resources too
    vcd = tmp_path / "t.vcd"
    assert (
        main(
            [
                "run",
                *files("03_single_buffer"),
                "--vcd",
                str(vcd),
                "--only",
                "abuf.abuf_rd,acc.acc_wr,matvec",
            ]
        )
        == 0
    )
    assert "abuf_rd" in vcd.read_text()


def test_progress_is_shown_while_the_activity_is_built_and_the_plots_drawn(tmp_path):
    # `run --vcd --plot` on the memory-size example showed nothing for ~50 of 90 seconds:
    # building the activity and drawing the plots had no bar (only the VCD writer had one)
    from terminal import on_a_terminal

    case = Path(__file__).resolve().parents[1] / "cases" / "worked" / "03_single_buffer"
    code, _, err = on_a_terminal(
        "run", *(str(case / f"{p}.yaml") for p in ("arch", "workload", "mapping")),
        "--vcd", str(tmp_path / "run.vcd"), "--plot", str(tmp_path / "plots"),
    )  # fmt: skip
    assert code == 0
    for bar in ("building the activity", "VCD run.vcd", "plots"):
        assert bar in err, (bar, err)
    assert "7/7" in err and "5/5" in err  # every stage of the activity, every plot


def test_each_waveform_gets_its_own_save_file(tmp_path):
    # `--vcd X.vcd --fst X.fst` wrote one X.gtkw, the FST's overwriting the VCD's: each save
    # file names its own dump file, so the two need two names
    pytest.importorskip("pylibfst", reason="FST is written with pylibfst (or vcd2fst)")
    vcd, fst = tmp_path / "X.vcd", tmp_path / "X.fst"
    assert main(["run", *files("03_single_buffer"), "--vcd", str(vcd), "--fst", str(fst),
                 "--no-progress", "-q"]) == 0  # fmt: skip
    assert '[dumpfile] "X.vcd"' in (tmp_path / "X.gtkw").read_text()
    assert '[dumpfile] "X.fst"' in (tmp_path / "X.fst.gtkw").read_text()


def test_the_save_file_names_every_port_and_tensor_and_opens_on_the_plots_window(tmp_path):
    # GTKWave showed each port's signals as `busy`, `tensor`, `bits` under the memory's group,
    # alike for every port, and opened on cycles 0..2. Each trace now shows its path below
    # `cyclesim` (GTKWave shows a dotted name by its last part, so spaces) and the file opens
    # where the timeline plot looks. Case 03 is one stretch: its window is the whole run.
    from cyclesim.views.gtkw import gtkw_zoom

    vcd = tmp_path / "t.vcd"
    assert main(["run", *files("03_single_buffer"), "--vcd", str(vcd), "-q"]) == 0
    text = (tmp_path / "t.gtkw").read_text()
    assert "+{DRAM dram_rd busy} cyclesim.DRAM.dram_rd.busy" in text
    assert "+{abuf A tiles} cyclesim.abuf.A.tiles" in text
    traces = [line for line in text.splitlines() if "cyclesim." in line and "} " in line]
    assert len({line.split("} ")[0] for line in traces}) == len(traces)  # no two alike
    assert "[timestart] 0" in text and f"*{gtkw_zoom(52):.6f} " in text


def test_with_vcd2fst_the_fst_is_converted_from_the_vcd_already_written(tmp_path, monkeypatch):
    # without pylibfst an FST is a VCD converted by vcd2fst; `--vcd --fst` wrote the same VCD
    # twice (once as the file asked for, once to a temporary file): now once, and the FST shows
    # the signals of a run asking for the FST alone (its bytes hold vcd2fst's clock time)
    import shutil

    import cyclesim.views.fst as fst_module
    import cyclesim.views.vcd as vcd_module

    if shutil.which("vcd2fst") is None:
        pytest.skip("vcd2fst (from the Debian package gtkwave) is not installed")
    monkeypatch.setattr(fst_module, "fst_writer", lambda: "vcd2fst")
    vcds: list[str] = []
    original = vcd_module.write_vcd

    def counted(res, path, **kwargs):
        vcds.append(Path(path).name)
        return original(res, path, **kwargs)

    monkeypatch.setattr(vcd_module, "write_vcd", counted)
    monkeypatch.setattr(fst_module, "write_vcd", counted)
    both, alone = tmp_path / "both", tmp_path / "alone"
    assert main(["run", *files("03_single_buffer"), "--vcd", str(both / "X.vcd"),
                 "--fst", str(both / "X.fst"), "--no-progress", "-q"]) == 0  # fmt: skip
    assert vcds == ["X.vcd"]
    assert main(["run", *files("03_single_buffer"), "--fst", str(alone / "X.fst"),
                 "--no-progress", "-q"]) == 0  # fmt: skip
    assert vcds == ["X.vcd", "trace.vcd"]  # alone: the temporary VCD
    assert (both / "X.fst").read_bytes()[:1] == b"\x00"  # FST header block

    def signals(gtkw: Path) -> list[str]:  # the save file less the line naming itself
        return [line for line in gtkw.read_text().splitlines() if ".gtkw" not in line]

    assert signals(both / "X.fst.gtkw") == signals(alone / "X.gtkw")
