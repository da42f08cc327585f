"""ZigZag 3.9.1's latency model, reimplemented: reference numbers (docs/reference/zigzag.md §6) and the real peer.

The plain tests need no zigzag-dse: they check our model against the numbers measured with
zigzag-dse 3.9.1 on the Eyeriss-like 4x4 GEMM (B=K=C=100, 32 bit). The `peer` tests run the
installed zigzag-dse on the same files and require every term to be equal.
"""

from __future__ import annotations

import pytest

from cyclesim.checks.zigzag import cases as zc
from cyclesim.checks.zigzag.inputs import DataDirection
from cyclesim.checks.zigzag.latency import Transfer
from cyclesim.checks.zigzag.loading import ZigZagModelError, reduce_ordered
from cyclesim.checks.zigzag.model import evaluate, window_union
from cyclesim.checks.zigzag.read import load_zigzag_inputs
from cyclesim.errors import PeerUnavailable

TH, FH, TL, FL = (
    DataDirection.READ_TO_ABOVE,
    DataDirection.WRITTEN_FROM_ABOVE,
    DataDirection.READ_TO_BELOW,
    DataDirection.WRITTEN_FROM_BELOW,
)
RF32 = {"register_bandwidth_bits": (32, 32)}
TMS = zc.MEMSIZE_TEMPORAL_MAPPINGS

# name -> (accelerator, workload, mapping, temporal mapping or None = ZigZag chooses)
CASES = {
    "issue_large": (zc.eyeriss_accelerator(zc.LARGE_SRAM_BITS), zc.gemm_workload(), zc.spatial_mapping(), TMS["large"]),
    "issue_small": (zc.eyeriss_accelerator(zc.SMALL_SRAM_BITS), zc.gemm_workload(), zc.spatial_mapping(), TMS["small"]),
    "shipped_large": (
        zc.eyeriss_accelerator(zc.LARGE_SRAM_BITS, layout="shipped"), zc.gemm_workload(), zc.spatial_mapping(), TMS["large"],
    ),
    "shipped_small": (
        zc.eyeriss_accelerator(zc.SMALL_SRAM_BITS, layout="shipped"), zc.gemm_workload(), zc.spatial_mapping(), TMS["small"],
    ),
    "issue_large_memories_small_tm": (
        zc.eyeriss_accelerator(zc.LARGE_SRAM_BITS), zc.gemm_workload(), zc.spatial_mapping(), TMS["small"],
    ),
    "rf32_large": (zc.eyeriss_accelerator(zc.LARGE_SRAM_BITS, **RF32), zc.gemm_workload(), zc.spatial_mapping(), TMS["rf32_large"]),
    "rf32_small": (zc.eyeriss_accelerator(zc.SMALL_SRAM_BITS, **RF32), zc.gemm_workload(), zc.spatial_mapping(), TMS["rf32_small"]),
    "rf32_large_memories_small_tm": (
        zc.eyeriss_accelerator(zc.LARGE_SRAM_BITS, **RF32), zc.gemm_workload(), zc.spatial_mapping(), TMS["rf32_small"],
    ),
    # port sharing decides the latency: shipped layout, register files widened so they no longer dominate
    "rf32_shipped_small": (
        zc.eyeriss_accelerator(zc.SMALL_SRAM_BITS, layout="shipped", **RF32), zc.gemm_workload(), zc.spatial_mapping(), TMS["small"],
    ),
    # stride-2 3x3 convolution, 8-bit with 16-bit partial sums
    "conv_s2_3x3": (
        zc.eyeriss_accelerator(zc.LARGE_SRAM_BITS), zc.conv_workload(), zc.spatial_mapping(), zc.CONV_TEMPORAL_MAPPINGS["K4_C4"],
    ),
    # ... with OX unrolled on the array: the input window (ix = 2*ox + fx) is split spatially
    "conv_s2_3x3_ox_spatial": (
        zc.eyeriss_accelerator(zc.LARGE_SRAM_BITS),
        zc.conv_workload(),
        zc.spatial_mapping(("K", 4), ("OX", 4)),
        zc.CONV_TEMPORAL_MAPPINGS["K4_OX4"],
    ),
}  # fmt: skip


@pytest.fixture(scope="module")
def case_files(tmp_path_factory):
    """Write every case's ZigZag files once; return name -> CaseFiles."""
    folder = tmp_path_factory.mktemp("zigzag_cases")
    return {name: zc.write_case(folder, name, *parts) for name, parts in CASES.items()}


def model(files):
    """Our reimplementation on one case."""
    return evaluate(
        load_zigzag_inputs(files.accelerator, files.workload, files.mapping, files.temporal_mapping)
    )


