"""The L1 model on its own: tt-metal's size rule, first-fit top-down, CB stack, failures."""

from __future__ import annotations

import pytest

from cyclesim.l1 import L1, AllocKind, FailureKind, L1AllocationError, L1Config, L1UsageError
from cyclesim.l1.config import bank_bytes
from cyclesim.l1.freelist import FreeList

SMALL = {"l1_size_bytes": 8192, "unreserved_base_bytes": 1024, "alignment_bytes": 32}


@pytest.mark.parametrize(
    ("size", "page", "banks", "align", "expected"),
    [
        # Blackhole report in the reference: 62914560 B over 40 banks -> 1572864 B per bank
        # (30720 pages of 2048 B, 1 + 30719 // 40 = 768 pages per bank).
        (62914560, 2048, 40, 64, 1572864),
        # 3 pages over 4 banks: every bank reserves one page (lockstep), 100 B padded to 128.
        (300, 100, 4, 32, 128),
        # 9 tiles over 8 banks: ceil(9/8) = 2 pages per bank.
        (9 * 2048, 2048, 8, 32, 4096),
        # BERT scores: 6912 tiles over 64 banks = 108 tiles = 221,184 B.
        (14155776, 2048, 64, 32, 221184),
    ],
)
def test_bank_size_follows_tt_metal_spread_rule(size, page, banks, align, expected):
    assert bank_bytes(size, page, banks, align) == expected


def test_free_list_takes_the_highest_block_that_fits_and_coalesces():
    fl = FreeList(0, 1000, 10)
    assert fl.allocate_top_down(100) == 900  # top of the only block
    assert fl.allocate_top_down(100) == 800
    assert fl.allocate_top_down(100) == 700
    fl.free(800, 100)  # a hole [800, 900)
    assert fl.allocate_top_down(200) == 500  # the hole is too small: below 700
    assert fl.allocate_top_down(50) == 850  # the hole is the highest block that fits
    fl.free(850, 50)
    fl.free(900, 100)
    fl.free(700, 100)
    fl.free(500, 200)
    assert fl.blocks() == [(0, 1000)]
    assert fl.low_water == 500


def test_heap_is_top_down_and_cbs_bottom_up_from_the_unreserved_base():
    l1 = L1(L1Config(**SMALL))
    # heap top = 8192: a 1000 B tensor pads to 1024 (32-aligned) -> [7168, 8192)
    assert l1.allocate("x", "tensor", 1000).address == 7168
    # CBs stack upward from the base 1024: 512 B, then 2 pages of 100 B padded to 128
    assert l1.allocate("cb0", "cb", 512, page_size_bytes=256).address == 1024
    assert l1.allocate("cb1", "cb", 200, page_size_bytes=100).address == 1536
    assert l1.launch("p") == 1792
    l1.end_program()
    assert l1.local_top == 1024
    snap = l1.snapshot()
    assert (snap.total_free_bytes, snap.largest_free_bytes) == (8192 - 1024 - 1024, 6144)


def test_stack_intermediates_shift_cbs_and_are_popped_when_the_op_returns():
    l1 = L1(L1Config(**SMALL), "stack")
    l1.push_frame("outer")
    assert l1.allocate("a", "intermediate", 512).address == 1024  # stack: at the base
    l1.push_frame("inner")
    assert l1.allocate("b", "intermediate", 256).address == 1536  # above a
    assert l1.allocate("cb", "cb", 1024).address == 1792  # CB offset shifted by the stack depth
    l1.end_program()
    l1.free("b")  # marked dead; its space is reclaimed on return
    assert l1.local_top == 1792
    l1.pop_frame()
    assert l1.local_top == 1536
    l1.pop_frame()
    assert l1.is_empty()


