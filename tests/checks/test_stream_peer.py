"""Against the real Stream (stream-dse 2.1.1 in .venv-stream): the examples as their docs give
them. Stream's runs are cached on disk by content hash, so after the first run each case costs
well under a second; the per-node checks replay each distinct tile once.

Without a Stream environment these tests skip, saying why."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pytest

from cyclesim.errors import PeerUnavailable

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "stream"
DUAL = str(EXAMPLES / "eyeriss_like_dual_core.yaml")
QUAD = str(EXAMPLES / "tpu_like_quad_core.yaml")
ONNX = str(EXAMPLES / "two_conv.onnx")


def _run(accelerator: str, mapping: str):
    from cyclesim.checks.stream.peer import run_stream

    try:
        return run_stream(accelerator, ONNX, str(EXAMPLES / mapping))
    except PeerUnavailable as error:
        pytest.skip(f"Stream unavailable: {error}")


@pytest.mark.peer
def test_stream_reproduces_the_reference_runs():
    # stream.md 5.1: P3 (layer by layer, K split 2) 72428 = 17237 + 55191; P4 (fused rows) 73006
    lbl = _run(DUAL, "dual_layer_by_layer.yaml")
    assert lbl.total_cycles == 72428 and [g.total for g in lbl.groups] == [17237, 55191]
    fused = _run(DUAL, "dual_fused_rows.yaml")
    (g,) = fused.groups
    assert (fused.total_cycles, g.iterations, g.per_iteration, g.overlap, g.fill) == (
        73006, 4, 20233, 2867, 675,
    )  # fmt: skip
    assert g.fill_warmup == 531  # the fill's part Stream does not report, read from its model


@pytest.mark.peer
@pytest.mark.parametrize(
    ("accelerator", "mapping"),
    [(DUAL, f"dual_{m}.yaml") for m in ("layer_by_layer", "fused_rows", "pipeline")]
    + [(QUAD, f"quad_{m}.yaml") for m in ("layer_by_layer", "fused_rows", "pipeline")],
    ids=lambda v: Path(v).stem,
)
def test_stream_arithmetic_holds_on_every_example(accelerator, mapping):
    from cyclesim.checks.stream.arithmetic import compare

    run = _run(accelerator, mapping)
    assert sum(g.total for g in run.groups) == run.total_cycles
    for row in compare(run, ()):
        if row.section in ("total", "group") and row.item != "fill":
            assert row.difference in (None, 0), row
        if row.difference not in (None, 0):
            assert row.mechanism, row


@pytest.mark.peer
def test_per_node_zigzag_equals_streams_cost():
    """Every tile Stream costed, evaluated by zigzag-dse at the mapping Stream's search chose,
    costs what Stream charged (latency_total2 - drain): the per-node difference is the replay's."""
    from cyclesim.checks.stream.pernode import check_nodes
    from cyclesim.checks.stream.read import read_accelerator

    run = _run(DUAL, "dual_fused_rows.yaml")
    rows = check_nodes(run, read_accelerator(DUAL))
    assert {(r.node, r.core) for r in rows} == {(n, c) for n in ("Conv1", "Conv2") for c in (0, 1)}
    for r in rows:
        assert r.zigzag_cycles == r.stream_cycles == r.model_cycles, r
        assert r.replay_cycles is not None and r.replay_cycles > r.stream_cycles
        assert any(text.startswith("stall:") for text in r.explanations)


@pytest.mark.peer
def test_cli_default_path_writes_table_and_plot(tmp_path, monkeypatch, capsys):
    from cyclesim.cli import main

    _run(DUAL, "dual_fused_rows.yaml")  # skips without Stream
    monkeypatch.chdir(tmp_path)
    argv = ["check", "stream", "--accelerator", DUAL, "--workload", ONNX]
    argv += ["--mapping", str(EXAMPLES / "dual_fused_rows.yaml")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "73,006" in out and "a halo charged at its share of the route" in out
    written = tmp_path / "out" / "stream" / "two_conv-eyeriss_like_dual_core-dual_fused_rows"
    assert written.with_suffix(".csv").stat().st_size > 0
    assert written.with_suffix(".png").stat().st_size > 0
    assert main([*argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert "schema_version" in data and data["stream"]["total_cycles"] == 73006
    # the ladder: Stream's own slot terms placed as barriers, then one assumption per rung
    assert "ladder: 79,278 (Stream's slot terms + its fill)" in out
    rungs = [r["rung"] for r in data["ladder"]]
    assert rungs[0] == "stream_terms" and rungs[-1] == "dependency"
    assert data["ladder"][-1]["cycles"] == data["replay"]["dependency_driven_cycles"]


def test_a_stream_run_says_it_runs_and_still_runs(tmp_path, monkeypatch, caplog):
    # Stream takes 20-70 s uncached: a line says it started (in its own process, cached
    # after), another every HEARTBEAT_SECONDS while it runs, as SCALE-Sim's do; the runner is
    # started through the shared run_peer, so an interrupt ends it and its children.
    # Here a stand-in runner sleeps 0.5 s and prints no JSON: Stream is unavailable.
    from cyclesim.checks.stream import peer

    runner = tmp_path / "runner.py"
    runner.write_text("import time\ntime.sleep(0.5)\nprint('no json')\n")
    monkeypatch.setattr(peer, "RUNNER", runner)
    monkeypatch.setattr(peer, "HEARTBEAT_SECONDS", 0.1)
    monkeypatch.setattr(peer, "stream_python", lambda: Path(sys.executable))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with caplog.at_level(logging.WARNING, logger="cyclesim"):
        with pytest.raises(PeerUnavailable, match="printed no JSON"):
            peer.run_stream(EXAMPLES / "eyeriss_like_dual_core.yaml", ONNX, use_cache=False)
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0].startswith("running Stream 2.1.1 on two_conv.onnx"), lines
    assert any("Stream still running" in line for line in lines[1:]), lines


@pytest.mark.peer
def test_cli_outputs_are_whole_or_not_at_all(tmp_path, monkeypatch, capsys):
    # the table and the plot are one set of outputs: a plot that cannot be written (a full
    # disk) leaves neither it nor the table, and says so in one line, exit 2; an output path
    # error before the run carries the command's prefix like every other error of it
    import errno

    import matplotlib.figure

    from cyclesim.cli import main

    _run(DUAL, "dual_fused_rows.yaml")  # skips without Stream
    monkeypatch.chdir(tmp_path)
    argv = ["check", "stream", "--accelerator", DUAL, "--workload", ONNX]
    argv += ["--mapping", str(EXAMPLES / "dual_fused_rows.yaml"), "--table", "t/table.csv"]

    def full(self, path, *args, **kwargs):
        open(path, "wb").write(b"\x89PNG half")  # a part written, then the disk is full
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", full)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "No space left on device" in err and "table.png" in err, err
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) in ([], ["t"])
    assert main([*argv, "--plot", "p.gif"]) == 2
    assert capsys.readouterr().err.startswith("cyclesim check stream: --plot p.gif")


def test_without_onnx_the_message_points_to_make_peers(tmp_path, monkeypatch, capsys):
    # found: "needs the onnx package" and nothing on how to get it
    import sys

    from cyclesim.cli import main

    monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx raises ImportError
    monkeypatch.chdir(tmp_path)
    argv = ["check", "stream", "--accelerator", DUAL, "--workload", ONNX,
            "--mapping", str(EXAMPLES / "dual_fused_rows.yaml")]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs the onnx package: `make peers` installs it" in err, err