# §6.2 and §6.3: latency_total2 = T + SS_comb + onloading + offloading (no systolic drain here)
REFERENCE_TERMS = [
    # case, total, SS_comb, onloading, offloading, borrowed
    ("issue_large", 250148, 187497, 23, 128, 14993),
    ("issue_small", 250294, 187497, 220, 77, 0),
    ("shipped_large", 250148, 187497, 23, 128, 14993),
    ("shipped_small", 250294, 187497, 220, 77, 0),
    ("issue_large_memories_small_tm", 250294, 187497, 220, 77, 0),
    ("rf32_large", 62650, 0, 23, 127, 14993),
    ("rf32_small", 75341, 12400, 220, 221, 0),
    ("rf32_large_memories_small_tm", 62941, 0, 220, 221, 0),
]


@pytest.mark.parametrize(
    ("case", "total", "stall", "onload", "offload", "borrowed"), REFERENCE_TERMS
)
def test_latency_terms_equal_zigzag_391_reference(
    case_files, case, total, stall, onload, offload, borrowed
):
    result = model(case_files[case])
    # T = 100*100*100 MACs / 16 PEs = 62500 temporal iterations, all PEs busy (no spatial stall)
    assert result.ideal_cycles == 62500
    assert result.ideal_temporal_cycles == 62500
    assert result.spatial_stall_cycles == 0
    assert result.temporal_stall_cycles == stall
    assert result.onloading_cycles == onload
    assert result.offloading_cycles == offload
    assert result.borrowed_cycles == borrowed
    assert result.systolic_drain_cycles == 0
    assert result.latency_total_cycles == total == 62500 + stall + onload + offload


def test_dominant_stall_is_the_narrow_input_register_read(case_files):
    # I read from rf_64B_I to the MAC: 1 element x 32 b over an 8 b/cycle port -> real 4 cycles,
    # allowed 1 (I changes every cycle), N = 62500 -> (4 - 1) x 62499 = 187497
    result = model(case_files["issue_large"])
    port = next(p for p in result.port_stalls if (p.memory, p.port) == ("rf_64B_I", "r_port_1"))
    (transfer,) = port.transfers
    assert (transfer.real_cycles, transfer.allowed_cycles, transfer.period_count) == (4, 1, 62500)
    assert port.stall_cycles == 187497 == result.temporal_stall_cycles


# §6.4: combined stall (+) / slack (-) per port
PORT_STALLS = {
    "issue_large": {("rf_64B_I", "w_port_1"): -52395, ("rf_16B", "rw_port_1"): 187496,
                    ("sram_8KB", "rw_port_1"): -57000, ("sram_8KB", "rw_port_2"): 62498,
                    ("sram_64KB", "w_port_1"): 0, ("dram", "rw_port_1"): 0},
    "issue_small": {("rf_64B_I", "w_port_1"): -12495, ("sram_8KB", "rw_port_1"): 0,
                    ("sram_64KB", "w_port_1"): -600, ("dram", "rw_port_1"): 17150},
    "shipped_large": {("rf_16B", "r_port_1"): 187496, ("sram_8KB", "rw_port_1"): 64873},
    "shipped_small": {("rf_16B", "w_port_1"): 187496, ("sram_8KB", "rw_port_1"): 87448,
                      ("dram", "rw_port_1"): 17150},
    "issue_large_memories_small_tm": {("sram_64KB", "w_port_1"): -57600},
    "rf32_small": {("dram", "rw_port_1"): 12400, ("sram_64KB", "r_port_1"): -49920,
                   ("sram_64KB", "w_port_1"): -49600, ("rf_64B_W", "w_port_1"): -59280},
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(PORT_STALLS))
def test_port_stalls_equal_reference(case_files, case):
    stalls = {(p.memory, p.port): p.stall_cycles for p in model(case_files[case]).port_stalls}
    for port, expected in PORT_STALLS[case].items():
        assert stalls[port] == expected, port


def test_shared_port_stalls_though_each_transfer_fits(case_files):
    # shipped, small, sram_8KB.rw_port_1: fh and th each real 25, allowed 125, N 500 -> SS -49900,
    # MUW 62375; tl and fl real 1, allowed 1, N 62500 -> SS 0, MUW 62499. tl has allowed == period,
    # so the window union is the whole layer (62500): 0 + max(0, -99800 + 249748 - 62500) = 87448
    port = next(p for p in model(case_files["shipped_small"]).port_stalls if p.memory == "sram_8KB")
    assert sorted(t.stall_cycles for t in port.transfers) == [-49900, -49900, 0, 0]
    assert port.window_union_cycles == 62500
    assert port.stall_cycles == 87448


