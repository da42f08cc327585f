"""Hand-derived replays of the precise rules of docs/design.md, one small case per rule.

Convention: [a, b) are the cycles a..b-1; a tile whose last burst ends at b is usable at b.
"""

from __future__ import annotations

import copy
import json

import pandas as pd
import pytest
from replay_helpers import (
    ROOT,
    case_files,
    gemm_einsum,
    inputs_from_folder,
    matvec_einsum,
    memory,
    port,
)

from cyclesim.analysis.simulate import replay
from cyclesim.cli import main
from cyclesim.spec.override import architecture_with_field

MATVEC = {
    "tensors": {"A": {"bits_per_value": 8}, "B": {"bits_per_value": 8}, "Z": {"bits_per_value": 8}},
    "einsums": [matvec_einsum(4, 4)],
}


def single_buffer_arch(abuf_slots: int = 1) -> dict:
    """Worked example 03: A streams from DRAM at 4 b/cycle into a 32-b abuf tile per row m."""
    return {
        "name": "matvec_stream",
        "pe_array": {"dims": {"X": 1}},
        "memories": [
            memory(
                "DRAM",
                None,
                ["A", "Z"],
                [port("dram_rd", "read", 4, 8), port("dram_wr", "write", 8)],
            ),
            memory(
                "wbuf", 32, ["B"], [port("wbuf_rd", "read", 64, 8), port("wbuf_wr", "write", 64, 8)]
            ),
            memory(
                "acc", 32, ["Z"], [port("acc_rd", "read", 64, 8), port("acc_wr", "write", 64, 8)]
            ),
            memory(
                "abuf",
                32 * abuf_slots,
                ["A"],
                [port("abuf_rd", "read", 64, 8), port("abuf_wr", "write", 64, 8)],
                double_buffered=abuf_slots == 2,
            ),
        ],
    }


STREAM_MAPPING = {
    "loop_tree": [
        {"type": "storage", "memory": "DRAM", "tensors": ["A", "Z"]},
        {"type": "storage", "memory": "wbuf", "tensors": ["B"]},
        {"type": "storage", "memory": "acc", "tensors": ["Z"]},
        {"type": "temporal", "rank": "m", "bound": 4},
        {"type": "storage", "memory": "abuf", "tensors": ["A"]},
        {"type": "temporal", "rank": "k", "bound": 4},
        {"type": "compute", "einsum": "matvec"},
    ]
}


def test_double_buffering_overlaps_fill_and_compute(replay_dicts):
    # Example 03 with two slots in abuf. T = 8 (32 b at 4 b/cycle), C = 4.
    # A0 [0,8); tile 0 [8,12) while A1 fills [8,16); tile 1 [16,20) while A2 fills [16,24)
    # (tile 0's slot is free since 12); tile 2 [24,28); A3 [24,32); tile 3 [32,36); Z [36,40).
    # 40 = onload 8 + ideal 16 + stall 3 x (8 - 4) = 12 + offload 4: max(T, C) per tile.
    res = replay_dicts(single_buffer_arch(2), MATVEC, STREAM_MAPPING)
    assert (res.cycles, res.onload_cycles, res.stall_cycles, res.offload_cycles) == (40, 8, 12, 4)
    assert res.stall_cycles_by_cause() == {"bandwidth": 12}


def test_single_buffer_serialises_fill_and_compute(replay_dicts):
    # Same schedule, one slot: T + C per tile, 4 x 12 + 4 = 52 (worked example 03).
    res = replay_dicts(single_buffer_arch(1), MATVEC, STREAM_MAPPING)
    assert (res.cycles, res.stall_cycles) == (52, 24)


