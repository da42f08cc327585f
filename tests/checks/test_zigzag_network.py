"""`cyclesim check zigzag` on a whole workload: every layer, a table, a plot, ZigZag's layer names."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from terminal import on_a_terminal

from cyclesim.checks.zigzag import cases as zc
from cyclesim.cli import main
from cyclesim.errors import PeerUnavailable


def _peer() -> None:
    from cyclesim.checks.zigzag import peer

    try:
        peer.zigzag_version()
    except PeerUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def network(tmp_path_factory):
    """Three small GEMMs on the 4x4 Eyeriss-like array; the first two without a name, as ZigZag
    allows (it calls them Layer{id})."""
    layers = zc.gemm_workload(8, 8, 8) + zc.gemm_workload(16, 8, 4) + zc.gemm_workload(4, 12, 8)
    for layer_id, entry in zip((30, 31, 32), layers, strict=True):
        entry["id"] = layer_id
        entry["operand_source"] = {"I": layer_id, "W": layer_id}
    del layers[0]["name"], layers[1]["name"]
    layers[2]["name"] = "classifier"
    return zc.write_case(
        tmp_path_factory.mktemp("net"),
        "net",
        zc.eyeriss_accelerator(zc.SMALL_SRAM_BITS),
        layers,
        zc.spatial_mapping(),
    )


@pytest.fixture(scope="module")
def unmappable(tmp_path_factory):
    """A small GEMM, and one zigzag-dse has no mapping for: B = K = C = 20,000 at 32 bits puts
    20,000^2 * 32 = 1.28e10 bits in each operand, more than the 1e10-bit DRAM, so no loop
    ordering fits the hierarchy (its NoValidLoopOrderingFoundException, found at once)."""
    layers = zc.gemm_workload(8, 8, 8) + zc.gemm_workload(20_000, 20_000, 20_000)
    for layer_id, (entry, name) in enumerate(zip(layers, ("small", "huge"), strict=True)):
        entry.update(id=layer_id, name=name, operand_source={"I": layer_id, "W": layer_id})
    return zc.write_case(
        tmp_path_factory.mktemp("unmappable"),
        "net",
        zc.eyeriss_accelerator(zc.SMALL_SRAM_BITS),
        layers,
        zc.spatial_mapping(),
    )


def _args(files, *extra: str) -> list[str]:
    return ["check", "zigzag", "--accelerator", files.accelerator, "--workload", files.workload,
            "--mapping", files.mapping, *extra]  # fmt: skip


@pytest.mark.peer
def test_whole_network_prints_every_layer_and_writes_table_and_plot(network, tmp_path, capsys):
    _peer()
    table, plot = tmp_path / "layers.csv", tmp_path / "layers.png"
    # the CLI's default path: worker processes, progress bar only on a terminal
    assert main(_args(network, "--table", str(table), "--plot", str(plot))) == 0
    out = capsys.readouterr().out
    df = pd.read_csv(table)
    assert list(df["layer"]) == ["Layer30", "Layer31", "classifier"]
    assert (df["status"] == "ok").all()
    assert df["model_equals_zigzag"].all()
    # every latency is at least its ideal compute (8*8*8 / 16 PEs = 32 cycles for Layer30)
    assert (df["replay_cycles"] >= df["replay_ideal"]).all()
    assert df.loc[0, "replay_ideal"] == 32
    assert "3 of 3 layers replayed" in out
    assert f"replay {df['replay_cycles'].sum():,} cycles" in out
    assert plot.stat().st_size > 10_000


@pytest.mark.peer
def test_parquet_table_and_progress_bar(network, tmp_path, capsys):
    _peer()
    from cyclesim.checks.zigzag.network import check_network, write_table

    df = check_network(
        network.accelerator, network.workload, network.mapping, workers=1, progress=True
    )
    assert "layers" in capsys.readouterr().err  # tqdm's bar, labelled
    write_table(df, tmp_path / "t.parquet")
    assert list(pd.read_parquet(tmp_path / "t.parquet")["layer"]) == list(df["layer"])


@pytest.mark.peer
def test_without_a_terminal_each_finished_layer_is_one_line_on_stderr(network, tmp_path, capsys):
    """The CLI's default path where no bar can be drawn (pytest's capture, a CI log, `| tee`):
    one line per layer as it finishes, its numbers those of the table; stdout keeps the table."""
    _peer()
    table = tmp_path / "layers.csv"
    assert main(_args(network, "--table", str(table), "--plot", str(tmp_path / "p.png"))) == 0
    captured = capsys.readouterr()
    lines = sorted(captured.err.splitlines())
    assert len(lines) == 3 and "%|" not in captured.err  # no bar
    df = pd.read_csv(table)
    for line, (i, row) in zip(lines, df.iterrows(), strict=True):
        head = f"layer {i + 1}/3 {row['layer']}: replay {row['replay_cycles']:,} vs ZigZag "
        assert line.startswith(f"{head}{row['zigzag_cycles']:,} ("), line
        assert line.endswith(" of 3 done)") and " s, " in line, line
    assert {line.rsplit("(", 1)[1].split(" s, ")[1] for line in lines} == {
        f"{n} of 3 done)" for n in (1, 2, 3)
    }
    assert "layer 1/3" not in captured.out
    # --no-progress (or -q) silences them; -v asks for them
    assert main(_args(network, "--table", str(table), "--plot", str(tmp_path / "p.png"), "--no-progress")) == 0  # fmt: skip
    assert capsys.readouterr().err == ""


@pytest.mark.peer
@pytest.mark.parametrize("verbose", [False, True])
def test_on_a_terminal_the_bar_stays_and_lines_come_only_with_verbose(network, tmp_path, verbose):
    _peer()
    args = _args(network, "--table", str(tmp_path / "t.csv"), "--plot", str(tmp_path / "p.png"))
    code, _, err = on_a_terminal(*args, *(["-v"] if verbose else []))
    assert code == 0, err
    assert "layers:" in err and "%|" in err  # tqdm's bar, as before
    lines = [part for part in err.replace("\r", "\n").splitlines() if part.startswith("layer ")]
    assert len(lines) == (3 if verbose else 0), err


@pytest.mark.peer
def test_a_layer_zigzag_dse_cannot_map_says_so_in_table_text_json_and_plot(unmappable, tmp_path, capsys):  # fmt: skip
    """zigzag-dse's own refusal used to read '(refused)', as if cyclesim had refused it."""
    import matplotlib

    from cyclesim.checks.zigzag.network import totals

    _peer()
    table, plot = tmp_path / "layers.csv", tmp_path / "layers.svg"
    with matplotlib.rc_context({"svg.fonttype": "none"}):  # the labels as text, to read back
        assert main(_args(unmappable, "--table", str(table), "--plot", str(plot))) == 0
    captured = capsys.readouterr()
    df = pd.read_csv(table)
    assert list(df["status"]) == ["ok", "no ZigZag mapping"]
    # the reason, one line: zigzag-dse's exception and what it says, without its file list
    reason = df.loc[1, "error"]
    assert reason.startswith("ZigZagPeerError: zigzag-dse finds no mapping (NoValidLoopOrder")
    assert "\n" not in reason and "--no-peer" not in reason and "refused" not in reason
    assert "1 of 2 layers replayed (1 with no ZigZag mapping)" in captured.out
    assert "refused" not in captured.out
    assert sorted(captured.err.splitlines())[1].startswith("layer 2/2 huge: no ZigZag mapping (")
    t = totals(df)  # `refused` keeps counting every layer a reader refused; zigzag-dse's part
    assert (t["refused"], t["no_zigzag_mapping"], t["replayed"]) == (1, 1, 1)
    svg = plot.read_text()
    assert "huge (no ZigZag mapping)" in svg and "(refused)" not in svg
    assert "(1 with no ZigZag mapping)" in svg  # the title