def test_port_sharing_decides_the_latency_with_wide_register_files(case_files):
    # with 32-bit register-file ports nothing else stalls more: SS_comb is the shared sram_8KB port
    result = model(case_files["rf32_shipped_small"])
    worst = max(result.port_stalls, key=lambda p: p.stall_cycles)
    assert (worst.memory, worst.port, worst.stall_cycles) == ("sram_8KB", "rw_port_1", 87448)
    assert result.latency_total_cycles == 62500 + 87448 + 220 + 76


def test_window_union_worked_example():
    # §3.6: I fh (P 500, allowed 100, N 125) and O th (P 2500, allowed 500, N 25) on sram_1M.rw_port_1:
    # in [0, 2500) O occupies [0, 500), I [0,100), [500,600), ..., [2000,2100) -> 900 cycles x 25
    transfers = [
        Transfer("I", "sram_1M", 1, FH, 9, 100, 500, 125),
        Transfer("O", "sram_1M", 2, TH, 9, 500, 2500, 25),
    ]
    assert window_union(transfers) == 22500


def test_reduce_ordered_shrinks_largest_first_down_to_one_tile():
    # surplus 6000 goes to the 5000-cycle transfer first (down to 3), then 3003 to the next
    remaining, reductions = reduce_ordered([5000, 5000, 834], [3, 3, 1], 6000.0)
    assert remaining == [3, 5000 - (6000 - 4997), 834]
    assert reductions == [4997, 1003, 0]
    with pytest.raises(ZigZagModelError, match="reduce_ordered assertion"):
        reduce_ordered([2], [5], 10.0)


def test_double_buffering_is_inferred_from_capacity(case_files):
    # small: the W tile 400 x 32 b = 12800 b fills 78 % of sram_64KB -> single-buffered;
    # large memories with the small TM: the same tile is 2.4 % of 512 KiB -> double-buffered
    single = {
        (d.layer_operand, d.memory)
        for d in model(case_files["issue_small"]).double_buffers
        if not d.double_buffered
    }
    assert single == {("W", "sram_64KB")}
    assert all(
        d.double_buffered for d in model(case_files["issue_large_memories_small_tm"]).double_buffers
    )
    rf32 = {
        (d.layer_operand, d.memory)
        for d in model(case_files["rf32_small"]).double_buffers
        if not d.double_buffered
    }
    assert rf32 == {("O", "sram_1M"), ("I", "sram_1M")}


def test_onloading_large_borrows_bandwidth_for_once_per_layer_transfers(case_files):
    # I: max(I0 fh 20, I1 tl 2) + max(I1 fh 1, I2 tl 3) = 23; W: 20 + max(2, 3) = 23; the 5000-cycle
    # DRAM reads (10000 x 32 b / 64 b) happen once (N == 1) and shrink to one PE tile, ceil(160/64) = 3
    result = model(case_files["issue_large"])
    links = {
        (link.layer_operand, link.lower_memory): link.cycles for link in result.onloading_links
    }
    assert links == {
        ("W", "rf_64B_W"): 20,
        ("W", "sram_64KB"): 3,
        ("I", "rf_64B_I"): 20,
        ("I", "sram_1M"): 3,
    }
    dram = [e for e in result.onloading_entries if e.memory == "dram"]
    assert [(e.unreduced_cycles, e.cycles) for e in dram] == [(5000, 3), (5000, 3)]
    assert [link.cycles for link in result.offloading_links] == [2, 125, 1]


def test_onloading_small_pays_one_period_of_each_refill(case_files):
    # I: 20 + max(9, 50) = 70; W: 20 + max(100, 200) = 220 -> onloading 220; offloading 2 + 25 + 50
    result = model(case_files["issue_small"])
    parts = {
        p.layer_operand: (p.individual_cycles, p.half_shared_cycles, p.shared_cycles)
        for p in result.onloading_parts
    }
    assert parts == {"W": (20, 200, 0), "I": (20, 50, 0)}
    assert [link.cycles for link in result.offloading_links] == [2, 25, 50]