def test_two_tensors_contend_for_one_port(replay_dicts):
    # A and B both stream per row through dram_rd (8 b/cycle, 8-b bursts): per row m, A's tile is
    # 4 values (32 b = 4 bursts) and B's whole vector (32 b) is refilled too because B's buffer
    # sits below m under `strict`. Round-robin interleaves A, B, A, B...: each tile lands after
    # 8 cycles instead of 4; the PE's wait for A is half bandwidth, half contention with B.
    arch = {
        "name": "shared_port",
        "pe_array": {"dims": {"X": 1}},
        "memories": [
            memory(
                "DRAM",
                None,
                ["A", "B", "Z"],
                [port("dram_rd", "read", 8), port("dram_wr", "write", 8)],
            ),
            memory("acc", 8, ["Z"], [port("acc_rd", "read", 64), port("acc_wr", "write", 64)]),
            memory(
                "buf", 64, ["A", "B"], [port("buf_rd", "read", 64), port("buf_wr", "write", 64)]
            ),
        ],
    }
    mapping = {
        "loop_tree": [
            {"type": "storage", "memory": "DRAM", "tensors": ["A", "B", "Z"]},
            {"type": "temporal", "rank": "m", "bound": 4},
            {"type": "storage", "memory": "acc", "tensors": ["Z"]},
            {"type": "storage", "memory": "buf", "tensors": ["A", "B"]},
            {"type": "temporal", "rank": "k", "bound": 4},
            {"type": "compute", "einsum": "matvec"},
        ]
    }
    res = replay_dicts(arch, MATVEC, mapping, reuse="strict")
    # onload: bursts A [0,1) B [1,2) A [2,3) B [3,4) A [4,5) B [5,6) A [6,7) B [7,8): A is
    # ready at 7, B at 8, so B binds and all 8 cycles are B's (DESIGN "Several tiles awaited
    # at once"; before, they were split by operand order: A 4 + 3, B 1): its own 4 bursts are
    # bandwidth, A's 4 bursts in between contention with A's fill.
    onload = {
        (r.cause, r.tensor, r.competitor): int(r.cycles)
        for r in res.stalls[res.stalls.phase == "onload"].itertuples()
    }
    assert res.onload_cycles == 8
    assert onload == {
        ("bandwidth", "B", None): 4,
        ("contention", "B", "fill of A@buf"): 4,
    }
    # compute: one slot per tensor in buf, so row m+1's fills start when row m's 4 steps end:
    # 3 more rows x 8 cycles of fills; Z's 1-value drains share no port with them. Each row's
    # wait is B's as in the onload (B binds): 3 x (4 bandwidth + 4 contention with A).
    assert res.ideal_compute_cycles == 16
    assert res.stall_cycles == 24
    assert res.stall_cycles_by_cause() == {"contention": 12, "bandwidth": 12}


def test_partial_sums_are_written_back_and_reloaded(replay_dicts):
    # Z[m] += A[m,k] * B[k], M = K = 2, with k OUTSIDE m and acc holding one Z value (one slot):
    # acc's tile changes every step; the second visit of each Z element (k = 1) reloads it.
    # Ports 64 b/cycle, latency 0; Z partial sums 16 b, final 8 b.
    #   A (4 values, 32 b) and B (2 values, 16 b) fill buf: A [0,1), B [1,2) -> first step at 2.
    #   step (k0,m0) [2,3); its Z tile drains (partial, 16 b) [3,4); slot free at 4
    #   step (k0,m1) [4,5) (first visit: no reload); drain [5,6)
    #   (k1,m0): slot free at 6, reload of the partial sum [6,7), step [7,8), final drain [8,9)
    #   (k1,m1): slot at 9, reload [9,10), step [10,11), final drain [11,12). End 12.
    # 12 = onload 2 + ideal 4 + stall 5 + offload 1; stall = 3 buffer_full ([3,4),[5,6),[8,9))
    #   + 2 bandwidth (the reloads [6,7), [9,10)).
    arch = {
        "name": "psum",
        "pe_array": {"dims": {"X": 1}},
        "memories": [
            memory("DRAM", None, None, [port("rd", "read", 64), port("wr", "write", 64)]),
            memory("buf", 128, ["A", "B"], [port("rd", "read", 64), port("wr", "write", 64)]),
            memory("acc", 16, ["Z"], [port("rd", "read", 64), port("wr", "write", 64)]),
        ],
    }
    workload = copy.deepcopy(MATVEC)
    workload["einsums"][0]["ranks"] = {"m": 2, "k": 2}
    workload["tensors"]["Z"] = {"bits_per_value": 8, "partial_sum_bits": 16}
    mapping = {
        "loop_tree": [
            {"type": "storage", "memory": "DRAM", "tensors": ["A", "B", "Z"]},
            {"type": "storage", "memory": "buf", "tensors": ["A", "B"]},
            {"type": "temporal", "rank": "k", "bound": 2},
            {"type": "temporal", "rank": "m", "bound": 2},
            {"type": "storage", "memory": "acc", "tensors": ["Z"]},
            {"type": "compute", "einsum": "matvec"},
        ]
    }
    res = replay_dicts(arch, workload, mapping)
    assert (
        res.cycles,
        res.onload_cycles,
        res.ideal_compute_cycles,
        res.stall_cycles,
        res.offload_cycles,
    ) == (12, 2, 4, 5, 1)
    assert res.stall_cycles_by_cause() == {"buffer_full": 3, "bandwidth": 2}
    acc = {
        (r.memory, r.action, r.direction): (int(r.values), int(r.bits))
        for r in res.detailed_accesses[res.detailed_accesses.tensor == "Z"].itertuples()
    }
    assert acc[("DRAM", "read", "read_to_below")] == (2, 32)  # two reloads of 16-b partial sums
    assert acc[("DRAM", "write", "write_from_below")] == (4, 2 * 16 + 2 * 8)  # 2 partial + 2 final
    assert acc[("acc", "write", "write_from_above")] == (2, 32)
    assert acc[("acc", "read", "read_to_below")] == (2, 32)  # PE: 4 steps - 2 first visits
    assert acc[("acc", "write", "write_from_below")] == (4, 64)  # PE writes every step