def test_each_kind_of_layer_not_checked_has_its_own_status():
    """zigzag-dse finding no mapping (or not running), cyclesim's reader refusing, and a bug."""
    from cyclesim.analysis.parallel import TaskOutcome
    from cyclesim.checks.zigzag.network import LayerTask, _row

    task = LayerTask(0, "conv1", "a.yaml", "w.onnx", "m.yaml", use_peer=True)
    for error, status in (
        ("ZigZagPeerError: zigzag-dse finds no mapping (NoValidLoopOrderingFound...)", "no ZigZag mapping"),
        ("PeerUnavailable: zigzag-dse is not importable", "no ZigZag mapping"),
        ("SpecError: a.yaml: field memories.x: IMC arrays are not modelled", "refused"),
        ("KeyError: 'D3' (at to_spec.py:12)", "failed"),
    ):  # fmt: skip
        assert _row(task, TaskOutcome(0, error=error))["status"] == status, error


@pytest.mark.peer
def test_layer_option_picks_an_unnamed_layer_by_zigzags_name(network, capsys):
    _peer()
    assert main(_args(network, "--layer", "Layer31")) == 0
    out = capsys.readouterr().out
    # one layer: the term-by-term report, 16*8*4 / 16 PEs = 32 ideal cycles
    assert out.splitlines()[0].split()[:3] == ["term", "replay", "model"]
    assert "ideal compute" in out and "32" in out


