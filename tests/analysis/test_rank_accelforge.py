"""`cyclesim rank accelforge`: AccelForge's order of its mapper's Pareto set, the replay's winner,
bad input, and the whole flow against the real accelforge (marked peer)."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

from cyclesim.analysis.rank_accelforge import (
    POLICIES,
    CandidateReplay,
    _explain_tasks,
    peer_order,
)
from cyclesim.cli import main
from cyclesim.errors import PeerUnavailable

SPEC = Path(__file__).resolve().parents[2] / "examples" / "rank" / "accelforge_matmul8.yaml"


def _candidate(order: int, latency: float, energy: float) -> dict:
    return {"order": order, "latency": latency, "energy": energy, "mapping": f"m{order}"}


def test_accelforge_order_is_latency_in_cycles_then_energy_then_the_mappers_order():
    # a 1 GHz clock: AccelForge gives seconds, 2e-6 s = 2000 cycles, 1e-6 s = 1000 cycles.
    # 3 and 1 tie at 1000 cycles: the lower energy (1 with 5.0) first; 0 and 2 tie in both,
    # so the mapper's order decides: 0 before 2.
    found = [
        _candidate(0, 2e-6, 7.0),
        _candidate(1, 1e-6, 5.0),
        _candidate(2, 2e-6, 7.0),
        _candidate(3, 1e-6, 9.0),
    ]
    ordered = peer_order(found, 1e9)
    assert [c["order"] for c in ordered] == [1, 3, 0, 2]
    assert [c["latency"] for c in ordered] == pytest.approx([1000, 1000, 2000, 2000])
    # without a clock, latencies are cycles already
    assert [c["latency"] for c in peer_order([_candidate(0, 512, 1)], None)] == [512]


def test_the_winner_is_the_fewest_cycles_and_accelforges_better_rank_among_equals():
    # AccelForge's order 1, 3, 0, 2 (pick 1). The replay: 1 -> 900, 3 -> 700, 0 -> 700,
    # 2 -> 650 but not replayed by the timed run (no cycles). Fewest replayed cycles: 700,
    # shared by 3 (AccelForge's rank 2) and 0 (rank 3): the winner is 3. Explained: pick
    # 1 and winner 3, in that order, under the task's policy.
    order = peer_order(
        [_candidate(0, 20, 1), _candidate(1, 10, 1), _candidate(2, 20, 2), _candidate(3, 10, 2)],
        None,
    )
    policy = POLICIES[0]
    timed = [
        CandidateReplay("mm", ("s.yaml",), "{}", c, policy.reuse, policy.isolate_einsums, f"k{i}")
        for i, c in enumerate(order)
    ]
    rows = {("mm", 1): {"replay_cycles": 900}, ("mm", 3): {"replay_cycles": 700},
            ("mm", 0): {"replay_cycles": 700}, ("mm", 2): {"status": "not replayed"}}  # fmt: skip
    tasks = _explain_tasks("mm", order, rows, pick=1, timed=timed)
    assert [t.candidate["order"] for t in tasks] == [1, 3]
    assert all(t.explain and t.reuse == "strict" and t.isolate_einsums for t in tasks)
    # the pick is the winner: one explained replay
    rows[("mm", 1)] = {"replay_cycles": 600}
    assert [t.candidate["order"] for t in _explain_tasks("mm", order, rows, 1, timed)] == [1]


def test_a_spec_that_is_not_yaml_exits_2_naming_the_file(tmp_path, capsys):
    bad = tmp_path / "broken.yaml"
    bad.write_text("arch:\n  nodes: [\n")  # an unclosed flow sequence
    assert main(["rank", "accelforge", str(bad), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "broken.yaml" in err and "Traceback" not in err


def test_a_spec_without_a_workload_exits_2_naming_the_field(tmp_path, capsys):
    only_arch = tmp_path / "arch_only.yaml"
    only_arch.write_text(SPEC.read_text().split("workload:")[0])
    assert main(["rank", "accelforge", str(only_arch), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "arch_only.yaml" in err and "workload" in err


def test_an_unknown_mapper_objective_exits_2_naming_it(capsys):
    assert main(["rank", "accelforge", str(SPEC), "--objectives", "latency,area"]) == 2
    err = capsys.readouterr().err
    assert "'area'" in err and "resource_usage" in err


def test_a_missing_spec_file_exits_2(tmp_path, capsys):
    assert main(["rank", "accelforge", str(tmp_path / "nope.yaml")]) == 2
    assert "nope.yaml" in capsys.readouterr().err


def test_bad_jinja_data_exits_2_naming_the_option_not_an_input_file(capsys):
    assert main(["rank", "accelforge", str(SPEC), "--jinja-data", "no-such-file"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("cyclesim rank accelforge: --jinja-data is neither NAME=VALUE nor a file")
    assert "'no-such-file'" in err and "<input>" not in err


def _peer() -> None:
    from cyclesim.checks.accelforge import peer

    try:
        peer.accelforge_python()
    except PeerUnavailable as error:
        if os.environ.get(peer.ENVIRONMENT_VARIABLE):
            raise
        pytest.skip(f"accelforge unavailable: {error}")


@pytest.mark.peer
def test_rank_accelforge_replays_the_mappers_pareto_set_under_both_policies(tmp_path, capsys):
    """The real mapper on the 8x8x8 matmul (minutes: it runs once, the rerun reads its cache)."""
    _peer()
    cache, out = tmp_path / "cache", tmp_path / "out"
    args = ["rank", "accelforge", str(SPEC), "--cache", str(cache), "--out", str(out)]
    args += ["--workers", "1", "--no-progress", "--no-plots"]
    assert main([*args, "--top", "3"]) == 0
    printed = capsys.readouterr().out
    assert "under AccelForge's conventions" in printed and "under the default policy" in printed
    layers = pd.read_csv(out / "rank.csv")
    strict = pd.read_csv(out / "rank-accelforge.csv")
    default = pd.read_csv(out / "rank-candidates.csv")
    assert list(layers["layer"]) == ["matmul"] and list(strict["layer"]) == ["matmul"]
    # AccelForge's three best by its latency, its pick (the first) among them, all replayed
    assert len(default) == 3 and default["is_pick"].sum() == 1
    assert default.loc[default["is_pick"], "peer_rank"].item() == 1
    assert default["peer_latency"].is_monotonic_increasing
    assert default["replay_cycles"].notna().all() and (default["replay_cycles"] > 0).all()
    assert int(layers["replayed"].item()) == 3
    # a larger K replays only the new candidates: the mapper's set (20 mappings and more on
    # this spec) and the first three replays under each policy come from the cache
    assert main([*args, "--top", "5"]) == 0
    assert capsys.readouterr().out.count("(2 candidate(s) replayed now") == 2
    again = pd.read_csv(out / "rank-candidates.csv")
    assert len(again) == 5
    merged = again.merge(default, on="order", suffixes=("", "_before"))
    assert len(merged) == 3
    assert (merged["replay_cycles"] == merged["replay_cycles_before"]).all()
