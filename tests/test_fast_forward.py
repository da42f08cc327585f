"""Fast-forward (engine/fastforward.py) fires where iterations repeat, and changes nothing.

Each case replays the same plan with and without fast-forward and asserts that everything the
results are built from is identical (cycles, counts, every record: timelines, grants, PE waits,
segments, transfers, occupancy, last finishers, spatial and systolic stalls), then the Result
(phases, stall rows with their cycle ranges, accesses) and the VCD and Perfetto files byte for
byte. Only SimPy's event counts may differ. The broad identity tests (every example, every
test case, random schedules) live elsewhere; these are small cases where one can say why it
fires, and where it must not.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from replay_helpers import gemm_einsum, inputs_from_dicts, matvec_einsum, memory, port

import cyclesim
from cyclesim.engine import TraceFilter, replay_plan
from cyclesim.engine.rows import Repeat
from cyclesim.results import build_result
from cyclesim.schedule import ReusePolicy, build_plan

ROOT = Path(__file__).resolve().parents[1]


def _arch(dram_bits: int = 16) -> dict:
    return {
        "name": "ff",
        "pe_array": {"dims": {"X": 4}, "pipeline_depth_cycles": 0},
        "memories": [
            memory("DRAM", None, None, [port("rd", "read", dram_bits), port("wr", "write", 16)]),
            memory("buf", None, None, [port("rd", "read", 64), port("wr", "write", 64)], True),
            memory(
                "reg",
                None,
                None,
                [port("rd", "read", 64), port("wr", "write", 64)],
                double_buffered=True,
                shared_across=[],
            ),
        ],
    }


def _workload(n: int, k: int, psum_bits: int = 8) -> dict:
    return {
        "tensors": {
            "A": {"bits_per_value": 8},
            "B": {"bits_per_value": 8},
            "Z": {"bits_per_value": 8, "partial_sum_bits": psum_bits},
        },
        "einsums": [gemm_einsum(1, n, k)],
    }


def streaming(outer: int = 16) -> tuple[dict, dict, dict]:
    """Z stays in buf for the whole run; A and B stream through buf, one tile per outer k.

    Per iteration of the outer k loop (16 segments of one step each): an A tile of 16 values
    (128 b) and a B tile of 16 x 4 values (512 b) cross the 16 b/cycle DRAM read port, 8 + 32
    cycles, so the run is DRAM-bound. The two double-buffered fills take turns on that port,
    one tile each, so the state repeats every two iterations, not every one; from the second
    iteration on, every pair of iterations is the same, shifted by 80 cycles.
    """
    tree = [
        {"type": "storage", "memory": "DRAM", "tensors": ["A", "B", "Z"]},
        {"type": "storage", "memory": "buf", "tensors": ["Z"]},
        {"type": "temporal", "rank": "k", "bound": outer},
        {"type": "storage", "memory": "buf", "tensors": ["A", "B"]},
        {"type": "temporal", "rank": "k", "bound": 16},
        {"type": "spatial", "rank": "n", "bound": 4, "dim": "X"},
        {"type": "storage", "memory": "reg", "tensors": ["A", "B"]},
        {"type": "compute", "einsum": "gemm"},
    ]
    return _arch(), _workload(4, outer * 16), {"loop_tree": tree}


def reduction() -> tuple[dict, dict, dict]:
    """Partial sums: Z's buf tile (4 values) is entered, reloaded and written back per outer k.

    Loops: k (16, outer) > n (4) > k (16) > spatial n (4). Z@buf holds one n slice; each
    iteration of the outer k revisits all four: the first (k = 0) enters them without a read,
    the middle ones reload the 32-bit partial sums and write them back, the last (k = 15)
    writes the final 8-bit values. Fast-forward may only skip middle iterations: the first and
    the last move other amounts of data, and the identity below fails if it skipped either.
    The DRAM read port is 64 bits wide: A, B and the partial sums fit in a few bursts each, so
    every middle iteration starts from the same state (on the 16-bit port of `streaming`, the
    three fills and the write-back take turns in an order that does not repeat within four
    iterations, and fast-forward rightly never fires).
    """
    tree = [
        {"type": "storage", "memory": "DRAM", "tensors": ["A", "B", "Z"]},
        {"type": "temporal", "rank": "k", "bound": 16},
        {"type": "temporal", "rank": "n", "bound": 4},
        {"type": "storage", "memory": "buf", "tensors": ["A", "B", "Z"]},
        {"type": "temporal", "rank": "k", "bound": 16},
        {"type": "spatial", "rank": "n", "bound": 4, "dim": "X"},
        {"type": "storage", "memory": "reg", "tensors": ["A", "B"]},
        {"type": "compute", "einsum": "gemm"},
    ]
    return _arch(64), _workload(16, 256, psum_bits=32), {"loop_tree": tree}


def two_loads() -> tuple[dict, dict, dict]:
    """A (256 values) and B (256 x 4) are loaded whole into buf over one 16-bit DRAM port.

    Bursts are 16 bits, 1 cycle: A's 128 bursts and B's 512 take turns on the port (round
    robin), so between two grants to A the state repeats every 2 cycles, only the burst
    indices have moved on (by 1 each). Fast-forward skips whole periods of that, keeping A's
    last bursts (after them B runs alone), then the compute streams from buf.
    """
    tree = [
        {"type": "storage", "memory": "DRAM", "tensors": ["A", "B", "Z"]},
        {"type": "storage", "memory": "buf", "tensors": ["A", "B", "Z"]},
        {"type": "temporal", "rank": "k", "bound": 256},
        {"type": "spatial", "rank": "n", "bound": 4, "dim": "X"},
        {"type": "storage", "memory": "reg", "tensors": ["A", "B"]},
        {"type": "compute", "einsum": "gemm"},
    ]
    return _arch(), _workload(4, 256), {"loop_tree": tree}


def pipelined_write_back(depth: int) -> tuple[dict, dict, dict]:
    """tests/cases/pipelined_write_back with 16 x 16 tiles of Z: one 8-bit value per tile in acc
    (two slots), computed in 4 cycles, through a `depth`-cycle PE pipeline, and written back
    in 8 (1 b/cycle): the write-back binds, and each tile's results land while the previous
    tile is still being written back. A (2048 values) and B whole in buf, loaded first: A's
    32 bursts and B's one share dram_rd, 33 cycles. With depth 3 every write-back starts
    where the previous one ends: 33 + 4 + 3 (tile 0) + 256 x 8 = 2088 cycles. Iterations of
    the outer m repeat (16 tiles, 128 cycles each).
    """
    arch = {
        "name": "pipelined_write_back",
        "pe_array": {"dims": {"X": 1}, "pipeline_depth_cycles": depth},
        "memories": [
            memory(
                "DRAM",
                None,
                ["A", "B", "Z"],
                [port("dram_rd", "read", 256), port("dram_wr", "write", 1, 8)],
            ),
            memory(
                "buf",
                None,
                ["A", "B"],
                [port("buf_rd", "read", 64, 256), port("buf_wr", "write", 256)],
            ),
            memory(
                "acc",
                16,
                ["Z"],
                [port("acc_rd", "read", 64, 8), port("acc_wr", "write", 64, 8)],
                double_buffered=True,
            ),
        ],
    }
    workload = {
        "tensors": {name: {"bits_per_value": 8} for name in ("A", "B", "Z")},
        "einsums": [matvec_einsum(256, 4)],
    }
    tree = [
        {"type": "storage", "memory": "DRAM", "tensors": ["A", "B", "Z"]},
        {"type": "storage", "memory": "buf", "tensors": ["A", "B"]},
        {"type": "temporal", "rank": "m", "bound": 16},
        {"type": "temporal", "rank": "m", "bound": 16},
        {"type": "storage", "memory": "acc", "tensors": ["Z"]},
        {"type": "temporal", "rank": "k", "bound": 4},
        {"type": "compute", "einsum": "matvec"},
    ]
    return arch, workload, {"loop_tree": tree}


def output_in_parts(n_tiles: int) -> tuple[dict, dict, dict]:
    """The shape of ZigZag's gemm_l1_l3 conv layers: an output tile its child fills part by part.

    Loops: k (4, outer) > n (n_tiles) > Z@buf > m (32) > Z@reg > k (8) > compute. Z's buf tile
    (one n, all 32 m) is filled by 32 register tiles in turn, one per m, so it has 32
    dependency groups (a consumer could wait for each m part alone); its tile changes every
    iteration of n. The iterations of n repeat (k = 0 enters each tile, k = 1, 2 reload the
    partial sums, k = 3 writes the final values), so fast-forward skips them in every
    iteration of the outer k, shifting Z@buf's per-part tables by 32 part keys per tile.
    """
    rw = [port("rd", "read", 64), port("wr", "write", 64)]
    arch = {
        "name": "parts",
        "pe_array": {"dims": {"X": 1}, "pipeline_depth_cycles": 0},
        "memories": [
            memory("DRAM", None, None, rw),
            memory("buf", None, None, rw, True),
            memory("reg", None, None, [port("rd", "read", 8), port("wr", "write", 8)], True),
        ],
    }
    workload = {
        "tensors": {name: {"bits_per_value": 8} for name in ("A", "B", "Z")},
        "einsums": [gemm_einsum(32, n_tiles, 4 * 8)],
    }
    tree = [
        {"type": "storage", "memory": "DRAM", "tensors": ["A", "B", "Z"]},
        {"type": "storage", "memory": "buf", "tensors": ["A", "B"]},
        {"type": "temporal", "rank": "k", "bound": 4},
        {"type": "temporal", "rank": "n", "bound": n_tiles},
        {"type": "storage", "memory": "buf", "tensors": ["Z"]},
        {"type": "temporal", "rank": "m", "bound": 32},
        {"type": "storage", "memory": "reg", "tensors": ["Z"]},
        {"type": "temporal", "rank": "k", "bound": 8},
        {"type": "compute", "einsum": "gemm"},
    ]
    return arch, workload, {"loop_tree": tree}


def _plan(case, reuse: str = "retain"):
    a, w, m = inputs_from_dicts(*case)
    return build_plan(a, w, m, ReusePolicy(reuse), False), (a, w, m)


def assert_identical(full, fast) -> None:
    """Everything results builds from a RawRun is the same (SimPy's event counts aside)."""
    assert fast.cycles == full.cycles
    assert list(fast.counts.items()) == list(full.counts.items())
    for name in type(full.rec).__slots__:
        if name != "events":
            assert getattr(fast.rec, name) == getattr(full.rec, name), name


def assert_same_result(full, fast, tmp_path: Path) -> None:
    """The Results agree (phases, stall rows with their cycles, accesses) and so do the files."""
    results = [build_result(raw) for raw in (full, fast)]
    assert results[0].phases.equals(results[1].phases)
    assert results[0].stall_rows == results[1].stall_rows
    assert results[0].accesses.equals(results[1].accesses)
    for name, res in zip(("full", "fast"), results, strict=True):
        (tmp_path / name).mkdir()
        cyclesim.write_vcd(res, tmp_path / name / "run.vcd")
        cyclesim.write_perfetto(res, tmp_path / name / "run.json")
    for path in sorted((tmp_path / "full").iterdir()):
        assert path.read_bytes() == (tmp_path / "fast" / path.name).read_bytes(), path.name


def test_a_streaming_loop_is_skipped_and_nothing_changes(tmp_path):
    plan, inputs = _plan(streaming())
    full = replay_plan(plan, trace=True, progress=False, fast_forward=False)
    fast = replay_plan(plan, trace=True, progress=False)
    assert full.fast_forward.jumps == 0
    ff = fast.fast_forward
    # snapshots at the starts of iterations 1, 2 and 3 (iteration 0 is never a reference):
    # 1 and 3 are equal, a period of two iterations; the jump skips whole periods
    assert ff.jumps >= 1 and ff.periods >= 1
    assert ff.segments_skipped == 32 * ff.periods and ff.cycles_skipped == 80 * ff.periods
    assert fast.env_events < full.env_events
    assert_identical(full, fast)
    assert_same_result(full, fast, tmp_path)


def test_bursts_that_take_turns_are_skipped_between_grants(tmp_path):
    plan, inputs = _plan(two_loads())
    full = replay_plan(plan, trace=True, progress=False, fast_forward=False)
    fast = replay_plan(plan, trace=True, progress=False)
    ff = fast.fast_forward
    assert ff.jumps >= 1 and ff.segments_skipped == 0  # no loop iteration: inside transfers
    # a period is 16 grants to one requester, 2 cycles each (one burst of A, one of B)
    assert ff.cycles_skipped % 32 == 0 and ff.cycles_skipped <= 2 * 128
    assert fast.env_events < full.env_events
    assert_identical(full, fast)
    assert_same_result(full, fast, tmp_path)


def test_partial_sums_keep_their_first_and_final_visits(tmp_path):
    plan, inputs = _plan(reduction())
    full = replay_plan(plan, trace=True, progress=False, fast_forward=False)
    fast = replay_plan(plan, trace=True, progress=False)
    assert fast.fast_forward.jumps >= 1
    # the first (entered) and last (final) visits of each of the 4 Z tiles are replayed
    first_and_last = 2 * 4 * 16  # segments of outer iterations 0 and 15
    assert fast.fast_forward.segments_skipped <= plan.leaves[0].segments - first_and_last
    assert_identical(full, fast)
    assert_same_result(full, fast, tmp_path)


@pytest.mark.parametrize("depth", [3, 10])
def test_a_pipelined_write_back_is_skipped_and_nothing_changes(tmp_path, depth):
    # the PE pipeline's landing cycles (Tiles.lands_at) and the write-back's waits for them
    # (stage PIPE) are part of the state. Depth 3: 2088 cycles (pipelined_write_back), no wait
    # after tile 0's. Depth 10: tile 0 computes 33..37, lands 47, written back 47..55; tile 1
    # computes 37..41, lands 51, written back 55..63; tile 2 computes 55..59 (tile 0's slot),
    # lands 69: the write-back waits 63..69 (6 of the 10 cycles) and moves it 69..77; tile 3
    # computes 63..67, lands 77, moved 77..85; so on, 22 cycles per pair of tiles: tile 2j's
    # write-back starts at 69 + 22 (j - 1), tile 255's ends at 69 + 22 x 126 + 16 = 2857.
    plan, inputs = _plan(pipelined_write_back(depth))
    full = replay_plan(plan, trace=True, progress=False, fast_forward=False)
    fast = replay_plan(plan, trace=True, progress=False)
    assert full.fast_forward.jumps == 0 and fast.fast_forward.jumps >= 1
    assert fast.fast_forward.segments_skipped >= 128
    assert full.cycles == {3: 2088, 10: 2857}[depth]
    assert_identical(full, fast)
    assert_same_result(full, fast, tmp_path)


def test_an_output_tile_filled_part_by_part_is_skipped_and_nothing_changes(tmp_path):
    plan, inputs = _plan(output_in_parts(16))
    z_buf = next(n for n in plan.nodes if n.label() == "Z@buf")
    assert z_buf.dependency_groups == 32 and z_buf.entries == 4 * 16
    full = replay_plan(plan, trace=True, progress=False, fast_forward=False)
    fast = replay_plan(plan, trace=True, progress=False)
    # iterations of n are skipped (each a whole Z@buf tile, 32 segments), not only of m
    assert fast.fast_forward.segments_skipped >= 4 * 10 * 32
    assert_identical(full, fast)
    assert_same_result(full, fast, tmp_path)


def _stored(raw) -> tuple[int, int]:
    """(record rows stored one by one, finisher entries): what a replay's records cost."""
    rec = raw.rec
    lists = [*rec.fill_tl, *rec.drain_tl, *rec.grants.values(), rec.pe_waits]
    rows = sum(len(p) for rows in lists for p in rows.pieces() if not isinstance(p, Repeat))
    return rows, rec.last_finisher.entry_count


def test_records_stay_bounded_when_an_output_tile_is_filled_part_by_part():
    # gemm_l1_l3's layer2.0 conv1 kept 5.2M timeline rows, 3.4M grants and 935k finishers (1.36
    # GB): its outputs' tiles had dependency groups, so only the innermost loop (too short to
    # look at) was watched. Four times as many n tiles must cost no more stored rows: the
    # first iterations and the last of each outer k are simulated, the rest are repeats.
    small, large = (replay_plan(_plan(output_in_parts(n))[0], progress=False) for n in (16, 64))
    assert len(large.rec.fill_tl[-1]) > 3 * len(small.rec.fill_tl[-1])  # ~4x the rows ...
    (rows, finishers), (rows_small, finishers_small) = _stored(large), _stored(small)
    assert rows <= rows_small and finishers <= finishers_small  # ... stored in the same space
    assert large.env_events <= small.env_events


@pytest.mark.parametrize("channels, setup", [(1, 2), (2, 0)])
def test_dma_channels_are_part_of_the_state(channels, setup):
    # the same stream through a DMA engine: which fill holds a channel, which one waits for
    # it, and the setup timeouts are compared and moved like everything else
    arch, workload, mapping = streaming()
    arch["dma_engines"] = [
        {
            "name": "dma",
            "links": [{"parent": "DRAM", "child": "buf"}],
            "channels": channels,
            "setup_cycles": setup,
        }
    ]
    plan, _ = _plan((arch, workload, mapping))
    full = replay_plan(plan, trace=True, progress=False, fast_forward=False)
    fast = replay_plan(plan, trace=True, progress=False)
    assert fast.fast_forward.jumps >= 1
    assert_identical(full, fast)


@pytest.mark.parametrize("outer", [3, 16])
def test_it_never_touches_the_first_or_last_iteration_of_a_short_loop(outer):
    # with 3 iterations there is no middle iteration to compare with another: it cannot fire
    plan, _ = _plan(streaming(outer))
    full = replay_plan(plan, progress=False, fast_forward=False)
    fast = replay_plan(plan, progress=False)
    assert (fast.fast_forward.jumps == 0) == (outer == 3)
    assert_identical(full, fast)


def test_off_with_a_trace_window_and_on_with_a_resource_filter():
    # a window cuts the period's records at its edges, so they would not repeat: off; a
    # resource filter keeps the same resources in every period: on
    plan, _ = _plan(streaming())
    for f, fires in ((TraceFilter(100, 900), False), (TraceFilter(resources=("A",)), True)):
        full = replay_plan(plan, trace_filter=f, progress=False, fast_forward=False)
        fast = replay_plan(plan, trace_filter=f, progress=False)
        assert (fast.fast_forward.jumps > 0) == fires
        assert_identical(full, fast)


def fused_chain() -> tuple[dict, dict, dict]:
    """Two Einsums, the consumer reading the producer's AO through sram, 16 times over m."""
    rw = [port("rd", "read", 16), port("wr", "write", 16)]
    arch = {
        "name": "chain",
        "pe_array": {"dims": {"X": 1}},
        "memories": [memory("DRAM", None, None, rw), memory("sram", None, None, rw, True)],
    }

    def gemm(name: str, a: str, b: str, out: str, ranks: dict) -> dict:
        (r0, r1, r2) = ranks
        return {
            "name": name,
            "ranks": ranks,
            "inputs": [
                {"tensor": a, "projection": [r0, r2]},
                {"tensor": b, "projection": [r2, r1]},
            ],
            "outputs": [{"tensor": out, "projection": [r0, r1]}],
        }

    workload = {
        "default_bits_per_value": 8,
        "einsums": [
            gemm("producer", "I", "W0", "AO", {"m": 16, "n": 4, "k": 4}),
            gemm("consumer", "AO", "W1", "O", {"m": 16, "p": 4, "n": 4}),
        ],
    }

    def branch(einsum: str, ranks: dict) -> list:
        loops = [{"type": "temporal", "rank": r, "bound": b} for r, b in ranks.items()]
        return [*loops, {"type": "compute", "einsum": einsum}]

    tree = [
        {"type": "storage", "memory": "DRAM", "tensors": ["I", "W0", "W1", "AO", "O"]},
        {"type": "temporal", "rank": "m", "bound": 16},
        {"type": "storage", "memory": "sram", "tensors": ["AO"]},
        {
            "type": "sequential",
            "branches": [
                branch("producer", {"n": 4, "k": 4}),
                branch("consumer", {"p": 4, "n": 4}),
            ],
        },
    ]
    return arch, workload, {"loop_tree": tree}


def test_off_for_fused_einsums():
    # the producer's parts and the consumer's waits for them are not captured: never fires,
    # even though every iteration of m repeats
    plan, _ = _plan(fused_chain())
    assert len(plan.leaves) == 2
    full = replay_plan(plan, trace=True, progress=False, fast_forward=False)
    fast = replay_plan(plan, trace=True, progress=False)
    assert fast.fast_forward.jumps == 0
    assert_identical(full, fast)


def test_the_progress_bar_does_not_change_the_jumps():
    plan, _ = _plan(reduction())
    quiet = replay_plan(plan, trace=True, progress=False)
    shown = replay_plan(plan, trace=True, progress=True)
    assert shown.fast_forward == quiet.fast_forward and shown.env_events == quiet.env_events
    assert_identical(quiet, shown)


def test_strict_reuse_is_identical_too():
    plan, _ = _plan(reduction(), reuse="strict")
    full = replay_plan(plan, trace=True, progress=False, fast_forward=False)
    fast = replay_plan(plan, trace=True, progress=False)
    assert_identical(full, fast)


def _write_case(case, folder: Path) -> list[str]:
    paths = []
    for name, doc in zip(("arch", "workload", "mapping"), case, strict=True):
        path = folder / f"{name}.yaml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        paths.append(str(path))
    return paths


def test_cli_no_fast_forward_gives_the_same_report(tmp_path):
    paths = _write_case(reduction(), tmp_path)
    docs = []
    for extra in ([], ["--no-fast-forward"]):
        out = subprocess.run(
            [sys.executable, "-m", "cyclesim", "run", *paths, "--json", *extra],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        ).stdout
        docs.append(json.loads(out))
    fast, full = docs
    assert fast["fast_forward"]["jumps"] > 0 and fast["fast_forward"]["cycles_skipped"] > 0
    assert full["fast_forward"] == {
        "jumps": 0,
        "periods": 0,
        "cycles_skipped": 0,
        "segments_skipped": 0,
        "off_because": "",  # not a limit of the plan: the caller turned it off
    }
    for doc in docs:
        for key in ("events", "wall_seconds", "fast_forward"):
            del doc[key]
    assert fast == full


def test_verbose_says_what_fast_forward_skipped_or_that_it_skipped_nothing(tmp_path, capsys):
    """-v on run and explain: the skip in numbers when it fired, why nothing was skipped when it
    did not (explain said nothing at all), and that it was off with --no-fast-forward."""
    from cyclesim.cli import main

    paths = _write_case(reduction(), tmp_path)
    assert main(["-v", "run", *paths, "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "cyclesim: fast-forward skipped " in err and " jumps)" in err
    assert main(["-v", "run", *paths, "--no-progress", "--no-fast-forward"]) == 0
    assert "fast-forward off (--no-fast-forward)" in capsys.readouterr().err
    worked = ROOT / "tests" / "cases" / "worked" / "03_single_buffer"
    files = [str(worked / f"{part}.yaml") for part in ("arch", "workload", "mapping")]
    assert main(["-v", "explain", *files, "--no-verify", "--no-progress"]) == 0
    assert "fast-forward skipped nothing" in capsys.readouterr().err


def test_verbose_and_json_say_why_fast_forward_stayed_off(capsys):
    """A DRAM model's bank state is absolute: fast-forward skips only periods without DRAM
    requests, and this layer's fills and write-backs read or write DRAM all the time; -v and
    --json say so by name (not a list of every possible reason)."""
    import json

    from cyclesim.cli import main

    files = [
        str(ROOT / "hw_models/tpu_like_ddr4.yaml"),
        str(ROOT / "examples/resnet50_dram/workload.yaml"),
        str(ROOT / "examples/resnet50_dram/mapping.yaml"),
    ]
    assert main(["-v", "run", *files, "--no-progress", "--json"]) == 0
    out, err = capsys.readouterr()
    assert "fast-forward stayed off: this replay has DRAM requests in every period" in err
    assert json.loads(out)["fast_forward"]["off_because"] == "DRAM requests in every period"