@pytest.mark.peer
def test_whole_network_json_starts_with_the_schema_version(network, tmp_path, capsys):
    _peer()
    extra = ["--json", "--table", str(tmp_path / "t.csv"), "--plot", str(tmp_path / "p.png")]
    assert main(_args(network, *extra, "--no-progress")) == 0
    doc = json.loads(capsys.readouterr().out)
    assert next(iter(doc)) == "schema_version" and doc["schema_version"] == 1
    assert [row["layer"] for row in doc["layers"]] == ["Layer30", "Layer31", "classifier"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--layer", "Layer99"), "no layer named 'Layer99'"),
        (("--table", "t.txt"), "use a .csv or .parquet file name"),
        (("--plot", "p.gif"), "use one of .png, .svg, .pdf"),
        (("--workers", "0"), "--workers must be at least 1"),
    ],
)
def test_bad_options_exit_2_with_one_line(network, capsys, extra, message):
    assert main(_args(network, *extra)) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_an_unwritable_table_is_refused_before_any_layer_runs(network, tmp_path, capsys):
    # cli.check_outputs: the folder of --table is a file, so nothing could be written there
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(_args(network, "--table", str(blocker / "t.csv"))) == 2
    err = capsys.readouterr().err
    assert "--table" in err and "cannot be written" in err


def test_a_file_that_is_not_onnx_is_refused_naming_it(network, tmp_path, capsys):
    _peer()
    fake = tmp_path / "model.onnx"
    fake.write_text("not a protobuf")
    args = ["check", "zigzag", "--accelerator", network.accelerator, "--workload", str(fake),
            "--mapping", network.mapping]  # fmt: skip
    assert main(args) == 2
    err = capsys.readouterr().err
    assert str(fake) in err and "ONNX parser cannot read it" in err


def test_a_layer_not_replayed_says_why_in_full_below_the_table():
    """The reason used to be cut to 70 characters inside the 'largest stall' column."""
    from cyclesim.checks.zigzag.network import format_network

    reason = "SpecError: <chosen by zigzag-dse>: the D1 unrolling cannot be placed: " + "x" * 80
    df = pd.DataFrame(
        {
            "layer": ["Op12", "Op16"],
            "status": ["ok", "not replayed"],
            "replay_cycles": [204098, None],
            "model_cycles": [69122, 4719298],
            "zigzag_cycles": [69122, 4719298],
            "model_equals_zigzag": [True, True],
            "stall_bandwidth": [76224, None],
            "error": [None, reason],
        }
    )
    text = format_network(df)
    assert "bandwidth 76,224" in text and "(why: below)" in text
    # cycles read as the totals below the table do: with thousands separators, '-' when absent
    assert "204,098" in text and "4,719,298" in text
    assert text.splitlines()[2].split()[:3] == ["Op16", "not", "replayed"]
    assert text.splitlines()[2].split()[3] == "-"
    assert f"\nOp16: {reason}\n" in text


