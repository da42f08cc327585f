"""`cyclesim rank zigzag` against the real zigzag-dse: its search's candidates, its pick, the
cache and the command's default path, on small GEMMs (marked peer)."""

from __future__ import annotations

import pandas as pd
import pytest

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
def gemms(tmp_path_factory):
    """Two small GEMMs on the 4x4 Eyeriss-like array (small SRAMs)."""
    layers = zc.gemm_workload(8, 8, 8) + zc.gemm_workload(16, 8, 4)
    for layer_id, (entry, name) in enumerate(zip(layers, ("first", "second"), strict=True)):
        entry.update(id=layer_id, name=name, operand_source={"I": layer_id, "W": layer_id})
    return zc.write_case(
        tmp_path_factory.mktemp("rank"),
        "net",
        zc.eyeriss_accelerator(zc.SMALL_SRAM_BITS),
        layers,
        zc.spatial_mapping(),
    )


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """One cache for the module: each layer is searched once (the replays are what is tested)."""
    return tmp_path_factory.mktemp("rank-cache")


@pytest.mark.peer
def test_every_candidate_is_kept_and_the_pick_is_zigzags(gemms):
    _peer()
    from cyclesim.checks.zigzag import peer
    from cyclesim.checks.zigzag.candidates import search_candidates

    found = search_candidates(gemms.accelerator, gemms.workload, gemms.mapping, layer_name="first")
    theirs = peer.run_zigzag(gemms.accelerator, gemms.workload, gemms.mapping, layer_name="first")
    assert len(found.candidates) > 1
    pick = found.candidates[found.pick]
    assert pick.levels == theirs.temporal_mapping.levels
    assert pick.latency == theirs.latency.latency_total_cycles
    # ZigZag's reduce keeps the first of the least (latency, energy)
    best = min(found.candidates, key=lambda c: (c.latency, c.energy, c.order))
    assert best.order == pick.order


@pytest.mark.peer
def test_rank_replays_top_k_reevaluates_each_and_a_larger_k_replays_only_the_new(gemms, cache):
    _peer()
    from cyclesim.analysis.rank_zigzag import rank_zigzag

    files = (gemms.accelerator, gemms.workload, gemms.mapping)
    first = rank_zigzag(*files, top=3, cache_dir=cache, workers=1, progress=False)
    df = first.candidates
    # 3 per layer, the pick among them; each layer's pick and winner replayed again, explained
    assert first.replayed == 6 and first.from_cache == 0
    assert first.explained == sum(len({o for o in g}) for g in _pick_and_winner(df))
    assert (df["peer_reevaluated"] == df["peer_latency"]).all()  # the fixed evaluation agrees
    assert df.groupby("layer")["is_pick"].sum().tolist() == [1, 1]
    assert df["replay_cycles"].notna().all()
    again = rank_zigzag(*files, top=5, cache_dir=cache, workers=1, progress=False)
    assert again.replayed == 4 and again.from_cache >= 6
    merged = again.candidates.merge(df, on=["layer", "order"], suffixes=("", "_before"))
    assert (merged["replay_cycles"] == merged["replay_cycles_before"]).all()
    layers = again.layers
    assert list(layers["layer"]) == ["first", "second"] and (layers["replayed"] == 5).all()
    assert layers["regret"].notna().all() and (layers["regret"] >= 0).all()
    explained = again.candidates[again.candidates["is_pick"] | again.candidates["is_winner"]]
    assert explained["replay_stall"].notna().all() and (explained["error"] == "").all()


def _pick_and_winner(df) -> list[list[int]]:
    return [list(g.loc[g["is_pick"] | g["is_winner"], "order"]) for _, g in df.groupby("layer")]


@pytest.mark.peer
def test_the_command_prints_the_table_and_writes_tables_and_plots(gemms, cache, tmp_path, capsys):
    _peer()
    out = tmp_path / "out"
    args = ["rank", "zigzag", "--accelerator", gemms.accelerator, "--workload", gemms.workload,
            "--mapping", gemms.mapping, "--top", "3", "--out", str(out),
            "--cache", str(cache)]  # fmt: skip
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "replaying zigzag-dse's picks:" in text and "regret" in text
    for name in ("rank.csv", "rank-candidates.csv", "candidates.png", "regret.png"):
        assert (out / name).is_file()
    layers = pd.read_csv(out / "rank.csv")
    assert {"tau", "rho", "pick_is_best", "regret"} <= set(layers.columns)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--layer", "nope"), "no layer named 'nope'"),
        (("--top", "0"), "--top must be at least 1"),
        (("--table", "t.txt"), "use .csv or .parquet"),
    ],
)
def test_bad_options_exit_2_with_one_line(gemms, tmp_path, capsys, extra, message):
    args = ["rank", "zigzag", "--accelerator", gemms.accelerator, "--workload", gemms.workload,
            "--mapping", gemms.mapping, "--out", str(tmp_path), *extra]  # fmt: skip
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_missing_file_is_named(tmp_path, capsys):
    args = ["rank", "zigzag", "--accelerator", str(tmp_path / "a.yaml"), "--workload", "w.yaml",
            "--mapping", "m.yaml"]  # fmt: skip
    assert main(args) == 2
    err = capsys.readouterr().err
    # named by its sub-command, as `rank accelforge` and the checks name theirs
    assert err.startswith("cyclesim rank zigzag: --accelerator ")
    assert "a.yaml: no such file" in err


@pytest.mark.peer
def test_on_a_local_dask_cluster_the_replays_are_the_same(gemms, cache, tmp_path):
    _peer()
    from cyclesim.analysis.rank_zigzag import rank_zigzag

    files = (gemms.accelerator, gemms.workload, gemms.mapping)
    local = rank_zigzag(*files, layers=["second"], top=2, cache_dir=cache, workers=1,
                        progress=False)  # fmt: skip
    # a fresh cache for the replays (the search is copied over): every replay runs on Dask
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    for path in cache.glob("*.json"):
        data = path.read_text()
        if '"candidates"' in data:
            (fresh / path.name).write_text(data)
    on_dask = rank_zigzag(*files, layers=["second"], top=2, cache_dir=fresh, workers=2,
                          backend="dask", progress=False)  # fmt: skip
    assert on_dask.replayed == 2 and on_dask.from_cache == 0
    assert list(on_dask.candidates["replay_cycles"]) == list(local.candidates["replay_cycles"])


@pytest.mark.peer
def test_distinct_replays_one_candidate_per_zigzag_latency(gemms, cache):
    _peer()
    from cyclesim.analysis.rank_zigzag import rank_zigzag

    files = (gemms.accelerator, gemms.workload, gemms.mapping)
    run = rank_zigzag(*files, layers=["first"], top=3, distinct=True, cache_dir=cache,
                      workers=1, progress=False)  # fmt: skip
    latencies = list(run.candidates["peer_latency"])
    assert latencies == sorted(set(latencies)) and run.candidates["is_pick"].iloc[0]
