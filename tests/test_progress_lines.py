"""Off a terminal (a log file, CI) long runs say how far and how long, a line every few seconds;
the lines change nothing the run computes. The interval is set to 0 here so every look logs."""

from __future__ import annotations

from pathlib import Path

from cyclesim.cli import main

ROOT = Path(__file__).resolve().parents[1]
TPU = [str(ROOT / "hw_models/tpu_like.yaml"),
       *(str(ROOT / "examples/tpu_gemm" / f) for f in ("workload.yaml", "mapping.yaml"))]  # fmt: skip


def test_a_long_replay_logs_its_progress_when_stderr_is_not_a_terminal(monkeypatch, capsys):
    import cyclesim.engine.loop as loop

    monkeypatch.setattr(loop, "LOG_SECONDS", 0.0)
    monkeypatch.setattr(loop, "STEPS_PER_LOOK", 64)  # fast-forward leaves few events to step
    assert main(["run", *TPU, "--json"]) == 0
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert lines and all(line.startswith("cyclesim: replay: ") for line in lines), err
    assert "segments" in lines[-1] and " after " in lines[-1]
    monkeypatch.setattr(loop, "LOG_SECONDS", 1e9)  # the same run, silent: the same numbers
    assert main(["run", *TPU, "--json"]) == 0
    quiet_out, quiet_err = capsys.readouterr()
    assert quiet_err == ""
    assert _without_wall_time(quiet_out) == _without_wall_time(out)
    assert main(["run", *TPU, "--json", "-q"]) == 0 and capsys.readouterr().err == ""


def _without_wall_time(text: str) -> str:
    import json

    data = json.loads(text)
    data.pop("wall_seconds", None)
    return json.dumps(data, sort_keys=True)


def test_dram_logs_its_progress_when_stderr_is_not_a_terminal(tmp_path, monkeypatch, capsys):
    import cyclesim.dram.trace as trace

    monkeypatch.setattr(trace, "PROGRESS_SECONDS", 0.0)
    lines = [f"0x{i * 4096:x} {'WRITE' if i % 3 else 'READ'} {i * 7}" for i in range(20000)]
    (tmp_path / "t.trc").write_text("\n".join(lines) + "\n")
    assert main(["dram", "DDR4_8Gb_x8_2400", str(tmp_path / "t.trc"), "--json"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err and all(line.startswith("cyclesim: dram: ") for line in err)
    assert "of 20,000 requests in, cycle " in err[-1] and " after " in err[-1]


def test_explain_logs_its_remedy_replays_when_stderr_is_not_a_terminal(monkeypatch, capsys):
    # found: `explain` printed nothing for ~20 s in a log while `run` said how far every 5 s
    import cyclesim.analysis.parallel as parallel
    import cyclesim.engine.loop as loop

    monkeypatch.setattr(loop, "LOG_SECONDS", 1e9)  # the replay's own lines: not these
    assert main(["explain", *TPU, "--json", "--workers", "2"]) == 0
    silent_out, silent_err = capsys.readouterr()
    assert silent_err == ""
    monkeypatch.setattr(loop, "LOG_SECONDS", 0.0)
    monkeypatch.setattr(parallel, "HEARTBEAT_SECONDS", 0.01, raising=False)  # new here
    assert main(["explain", *TPU, "--json", "--workers", "2"]) == 0
    out, err = capsys.readouterr()
    remedies = [line for line in err.splitlines() if line.startswith("cyclesim: remedies: ")]
    assert remedies and " replays done after " in remedies[-1], err
    assert _without_wall_time(out) == _without_wall_time(silent_out)  # the lines change nothing
    assert main(["explain", *TPU, "--json", "--workers", "2", "-q"]) == 0
    assert capsys.readouterr().err == ""