def test_the_table_names_the_phase_where_most_of_the_gap_lies():
    """Numbers of resnet18's /layer2/layer2.0/downsample/downsample.0/Conv on tpu_like: replay
    onload 7,297 vs 6,272 (+1,025), compute 6,272 + 6,270 vs 6,272 + 62 (+6,208), offload
    12,547 vs 6,273 (+6,274): the offload. ZigZag's ideal (MACs / PEs) and stall split the
    compute differently from the replay's, so they are compared as one phase; a layer that
    was not replayed has no gap."""
    from cyclesim.checks.zigzag.network import format_network

    row = {"layer": "ds", "status": "ok", "replay_cycles": 32386, "model_cycles": 18879,
           "zigzag_cycles": 18879, "model_equals_zigzag": True, "stall_bandwidth": 18817,
           "replay_onload": 7297, "replay_ideal": 6272, "replay_stall": 6270,
           "replay_offload": 12547, "zigzag_onload": 6272, "zigzag_ideal": 6272,
           "zigzag_stall": 62, "zigzag_offload": 6273, "error": None}  # fmt: skip
    # a layer whose compute is faster in the replay (ZigZag's ideal counts idle PEs as busy)
    faster = dict(row, layer="fc", replay_stall=0, zigzag_ideal=5000, zigzag_stall=8000,
                  replay_offload=6273, replay_onload=6300)  # fmt: skip
    failed = {"layer": "x", "status": "failed", "error": "ValueError: boom"}
    text = format_network(pd.DataFrame([row, faster, failed]))
    lines = {line.split()[0]: line for line in text.splitlines() if line.split()}
    assert lines["ds"].endswith("offload +6,274")
    # compute 6,272 + 0 - (5,000 + 8,000) = -6,728; onload +28, offload 0: the largest is signed
    assert lines["fc"].endswith("compute -6,728")
    assert "most of the gap: the phase" in text and "\nx: ValueError: boom\n" in text


@pytest.mark.parametrize(("suffix", "magic"), [(".png", b"\x89PNG"), (".svg", b"<?xml"),
                                               (".pdf", b"%PDF")])  # fmt: skip
def test_the_plot_is_written_in_the_format_its_suffix_names(tmp_path, suffix, magic):
    """--plot takes .png, .svg or .pdf as every other plot option does (it used to refuse all
    but .png), and the same table gives the same bytes (no date or version stamped in)."""
    from cyclesim.checks.zigzag.network_plot import plot_network

    df = pd.DataFrame({"layer": ["/conv1/Conv", "/fc/Gemm"], "status": ["ok", "ok"],
                       "replay_cycles": [1400, 660], "model_cycles": [1250, 640],
                       "zigzag_cycles": [1250, 640], "stall_bandwidth": [119, 65]})  # fmt: skip
    first, second = tmp_path / f"a{suffix}", tmp_path / f"b{suffix}"
    plot_network(df, first, "net on arch")
    plot_network(df, second, "net on arch")
    assert first.read_bytes().startswith(magic)
    assert first.read_bytes() == second.read_bytes()


@pytest.mark.peer
def test_the_plot_is_the_same_with_zigzag_dse_in_this_process(network, tmp_path):
    """`--workers 1` runs zigzag-dse in cyclesim's own process, and importing it sets
    matplotlib's rcParams (axes labels at 20 pt, ticks at 12): the plot's y labels outgrew its
    panels. With worker processes they keep matplotlib's defaults. The same layers give the
    same plot either way, byte for byte (each a fresh `cyclesim`, as a user runs it)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    _peer()
    root = str(Path(__file__).resolve().parents[2])
    plots = {}
    for workers in ("1", "2"):
        plot = tmp_path / f"w{workers}.png"
        table = ["--table", str(tmp_path / f"w{workers}.csv"), "--plot", str(plot)]
        done = subprocess.run(
            [sys.executable, "-m", "cyclesim", *_args(network, *table, "--workers", workers)],
            env=dict(os.environ, PYTHONPATH=root),
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        plots[workers] = plot.read_bytes()
    assert plots["1"] == plots["2"]
