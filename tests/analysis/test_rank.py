"""`cyclesim rank`: the order statistics, the ranking tables, and a layer where ZigZag's model
ranks two mappings the wrong way round for a reason the replay names (no peer needed)."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cyclesim.analysis.rank import RankRun, candidate_table, cause_deltas, format_rank, layer_table
from cyclesim.analysis.rank_stats import average_ranks, kendall_tau, regret, spearman_rho


# ------------------------------------------------------------------ statistics, by hand
def test_kendall_tau_by_hand():
    # [1,2,3] vs [1,3,2]: pairs (0,1) and (0,2) concordant, (1,2) discordant: (2 - 1) / 3
    assert kendall_tau([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)
    # x ties on (0,1); (0,2) and (1,2) concordant; n0 = 3 pairs, one tied in x, none in y:
    # tau-b = 2 / sqrt((3 - 1) * (3 - 0)) = 2 / sqrt(6)
    assert kendall_tau([1, 1, 2], [1, 2, 3]) == pytest.approx(2 / math.sqrt(6))
    assert kendall_tau([1, 2, 3, 4], [4, 3, 2, 1]) == -1
    assert math.isnan(kendall_tau([5, 5, 5], [1, 2, 3]))  # one side has no order at all
    assert math.isnan(kendall_tau([1], [1]))


def test_spearman_rho_by_hand():
    # ranks [1,2,3] vs [1,3,2]: d = 0, 1, 1; 1 - 6 * 2 / (3 * (9 - 1)) = 0.5
    assert spearman_rho([10, 20, 30], [1, 3, 2]) == pytest.approx(0.5)
    # ties take average ranks: [1, 2.5, 2.5] vs [1, 2, 3]; Pearson's r of those:
    # means 2 and 2, deviations (-1, .5, .5) and (-1, 0, 1): sxy = 1 + 0 + .5 = 1.5,
    # sxx = 1 + .25 + .25 = 1.5, syy = 2: r = 1.5 / sqrt(3)
    assert spearman_rho([1, 2, 2], [1, 2, 3]) == pytest.approx(1.5 / math.sqrt(3))
    assert average_ranks([10, 20, 20, 5]) == [2, 3.5, 3.5, 1]


def test_regret_by_hand():
    assert regret(808, 782) == pytest.approx(26 / 782)
    assert regret(782, 782) == 0


finite = st.lists(st.integers(-50, 50), min_size=2, max_size=12)


@given(finite, st.randoms())
def test_tau_and_rho_are_bounded_and_symmetric(x, rnd):
    y = list(x)
    rnd.shuffle(y)
    for stat in (kendall_tau, spearman_rho):
        value = stat(x, y)
        if not math.isnan(value):
            assert -1 - 1e-12 <= value <= 1 + 1e-12
            assert stat(y, x) == pytest.approx(value)
            assert stat(x, [-v for v in y]) == pytest.approx(-value)
    if len(set(x)) == len(x):
        assert kendall_tau(x, x) == pytest.approx(1)
        assert spearman_rho(x, x) == pytest.approx(1)


# ------------------------------------------------------------------ the hand-made layer
# A 20x20x20 GEMM (8-bit) on the 4x4 Eyeriss-like array of issue #52 with the small SRAMs
# (cases.eyeriss_accelerator(SMALL_SRAM_BITS)), K4 on D1 and C4 on D2: B20 K5 C5 temporal,
# 500 ideal cycles. Every memory has a port latency of 1 cycle, which ZigZag 3.9.1 stores and
# never reads. Two of the mappings its search (LOMA) evaluates:
#
# A keeps only B2 B2 of the output in rf_16B and puts C5 outermost above it (B5 K5 C5 in
#   sram_8KB): 5 * 5 * 5 = 125 visits of an output tile, of which the 5 * 5 * 4 = 100 with
#   c > 0 reload partial sums from sram_8KB. Each reload waits for sram_8KB's port: 1 cycle
#   of latency x 100 = 100 stall cycles the replay names 'latency'. ZigZag: 500 ideal + 29
#   onloading + 4 offloading = 533, no stall (every period fits its window).
# B keeps K5 C5 innermost in rf_16B: each output is complete before it leaves, nothing is
#   reloaded; what the PE array waits for is I's refill of rf_64B_I (50 cycles of bandwidth,
#   1 of latency). ZigZag: 500 + 57 onloading (one period of the larger first tile) + 4 = 561.
#
# ZigZag ranks A first (533 < 561). The replay: A = 500 + 101 stall + 127 onload + 80 offload
# = 808; B = 500 + 51 + 151 + 81 = 783 (B's offload takes one cycle more than A's under the
# exactness rules, docs/exactness.md: 78 cycles of bandwidth against 77). B wins by 25 = (101 - 51) - (151 - 127) - (81 - 80): the 100 partial-sum
# reloads' latency outweighs B's longer first fill. Regret of ZigZag's pick 808 / 783 - 1 =
# 3.2 %, and the pick pays 99 more cycles of compute/latency than the winner.
A = {
    "O": [[["B", 2], ["B", 2]], [["B", 5], ["K", 5], ["C", 5]], [], []],
    "W": [[["B", 2], ["B", 2], ["B", 5], ["K", 5], ["C", 5]], [], []],
    "I": [[["B", 2], ["B", 2], ["B", 5], ["K", 5]], [["C", 5]], []],
}
B = {
    "O": [[["K", 5], ["C", 5]], [["B", 5], ["B", 2], ["B", 2]], [], []],
    "W": [[["K", 5], ["C", 5], ["B", 5], ["B", 2], ["B", 2]], [], []],
    "I": [[["K", 5], ["C", 5], ["B", 5], ["B", 2]], [["B", 2]], []],
}


@pytest.fixture(scope="module")
def latency_case(tmp_path_factory):
    from cyclesim.checks.zigzag import cases as zc

    return zc.write_case(
        tmp_path_factory.mktemp("latency"),
        "gemm",
        zc.eyeriss_accelerator(zc.SMALL_SRAM_BITS),
        zc.gemm_workload(20, 20, 20, 8),
        zc.spatial_mapping(),
    )


def _checked(files, tm: dict, folder):
    from cyclesim.checks.zigzag.check import compare, replay_case
    from cyclesim.checks.zigzag.read import load_zigzag_inputs

    path = folder / f"tm{id(tm)}.json"
    path.write_text(json.dumps(tm))
    inputs = load_zigzag_inputs(files.accelerator, files.workload, files.mapping, str(path))
    return compare(inputs, replay_case(inputs), None, "not asked")


def test_zigzag_ranks_a_first_but_a_port_latency_it_ignores_makes_b_faster(latency_case, tmp_path):
    from cyclesim.analysis.rank_zigzag import top_mechanisms

    a, b = _checked(latency_case, A, tmp_path), _checked(latency_case, B, tmp_path)
    # ZigZag's model (ours, equal to zigzag-dse's on these cases): A before B
    assert (a.analytical.latency_total, b.analytical.latency_total) == (533, 561)
    assert a.analytical.stall == b.analytical.stall == 0
    # the replay: B before A, by the derivation above
    assert (a.replay.latency_total, b.replay.latency_total) == (808, 783)
    assert a.causes("compute") == {"latency": 100, "bandwidth": 1}
    assert b.causes("compute") == {"bandwidth": 50, "latency": 1}
    # the mechanism, named: sram_8KB's port latency on each partial-sum reload
    top = top_mechanisms(a)
    assert top[0].startswith("stall, latency (100 cycles)")
    assert "sram_8KB" in top[0] and "partial-sum reload" in top[0] and "never reads" in top[0]

    # the same two as a rank run: ZigZag's pick A, the replay's winner B
    def row(check):
        return {
            "status": "ok",
            "replay_cycles": check.replay.latency_total,
            "causes": {f"{p}/{c}": n for p, c, n in check.stall_causes},
            "mechanisms": top_mechanisms(check),
        }

    ranked = {"gemm": [{"order": 0, "latency": 533.0, "energy": 1.0},
                       {"order": 1, "latency": 561.0, "energy": 1.0}]}  # fmt: skip
    candidates = candidate_table(["gemm"], ranked, {"gemm": 0}, {
        ("gemm", 0): row(a), ("gemm", 1): row(b)})  # fmt: skip
    layers = layer_table(["gemm"], candidates, {}, 20)
    got = layers.iloc[0]
    assert not got["pick_is_best"] and got["pick_replay_rank"] == 2
    assert got["regret"] == pytest.approx(808 / 783 - 1)
    assert got["tau"] == -1 and got["winner_peer_rank"] == 2
    assert got["pick_pays_more"].startswith("compute/latency +99")
    text = format_rank(RankRun("zigzag-dse", candidates, layers, 2, 2, 0))
    assert "regret 3.19%" in text and "compute/latency +99" in text


def test_cause_deltas_keep_what_the_pick_pays_more():
    pick = {"compute/latency": 100, "onload/bandwidth": 75, "compute/bandwidth": 1}
    winner = {"compute/latency": 1, "onload/bandwidth": 100, "compute/bandwidth": 50}
    assert cause_deltas(pick, winner) == "compute/latency +99"
    assert cause_deltas(winner, winner) == ""


def test_ties_share_the_replay_rank_and_the_peers_better_rank_wins():
    ranked = {"L": [{"order": o, "latency": lat, "energy": 0.0}
                    for o, lat in ((3, 10.0), (1, 10.0), (2, 12.0))]}  # fmt: skip
    rows = {("L", 3): {"replay_cycles": 50}, ("L", 1): {"replay_cycles": 40},
            ("L", 2): {"replay_cycles": 40}}  # fmt: skip
    df = candidate_table(["L"], ranked, {"L": 3}, rows)
    assert list(df["replay_rank"]) == [3, 1, 1]
    assert list(df["is_winner"]) == [False, True, False]  # peer rank 2 beats peer rank 3
    layer = layer_table(["L"], df, {}, 3).iloc[0]
    assert layer["regret"] == pytest.approx(0.25) and not layer["pick_is_best"]
    # zigzag (10, 10, 12) vs replay (50, 40, 40): pair (0,1) ties in x, (0,2) is discordant,
    # (1,2) ties in y: tau-b = (0 - 1) / sqrt((3 - 1) * (3 - 1)) = -0.5
    assert layer["tau"] == pytest.approx(-0.5)


def test_a_layer_without_candidates_is_a_row_with_its_reason():
    df = candidate_table(["L"], {}, {}, {})
    layer = layer_table(["L"], df, {"L": "ZigZagPeerError: no mapping"}, 20).iloc[0]
    assert layer["status"] == "no candidates" and "no mapping" in layer["error"]


def _double(x: int) -> int:
    import time

    time.sleep(0.15)  # longer than tqdm's redraw interval (0.1 s), so every update is drawn
    return 2 * x


def test_the_progress_bar_shows_the_postfix_of_the_last_task(capsys):
    from cyclesim.analysis.parallel import map_tasks

    outcomes = map_tasks(_double, [3, 1, 2], workers=1, progress=True, desc="candidates",
                         postfix=lambda o: f"best {o.value}")  # fmt: skip
    assert [o.value for o in outcomes] == [6, 2, 4]
    err = capsys.readouterr().err
    assert "candidates" in err and "best 2" in err and "2/3" in err


def test_the_regret_is_explained_by_the_picks_sentence_for_the_cause_it_pays_more():
    from cyclesim.analysis.rank import regret_sentence

    mechanisms = "onloading: ZigZag counts ... | stall, buffer_full (3,072 cycles): the MACs ..."
    assert regret_sentence("compute/buffer_full +3,072", mechanisms).startswith(
        "stall, buffer_full (3,072"
    )
    assert regret_sentence("onload/bandwidth +15; compute/x +1", mechanisms).startswith("onloading")
    assert regret_sentence("offload/bandwidth +1", mechanisms) == ""
    assert regret_sentence("", mechanisms) == ""


def test_rank_zigzag_without_zigzag_dse_is_one_line_exit_2_and_writes_nothing(tmp_path):
    # found by a new user: `make demo` installs no zigzag-dse; `rank zigzag` then exited 0 with
    # "0 of 1 layers ranked", an empty candidates.png and no word on how to get the peer
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    shadow = tmp_path / "shadow" / "zigzag"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError(\"No module named 'zigzag'\")\n")
    rank = root / "examples" / "rank"
    done = subprocess.run(
        [sys.executable, "-m", "cyclesim", "rank", "zigzag",
         "--accelerator", str(rank / "eyeriss4x4_accelerator.yaml"),
         "--workload", str(rank / "eyeriss4x4_workload.yaml"),
         "--mapping", str(rank / "eyeriss4x4_mapping.yaml"), "--out", str(tmp_path / "out")],
        capture_output=True, text=True, cwd=tmp_path,
        env={**__import__("os").environ, "PYTHONPATH": f"{tmp_path / 'shadow'}:{root}"},
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and "zigzag-dse" in done.stderr
    assert "make peers" in done.stderr
    assert not (tmp_path / "out").exists()


def test_rank_zigzag_names_a_missing_input_before_the_missing_peer(tmp_path, monkeypatch, capsys):
    """A missing --accelerator file was reported as the missing zigzag-dse."""
    from cyclesim.checks.zigzag import peer
    from cyclesim.cli import main
    from cyclesim.errors import PeerUnavailable

    def missing() -> None:
        raise PeerUnavailable("zigzag-dse is not installed")

    monkeypatch.setattr(peer, "require_zigzag", missing)
    given = ["--workload", "w.yaml", "--mapping", "m.yaml", "--no-progress"]
    assert main(["rank", "zigzag", "--accelerator", str(tmp_path / "a.yaml"), *given]) == 2
    err = capsys.readouterr().err
    assert "a.yaml: no such file" in err and "zigzag-dse" not in err


@pytest.mark.parametrize("peer", ["zigzag", "accelforge"])
def test_rank_says_a_directory_is_not_a_file(peer, tmp_path, capsys):
    """`rank accelforge /tmp` said 'no such file'."""
    from cyclesim.cli import main

    if peer == "zigzag":
        args = ["--accelerator", str(tmp_path), "--workload", "w.yaml", "--mapping", "m.yaml"]
    else:
        args = [str(tmp_path)]
    assert main(["rank", peer, *args, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path} is a directory; a file is expected" in err and "no such file" not in err