def test_strict_refills_every_iteration_retain_only_on_change(replay_dicts):
    # B[k] sits in buf below the m loop, which does not index B. retain: filled once (4 values);
    # strict (AccelForge): refilled on each of the 4 iterations of m (16 values).
    arch = single_buffer_arch(1)
    arch["memories"][1] = memory(
        "wbuf", 32, ["B"], [port("wbuf_rd", "read", 64, 8), port("wbuf_wr", "write", 64, 8)]
    )
    arch["memories"][0]["tensors"] = ["A", "B", "Z"]
    mapping = copy.deepcopy(STREAM_MAPPING)
    mapping["loop_tree"][0]["tensors"] = ["A", "B", "Z"]
    mapping["loop_tree"].insert(4, {"type": "storage", "memory": "wbuf", "tensors": ["B"]})
    del mapping["loop_tree"][1]
    reads = {}
    for reuse in ("retain", "strict"):
        res = replay_dicts(arch, MATVEC, mapping, reuse=reuse)
        acc = res.accesses
        reads[reuse] = int(acc[(acc.tensor == "B") & (acc.memory == "DRAM")]["values"].iloc[0])
    assert reads == {"retain": 4, "strict": 16}


def test_dma_engine_adds_setup_and_limits_channels(replay_dicts):
    # Example 03 with the DRAM -> abuf link served by a DMA engine with 3 setup cycles:
    # each A fill becomes 3 + 8 = 11 cycles; one slot: 4 x (11 + 4) + 4 = 64.
    arch = single_buffer_arch(1)
    arch["dma_engines"] = [
        {
            "name": "dma0",
            "links": [{"parent": "DRAM", "child": "abuf"}],
            "channels": 1,
            "setup_cycles": 3,
        }
    ]
    res = replay_dicts(arch, MATVEC, STREAM_MAPPING)
    assert res.cycles == 64
    assert res.stall_cycles_by_cause() == {"bandwidth": 24, "latency": 9}


def test_pipeline_depth_delays_the_last_write(replay_dicts):
    # Example 03 with a 5-cycle PE pipeline: Z's write-back waits 5 cycles after the last step.
    arch = single_buffer_arch(1)
    arch["pe_array"]["pipeline_depth_cycles"] = 5
    res = replay_dicts(arch, MATVEC, STREAM_MAPPING)
    assert (res.cycles, res.offload_cycles) == (57, 9)


PIPELINED_WRITE_BACK = ROOT / "tests" / "cases" / "pipelined_write_back"