def test_pool_holds_intermediates_inside_a_block_on_the_heap():
    l1 = L1(L1Config(**SMALL), "pool")
    l1.push_frame("op", pool_bytes=1000)  # rounded to 1024: [7168, 8192)
    assert l1.allocate("t1", "intermediate", 512).address == 7680  # pool top-down
    assert l1.allocate("t2", "intermediate", 512).address == 7168
    with pytest.raises(L1AllocationError) as info:
        l1.allocate("t3", "intermediate", 32)
    assert info.value.reason is FailureKind.OUT_OF_MEMORY
    assert info.value.bank_size == 1024 and "pool 'op:pool'" in str(info.value)
    l1.pop_frame()
    assert l1.is_empty()


def test_cb_clash_message_has_tt_metals_wording_and_facts():
    l1 = L1(L1Config(**SMALL, num_banks=1, worker_grid=[8, 8]))
    l1.allocate("x", "tensor", 4096)  # [4096, 8192)
    l1.push_frame("big")
    l1.allocate("cb0", "cb", 2048)  # [1024, 3072)
    with pytest.raises(L1AllocationError) as info:
        l1.allocate("cb1", "cb", 2048)  # would end at 5120 > 4096
    err = info.value
    assert err.reason is FailureKind.CLASH
    assert (err.buffer, err.address, err.cb_region_end, err.lowest_heap_address) == (
        "cb1",
        3072,
        5120,
        4096,
    )
    assert (err.bank_size, err.largest_free_block, err.lowest_heap_buffer) == (7168, 3072, "x")
    assert (
        "Statically allocated circular buffers in program big clash with L1 buffers on core "
        "range {[(x=0,y=0) - (x=7,y=7)]}. L1 buffer allocated at 4096 and static circular "
        "buffer region ends at 5120"
    ) in str(err)
    # the L1 is unchanged by the failed call
    assert [p.name for p in l1.live()] == ["x", "cb0"]


def test_cbs_beyond_l1_and_out_of_memory_are_reported_with_their_numbers():
    l1 = L1(L1Config(**SMALL))
    with pytest.raises(
        L1AllocationError, match="grow to 9216 B which is beyond max L1 size of 8192 B"
    ):
        l1.allocate("cb", "cb", 8192)
    l1.allocate("a", "tensor", 4096, page_size_bytes=1024)
    with pytest.raises(L1AllocationError) as info:
        l1.allocate("b", "tensor", 4096, page_size_bytes=1024)
    assert info.value.reason is FailureKind.OUT_OF_MEMORY
    assert (
        "Not enough space to allocate 4096 B L1 buffer across 1 banks, where each bank needs to "
        "store 4096 B, but bank size is 7168 B (allocated: 4096 B, free: 3072 B, largest free "
        "block: 3072 B)"
    ) in str(info.value)


def test_a_heap_buffer_landing_in_the_live_stack_is_a_clash():
    l1 = L1(L1Config(**SMALL), "stack")
    l1.push_frame("op")
    l1.allocate("s", "intermediate", 6144)  # stack [1024, 7168)
    with pytest.raises(L1AllocationError) as info:
        l1.allocate("y", "tensor", 2048)  # heap top-down would put it at [6144, 8192)
    assert info.value.reason is FailureKind.CLASH
    assert (info.value.address, info.value.cb_region_end) == (6144, 7168)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda l1: l1.free("nope"), "free of unknown buffer 'nope'"),
        (lambda l1: l1.pop_frame(), "without an open frame"),
        (lambda l1: [l1.allocate("a", "tensor", 32), l1.allocate("a", "tensor", 32)], "already"),
    ],
)
def test_misuse_of_the_api_is_refused_with_what_to_do(call, message):
    with pytest.raises(L1UsageError, match=message):
        call(L1(L1Config(**SMALL)))


def test_from_config_validates_the_allocator_mapping():
    l1 = L1.from_config({**SMALL, "num_banks": 64, "policy": "stack"})
    assert l1.policy == "stack" and l1.config.num_banks == 64
    assert AllocKind("cb") is AllocKind.CB
    with pytest.raises(Exception, match="unreserved base must be aligned"):
        L1.from_config({**SMALL, "unreserved_base_bytes": 1000})