# §6.9: (th, fh, tl, fl) words per operand@memory, summed over instances
WORDS = {
    "issue_large": {
        ("O", "rf_16B"): (2000000, 2000000, 2000000, 2000000), ("O", "sram_8KB"): (2500, 0, 62500, 62500),
        ("O", "sram_1M"): (834, 0, 0, 840), ("O", "dram"): (0, 0, 0, 5000),
        ("W", "rf_64B_W"): (0, 800000, 800000, 0), ("W", "sram_64KB"): (0, 2500, 50000, 0), ("W", "dram"): (0, 0, 5000, 0),
        ("I", "rf_64B_I"): (0, 160000, 4000000, 0), ("I", "sram_1M"): (0, 834, 1000, 0), ("I", "dram"): (0, 0, 5000, 0),
    },
    "issue_small": {
        ("O", "rf_16B"): (2000000, 2000000, 2000000, 2000000), ("O", "sram_8KB"): (12500, 12500, 62500, 62500),
        ("O", "sram_1M"): (4500, 4500, 4500, 4500), ("O", "dram"): (0, 0, 25000, 25000),
        ("W", "rf_64B_W"): (0, 800000, 800000, 0), ("W", "sram_64KB"): (0, 2500, 50000, 0), ("W", "dram"): (0, 0, 5000, 0),
        ("I", "rf_64B_I"): (0, 800000, 4000000, 0), ("I", "sram_1M"): (0, 4500, 5000, 0), ("I", "dram"): (0, 0, 25000, 0),
    },
    "rf32_small": {
        ("O", "sram_1M"): (850, 0, 4375, 4375), ("W", "rf_64B_W"): (0, 50000, 1000000, 0),
        ("W", "sram_64KB"): (0, 12500, 12500, 0), ("I", "sram_1M"): (0, 4250, 25000, 0), ("O", "dram"): (0, 0, 0, 5000),
    },
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(WORDS))
def test_word_accesses_equal_reference(case_files, case):
    result = model(case_files[case])
    for (op, memory), expected in WORDS[case].items():
        assert tuple(result.words(op, memory, d) for d in (TH, FH, TL, FL)) == expected, (
            op,
            memory,
        )


def test_word_accesses_do_not_depend_on_the_port_layout(case_files):
    assert (
        model(case_files["issue_small"]).word_accesses
        == model(case_files["shipped_small"]).word_accesses
    )


def test_conv_stride2_has_no_spatial_stall_and_counts_final_outputs_at_8_bits(case_files):
    # K16 C8 OY8 OX8 FY3 FX3 = 73728 MACs on 16 PEs -> 4608 cycles; outputs leave DRAM-ward at O_final
    result = model(case_files["conv_s2_3x3"])
    assert result.ideal_cycles == result.ideal_temporal_cycles == 4608
    # DRAM receives each of the 16 x 8 x 8 final outputs once: 1024 x 8 b over a 64 b port = 128 words
    assert result.words("O", "dram", FL) == 128
    assert result.latency_total_cycles >= result.ideal_cycles


# ------------------------------------------------------------------ the real zigzag-dse (peer)


def _peer():
    """Import the adapter's entry point, skipping with the reason if zigzag-dse is not importable."""
    from cyclesim.checks.zigzag import peer as zigzag

    try:
        zigzag.zigzag_version()
    except PeerUnavailable as exc:
        pytest.skip(str(exc))
    return zigzag


PEER_CASES = ["issue_large", "issue_small", "shipped_large", "shipped_small", "rf32_small", "rf32_shipped_small",
              "conv_s2_3x3", "conv_s2_3x3_ox_spatial"]  # fmt: skip


@pytest.mark.peer
@pytest.mark.parametrize("case", PEER_CASES)
def test_every_term_equals_zigzag_dse(case_files, case):
    peer = _peer()
    files = case_files[case]
    theirs = peer.run_zigzag(
        files.accelerator, files.workload, files.mapping, files.temporal_mapping
    )
    assert theirs.version == peer.EXPECTED_VERSION
    ours = model(files)
    for field in ours.__dataclass_fields__:
        assert getattr(ours, field) == getattr(theirs.latency, field), field


@pytest.mark.peer
def test_model_on_the_mapping_zigzag_chose_equals_zigzag(case_files, tmp_path):
    # ZigZag's search (LOMA, lpf 6) on the small setting picks the §6.1 loops and 250294 cycles
    peer = _peer()
    files = case_files["issue_small"]
    chosen = peer.run_zigzag(files.accelerator, files.workload, files.mapping)
    assert chosen.latency.latency_total_cycles == 250294
    tm = {
        op: [[list(loop) for loop in level] for level in levels]
        for op, levels in chosen.temporal_mapping.levels
    }
    assert tm == TMS["small"]
    refiled = zc.write_case(tmp_path, "chosen", *CASES["issue_small"][:3], tm)
    assert model(refiled) == chosen.latency


@pytest.mark.peer
def test_peer_writes_no_files(case_files, tmp_path, monkeypatch):
    peer = _peer()
    monkeypatch.chdir(tmp_path)
    files = case_files["rf32_large"]
    peer.run_zigzag(files.accelerator, files.workload, files.mapping, files.temporal_mapping)
    assert list(tmp_path.iterdir()) == []


def test_peer_unavailable_says_why(monkeypatch):
    from cyclesim.checks.zigzag import peer as zigzag

    monkeypatch.setitem(__import__("sys").modules, "zigzag.api", None)
    with pytest.raises(PeerUnavailable, match="zigzag-dse is not importable"):
        zigzag.run_zigzag("a.yaml", "w.yaml", "m.yaml")