def test_pipeline_delay_starts_when_the_tile_is_done(tmp_path, capsys):
    # "Pipeline depth delays every write of a PE result by that many cycles": a tile's results
    # land in its buffer `depth` cycles after the PE array is done with it, whatever its
    # write-back is doing then; the write-back starts at max(landed, previous write-back end).
    # tests/cases/pipelined_write_back: Z[m] = sum_k A[m,k] B[k], m = 4 tiles of one 8-bit Z
    # value in acc (2 slots), k = 4 one-cycle MACs per tile, a 3-cycle PE pipeline, Z's
    # write-back 8 cycles (8 b through DRAM.dram_wr at 1 b/cycle), one tile at a time.
    # Onload 2 (A then B through dram_rd, one cycle each).
    #   tile 0: computes 2..6, lands 9, written back 9..17 (its slot frees at 17)
    #   tile 1: computes 6..10 (second slot), lands 13; written back 17..25 (frees at 25)
    #   tile 2: waits for tile 0's slot 10..17, computes 17..21, lands 24; written back 25..33
    #   tile 3: waits for tile 1's slot 21..25, computes 25..29, lands 32; written back 33..41
    # Write-backs start at 9, 17, 25, 33; 41 cycles = onload 2 + ideal 16 + stall 11
    # (buffer_full 10..17 and 21..25) + offload 12 (29..41: the write-back's bandwidth; tile 3's
    # results landed at 32, before the write-back could take it, so no pipeline cycle is left).
    # (Before, a tile's 3 cycles started only when the write-back reached it: write-backs at
    # 9, 20, 31, 42 and 50 cycles.)
    files = case_files(PIPELINED_WRITE_BACK)
    events = tmp_path / "events.csv"
    assert main(["run", *files, "--events", str(events)]) == 0  # as a user runs it
    out = capsys.readouterr().out
    for line in ("cycles                      41", "stall                     11", "offload                   12"):  # fmt: skip
        assert line in out
    assert "offload bandwidth             12" in out and "latency" not in out
    assert "compute buffer_full           11" in out and "[cycles 10..25]" in out
    table = pd.read_csv(events)
    write_backs = table[table.kind == "write-back"]
    assert list(zip(write_backs.start, write_backs.end, strict=True)) == [
        (9, 17),
        (17, 25),
        (25, 33),
        (33, 41),
    ]
    assert main(["run", *files, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["cycles"], doc["onload_cycles"], doc["stall_cycles"], doc["offload_cycles"]) == (
        41,
        2,
        11,
        12,
    )
    causes = {(s["phase"], s["cause"]): s["cycles"] for s in doc["stalls"]}
    assert causes == {
        ("onload", "contention"): 1,
        ("onload", "bandwidth"): 1,
        ("compute", "buffer_full"): 11,
        ("offload", "bandwidth"): 12,
    }


def test_only_the_pipeline_cycles_left_are_waited_for(replay_dicts):
    # The same case with a 10-cycle pipeline: a tile that lands after the write-back reaches it
    # is waited for, but only for the cycles its results are still in the pipeline.
    #   tile 0: computes 2..6, lands 16, written back 16..24
    #   tile 1: computes 6..10, lands 20, written back 24..32 (landed before the write-back
    #           reached it: no wait)
    #   tile 2: waits for tile 0's slot 10..24, computes 24..28, lands 38; the write-back
    #           reaches it at 32 and waits 32..38 (6 of the 10 cycles), written back 38..46
    #   tile 3: waits for tile 1's slot 28..32, computes 32..36, lands 46; written back 46..54
    # 54 cycles = onload 2 + ideal 16 + stall 18 (buffer_full 10..24, 28..32) + offload 18:
    # 36..38 the write-back waits for tile 2's results (latency: the PE pipeline), 38..54 it
    # moves tiles 2 and 3 (bandwidth 16). (Before: 10 cycles per write-back after reaching
    # its tile, write-backs at 16, 34, 52, 70 and 78 cycles.)
    a, w, m = inputs_from_folder(PIPELINED_WRITE_BACK)
    a = architecture_with_field(a, "pe_array.pipeline_depth_cycles", 10)
    res = replay(a, w, m, progress=False, trace=True)
    drains = res.events.query("kind == 'write-back'")
    assert list(drains.start) == [16, 24, 38, 46]
    assert (res.cycles, res.stall_cycles, res.offload_cycles) == (54, 18, 18)
    assert res.stall_cycles_by_cause() == {"buffer_full": 18}
    assert res.stall_cycles_by_cause(("offload",)) == {"latency": 2, "bandwidth": 16}
    spans = res.stall_spans
    (pipeline,) = spans[(spans.phase == "offload") & (spans.cause == "latency")].itertuples()
    assert (pipeline.start, pipeline.end) == (36, 38)


def test_no_multicast_moves_one_copy_per_position(replay_dicts):
    # B[k,n] lives in a per-PE register below a spatial loop over m (dim X, 2 PEs), which does
    # not index B. By default both PEs get B's 4 values from one read of buf (multicast); with
    # pe_array.no_multicast {X: [B]} (AccelForge's may_reuse: ~B) buf is read once per PE: 8.
    arch = {
        "name": "fanout",
        "pe_array": {"dims": {"X": 2}},
        "memories": [
            memory("DRAM", None, None, [port("rd", "read", 64), port("wr", "write", 64)]),
            memory("buf", None, None, [port("rd", "read", 64), port("wr", "write", 64)]),
            memory(
                "reg",
                None,
                ["B"],
                [port("rd", "read", 64), port("wr", "write", 64)],
                shared_across=[],
            ),
        ],
    }
    workload = {
        "default_bits_per_value": 8,
        "einsums": [gemm_einsum(2, 2, 2)],
    }
    mapping = {
        "loop_tree": [
            {"type": "storage", "memory": "DRAM", "tensors": ["A", "B", "Z"]},
            {"type": "storage", "memory": "buf", "tensors": ["A", "B", "Z"]},
            {"type": "spatial", "rank": "m", "bound": 2, "dim": "X"},
            {"type": "storage", "memory": "reg", "tensors": ["B"]},
            {"type": "temporal", "rank": "n", "bound": 2},
            {"type": "temporal", "rank": "k", "bound": 2},
            {"type": "compute", "einsum": "gemm"},
        ]
    }
    reads = {}
    for restricted in (False, True):
        if restricted:
            arch["pe_array"]["no_multicast"] = {"X": ["B"]}
        acc = replay_dicts(arch, workload, mapping).detailed_accesses
        rows = acc[(acc.tensor == "B") & (acc.memory == "buf") & (acc.direction == "read_to_below")]
        writes = acc[
            (acc.tensor == "B") & (acc.memory == "reg") & (acc.direction == "write_from_above")
        ]
        reads[restricted] = (int(rows["values"].sum()), int(writes["values"].sum()))
    assert reads == {False: (4, 8), True: (8, 8)}


def test_vector_pe_runs_several_innermost_iterations_per_cycle():
    # Worked example 01 with macs_per_pe_per_cycle: 2. The innermost loop k(4) runs two
    # iterations per step: 2 x 2 x 2 = 8 steps. A step reads 2 A values (k indexes A), 2 B
    # values and read-modify-writes ONE Z value (both products reduce into it): buf_rd carries
    # 16 + 16 + 8 = 40 b <= 64, one cycle per step. Onload as before (4), steps [4,12), Z's
    # write-back [12,13): 13 = 4 + 8 + 0 + 1; still 16 MACs.
    from replay_helpers import WORKED, inputs_from_folder

    from cyclesim.analysis.simulate import replay
    from cyclesim.spec import architecture_from_dict
    from cyclesim.spec.yamlio import read_yaml

    a, w, m = inputs_from_folder(WORKED / "01_compute_bound")
    data, _, _ = read_yaml(str(WORKED / "01_compute_bound" / "arch.yaml"))
    data["pe_array"]["macs_per_pe_per_cycle"] = 2
    res = replay(architecture_from_dict(data, "arch.yaml"), w, m, progress=False)
    assert (
        res.cycles,
        res.onload_cycles,
        res.ideal_compute_cycles,
        res.stall_cycles,
        res.offload_cycles,
    ) == (13, 4, 8, 0, 1)
    assert res.macs == 16
    acc = {(r.tensor, r.memory, r.action): int(r.values) for r in res.accesses.itertuples()}
    assert (
        acc[("A", "buf", "read")] == 16
        and acc[("Z", "buf", "write")] == 8
        and acc[("Z", "buf", "read")] == 8
    )


def test_vector_pe_needs_a_divisible_innermost_loop(tmp_path):
    # 4 MACs per cycle on 05's innermost k(4) is fine; 3 is not a divisor: refused, naming both files.
    from replay_helpers import WORKED, inputs_from_folder

    from cyclesim.errors import SpecError
    from cyclesim.schedule import build_plan
    from cyclesim.spec import architecture_from_dict
    from cyclesim.spec.yamlio import read_yaml

    _, w, m = inputs_from_folder(WORKED / "05_narrow_innermost_port")
    data, _, _ = read_yaml(str(WORKED / "05_narrow_innermost_port" / "arch.yaml"))
    data["pe_array"]["macs_per_pe_per_cycle"] = 3
    with pytest.raises(SpecError) as info:
        build_plan(architecture_from_dict(data, "arch.yaml"), w, m)
    assert (
        "multiple of 3" in str(info.value)
        and "mapping.yaml" in str(info.value)
        and "arch.yaml" in str(info.value)
    )
