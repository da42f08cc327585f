"""The replay places tile slots and intermediates through an L1 allocator.

Hand-derived: a 4096-B L1 with 1024 B reserved below and 32-B alignment. Every tile is
rounded up to 32 B per slot; CBs go bottom-up from 1024 in the order nodes take their first
slot, intermediates per policy (heap: top-down from 4096).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from replay_helpers import matvec_einsum

from cyclesim.analysis.simulate import replay
from cyclesim.cli import main
from cyclesim.engine.l1 import L1ReplayError
from cyclesim.errors import EngineError, SpecError
from cyclesim.spec import (
    architecture_from_dict,
    load_architecture,
    load_mapping,
    load_workload,
    mapping_from_dict,
    workload_from_dict,
)

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "l1_replay"
ALLOCATOR = {"l1_size_bytes": 4096, "unreserved_base_bytes": 1024, "alignment_bytes": 32}


def _ports(prefix: str) -> list[dict]:
    return [
        {"name": f"{prefix}_rd", "kind": "read", "width_bits": 64},
        {"name": f"{prefix}_wr", "kind": "write", "width_bits": 64},
    ]


def arch(policy: str = "heap", allocator: dict | None = None, double_buffered=("A",)) -> dict:
    """DRAM above a 4096-B L1 with an allocator; A double-buffered by default."""
    alloc = dict(ALLOCATOR, policy=policy) if allocator is None else allocator
    return {
        "name": "tiny_l1",
        "pe_array": {"dims": {"X": 1}},
        "memories": [
            {"name": "DRAM", "size_bits": None, "ports": _ports("dram")},
            {
                "name": "L1",
                "size_bits": 4096 * 8,
                "double_buffered": list(double_buffered),
                "ports": _ports("l1"),
                "allocator": alloc,
            },
        ],
    }


TENSORS = {
    "A": {"bits_per_value": 16},
    "B": {"bits_per_value": 16},
    "T": {"bits_per_value": 16, "partial_sum_bits": 32},
    "W": {"bits_per_value": 16},
    "Z": {"bits_per_value": 16, "partial_sum_bits": 32},
}
MATVEC = {
    "tensors": {t: TENSORS[t] for t in ("A", "B", "Z")},
    "einsums": [matvec_einsum(4, 4)],
}
# Z in L1 (4 x 32 b = 16 B), B whole (4 x 16 b = 8 B), A one row per m (8 B, two slots)
MATVEC_MAPPING = {
    "loop_tree": [
        {"type": "storage", "memory": "DRAM", "tensors": ["A", "B", "Z"]},
        {"type": "storage", "memory": "L1", "tensors": ["Z"]},
        {"type": "storage", "memory": "L1", "tensors": ["B"]},
        {"type": "temporal", "rank": "m", "bound": 4},
        {"type": "storage", "memory": "L1", "tensors": ["A"]},
        {"type": "temporal", "rank": "k", "bound": 4},
        {"type": "compute", "einsum": "matvec"},
    ]
}
# T = A.B (producer), Z = T*W (consumer); T kept in L1 above the split: an intermediate
CHAIN = {
    "tensors": TENSORS,
    "einsums": [
        MATVEC["einsums"][0]
        | {"name": "producer", "outputs": [{"tensor": "T", "projection": ["m"]}]},
        {
            "name": "consumer",
            "ranks": {"m": 4},
            "inputs": [{"tensor": "T", "projection": ["m"]}, {"tensor": "W", "projection": ["m"]}],
            "outputs": [{"tensor": "Z", "projection": ["m"]}],
        },
    ],
}
CHAIN_MAPPING = {
    "loop_tree": [
        {"type": "storage", "memory": "DRAM", "tensors": ["A", "B", "T", "W", "Z"]},
        {"type": "storage", "memory": "L1", "tensors": ["T"]},
        {
            "type": "sequential",
            "branches": [
                [
                    {"type": "storage", "memory": "L1", "tensors": ["A", "B"]},
                    {"type": "temporal", "rank": "m", "bound": 4},
                    {"type": "temporal", "rank": "k", "bound": 4},
                    {"type": "compute", "einsum": "producer"},
                ],
                [
                    {"type": "storage", "memory": "L1", "tensors": ["W", "Z"]},
                    {"type": "temporal", "rank": "m", "bound": 4},
                    {"type": "compute", "einsum": "consumer"},
                ],
            ],
        },
    ]
}


def run(arch_d: dict, workload: dict, mapping: dict, **kw):
    a = architecture_from_dict(arch_d, "arch.yaml")
    w = workload_from_dict(workload, "workload.yaml")
    return replay(a, w, mapping_from_dict(mapping, a, w, "mapping.yaml"), progress=False, **kw)


def run_example(mapping: str, **kw):
    a = load_architecture(str(EXAMPLE / "arch.yaml"))
    w = load_workload(str(EXAMPLE / "workload.yaml"))
    return replay(a, w, load_mapping(str(EXAMPLE / mapping), a, w), progress=False, **kw)


def placements(res) -> dict[str, tuple]:
    """buffer -> (kind, region, address, bytes per bank) of its allocation."""
    log = res.l1_log
    rows = log[log["action"] == "alloc"]
    return {
        r.buffer: (r.kind, r.region, int(r.address), int(r.size_bytes)) for r in rows.itertuples()
    }


def test_tile_slots_are_circular_buffers_bottom_up_in_the_order_they_are_taken():
    # all three nodes take their first slot at cycle 0, in loop-tree order: Z (16 B -> 32),
    # B (8 B -> 32), A (8 B x 2 slots -> 2 pages of 32); slot 1 of A sits at 1088 + 32
    res = run(arch(), MATVEC, MATVEC_MAPPING)
    assert placements(res) == {
        "Z@L1": ("cb", "stack", 1024, 32),
        "B@L1": ("cb", "stack", 1056, 32),
        "A@L1": ("cb", "stack", 1088, 64),
    }
    assert (res.l1_log["cycle"][res.l1_log["action"] == "alloc"] == 0).all()
    peak = res.l1_peak.iloc[0]
    assert (peak.peak_used_bytes, peak.peak_cb_end, peak.headroom_bytes) == (128, 1152, 3072 - 128)


def test_an_output_that_only_receives_finished_values_is_placed_and_shown_at_final_width():
    """MATVEC with a register file under L1 that keeps Z while k runs inside it: each Z[m] is
    finished in reg before m moves on, so Z@L1 only ever receives final 16-b values. The
    capacity check sizes its tile 4 x 16 b = 8 B (NodePlan.stored_bits); L1 placed it at the
    partial-sum width, 4 x 32 b = 16 B, and the traces' buffer bits said 128 per tile where
    the replay writes 64 into it. With 4-B alignment: Z 8 B at 1024, B 8 B at 1032, A 2 x 8 B
    at 1040."""
    from cyclesim.results.activity_build import build_activity

    a = arch(allocator=dict(ALLOCATOR, alignment_bytes=4))
    a["memories"].append({"name": "reg", "size_bits": None, "ports": _ports("reg")})
    tree = [dict(n) for n in MATVEC_MAPPING["loop_tree"]]
    tree.insert(-2, {"type": "storage", "memory": "reg", "tensors": ["Z"]})
    res = run(a, MATVEC, {"loop_tree": tree}, trace=True)
    widths = {n.label(): n.stored_bits for n in res.raw.plan.nodes}
    assert (widths["Z@L1"], widths["Z@reg"]) == (16, 32)  # the PE array accumulates in reg
    assert placements(res) == {
        "Z@L1": ("cb", "stack", 1024, 8),
        "B@L1": ("cb", "stack", 1032, 8),
        "A@L1": ("cb", "stack", 1040, 16),
    }
    tile_bits = {b.label: b.tile_bits for b in build_activity(res).buffers}
    assert (tile_bits["Z@L1"], tile_bits["Z@reg"]) == (4 * 16, 32)
    # what the replay moves into Z@L1: 4 final values of 16 b
    z_l1 = res.detailed_accesses.query("memory == 'L1' and tensor == 'Z' and action == 'write'")
    assert int(z_l1.bits.sum()) == 4 * 16


def test_every_buffer_is_freed_when_its_node_is_done():
    res = run(arch(), MATVEC, MATVEC_MAPPING)
    log = res.l1_log
    assert int(log["used_bytes"].iloc[-1]) == 0
    assert set(log[log["action"] == "free"]["buffer"]) == {"Z@L1", "B@L1", "A@L1"}
    # A's last row is released when the PE array finishes with it, before Z is written back
    a_done = log[(log["buffer"] == "A@L1") & (log["action"] != "alloc")]["cycle"].min()
    assert 0 < a_done <= res.raw.rec.last_step_end < res.cycles


@pytest.mark.parametrize(
    ("policy", "t_placement", "a_address"),
    [
        ("heap", ("intermediate", "heap", 4096 - 32, 32), 1024),  # top-down heap
        ("stack", ("intermediate", "stack", 1024, 32), 1056),  # first on the stack, CBs above
        ("pool", ("intermediate", "pool", 4096 - 32, 32), 1024),  # in a 32-B pool at the top
    ],
)
def test_an_intermediate_kept_above_the_split_is_placed_by_policy(policy, t_placement, a_address):
    res = run(arch(policy, double_buffered=()), CHAIN, CHAIN_MAPPING)
    got = placements(res)
    assert got["T@L1"] == t_placement
    # CBs of both Einsums in loop-tree order (the consumer's W is prefetched at cycle 0)
    assert [got[n][2] for n in ("A@L1", "B@L1", "W@L1", "Z@L1")] == [
        a_address + 32 * i for i in range(4)
    ]
    t = res.l1_log[res.l1_log["buffer"] == "T@L1"]
    freed = t[t["action"].isin(["free", "retire"])]["cycle"].max()
    assert freed >= res.raw.rec.last_step_end  # lives until the consumer's last use


def test_a_tile_that_does_not_fit_stops_the_run_with_tt_metals_facts():
    # 3072 B above the firmware; B's whole vector of 1600 values (3200 B) does not fit
    workload = {
        "tensors": {
            "A": {"bits_per_value": 16},
            "B": {"bits_per_value": 16},
            "Z": {"bits_per_value": 16},
        },
        "einsums": [
            {
                "name": "matvec",
                "ranks": {"m": 2, "k": 1600},
                "inputs": [
                    {"tensor": "A", "projection": ["m", "k"]},
                    {"tensor": "B", "projection": ["k"]},
                ],
                "outputs": [{"tensor": "Z", "projection": ["m"]}],
            }
        ],
    }
    mapping = {
        "loop_tree": [
            {"type": "storage", "memory": "DRAM", "tensors": ["A", "Z"]},
            {"type": "storage", "memory": "L1", "tensors": ["B"]},
            {"type": "temporal", "rank": "m", "bound": 2},
            {"type": "temporal", "rank": "k", "bound": 1600},
            {"type": "storage", "memory": "L1", "tensors": ["A"]},
            {"type": "compute", "einsum": "matvec"},
        ]
    }
    a = arch(allocator=dict(ALLOCATOR, l1_size_bytes=4096))
    a["memories"][1]["size_bits"] = 4096 * 8
    with pytest.raises(L1ReplayError) as info:
        run(a, workload, mapping)
    err = info.value
    assert isinstance(err, EngineError)
    f = err.failure
    assert (f.cycle, f.memory, f.tensor, f.component) == (0, "L1", "B", "before the run")
    assert f.facts["reason"] == "out_of_memory"
    assert (f.facts["size_bytes"], f.facts["bank_size"], f.facts["largest_free_block"]) == (
        3200,
        3072,
        3072,
    )
    assert str(err).startswith("L1 allocation in memory 'L1' failed at cycle 0")
    assert "Out of Memory: Not enough space to allocate 3200 B L1 buffer" in str(err)


def test_the_example_fits_with_hand_derived_placements():
    # AO block 32 x 512 x 4 B = 64 KiB x 2 slots on the heap top; CBs from 103712 upward:
    # I 32 x 512 x 2 B x 2 slots, W0 and W1 512 x 512 x 2 B, O 32 x 512 x 4 B x 2 slots
    res = run_example("mapping.yaml")
    got = placements(res)
    assert got["AO@L1"] == ("intermediate", "heap", 1499136 - 131072, 131072)
    assert [got[n][2] for n in ("I@L1", "W0@L1", "W1@L1", "O@L1")] == [
        103712,
        103712 + 65536,
        103712 + 65536 + 524288,
        103712 + 65536 + 2 * 524288,
    ]
    peak = res.l1_peak.iloc[0]
    assert (peak.peak_used_bytes, peak.peak_cycle, peak.headroom_bytes) == (1376256, 0, 19168)
    assert res.to_json_dict()["l1"]["peak"][0]["peak_used_bytes"] == 1376256


def test_the_example_that_does_not_fit_stops_when_the_consumer_takes_its_first_ao_slot():
    with pytest.raises(L1ReplayError) as info:
        run_example("mapping_too_big.yaml")
    f = info.value.failure
    assert f.cycle > 0 and f.component == "fill of AO@L1:consumer" and f.tensor == "AO"
    facts = f.facts
    assert facts["reason"] == "clash"
    # CB region ends at 1348896; the consumer's AO CB (32 x 512 x 2 B x 2) would end at 1414432,
    # past the AO intermediate at 1368064
    assert (facts["address"], facts["cb_region_end"], facts["lowest_heap_address"]) == (
        1348896,
        1414432,
        1368064,
    )
    assert facts["lowest_heap_buffer"] == "AO@L1"
    msg = str(info.value)
    assert f"failed at cycle {f.cycle} (fill of AO@L1:consumer, tensor AO)" in msg
    assert "clash with L1 buffers on core range {[(x=0,y=0) - (x=7,y=7)]}" in msg


def test_the_cli_prints_one_message_exits_1_and_writes_no_trace(tmp_path, capsys):
    vcd = tmp_path / "run.vcd"
    files = [str(EXAMPLE / f) for f in ("arch.yaml", "workload.yaml", "mapping_too_big.yaml")]
    # exit 1: the run found what the user asked about (the mapping does not fit L1), not bad input
    assert main(["run", *files, "--no-progress", "--vcd", str(vcd)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("cyclesim: L1 allocation in memory 'L1' failed at cycle ")
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not vcd.exists()


def test_traces_carry_the_l1_occupancy_counter(tmp_path):
    from cyclesim.views.perfetto_json import write_chrome_json
    from cyclesim.views.vcd import write_vcd

    res = run(arch(), MATVEC, MATVEC_MAPPING, trace=True)
    assert res.raw.rec.l1_occupancy[-1][1:] == ("L1", 0)
    vcd = tmp_path / "t.vcd"
    write_vcd(res, vcd)
    text = vcd.read_text()
    assert "$scope module allocator $end" in text and "used_bytes" in text
    ident = next(ln.split()[3] for ln in text.splitlines() if ln.endswith("used_bytes $end"))
    values = [int(ln[1:].split()[0], 2) for ln in text.splitlines() if ln.endswith(f" {ident}")]
    assert max(values) == 128
    js = tmp_path / "t.json"
    write_chrome_json(res, js)
    events = json.loads(js.read_text())["traceEvents"]
    counter = [e["args"]["bytes"] for e in events if e["name"] == "L1 allocator occupancy"]
    assert counter[0] == 128 and counter[-1] == 0


def test_without_an_allocator_nothing_is_placed_or_recorded():
    a = arch()
    del a["memories"][1]["allocator"]
    res = run(a, MATVEC, MATVEC_MAPPING, trace=True)
    assert res.raw.rec.l1_log is None and res.raw.rec.l1_occupancy is None
    assert res.l1_log.empty and res.l1_peak.empty and "l1" not in res.to_json_dict()


def test_a_bad_allocator_is_refused_before_the_run_naming_its_field():
    with pytest.raises(SpecError) as info:
        run(arch(allocator=dict(ALLOCATOR, policy="lifo")), MATVEC, MATVEC_MAPPING)
    assert "memories[1].allocator.policy" in str(info.value)
