"""tt-metal's wording for L1 failures, followed by the facts cyclesim adds."""

from __future__ import annotations

from typing import Any

from cyclesim.l1.config import AllocKind, FailureKind, L1Config, Region


def failure_message(
    reason: FailureKind, config: L1Config, region: Region, pool: str | None, facts: dict[str, Any]
) -> str:
    """The message tt-metal would print for this failure, then which buffer and what to do."""
    f = facts
    kind = f["buffer_kind"]
    op = f["op"] or "<top level>"
    what = (
        f"{kind} '{f['buffer']}' ({f['size_bytes']} B per bank) in op '{op}', policy {f['policy']}"
    )
    if reason is FailureKind.OUT_OF_MEMORY:
        where = f"pool '{pool}'" if pool else "L1"
        head = (
            f"Out of Memory: Not enough space to allocate {f['total_size_bytes']} B {where} buffer "
            f"across {f['num_banks']} banks, where each bank needs to store {f['size_bytes']} B, "
            f"but bank size is {f['bank_size']} B (allocated: {f['allocated']} B, "
            f"free: {f['total_free']} B, largest free block: {f['largest_free_block']} B)"
        )
        hint = "free tensors earlier, shard over more banks, or use a policy that fragments less"
        return f"{head}. Failed: {what}; {hint}"
    if reason is FailureKind.BEYOND_L1:
        noun = "circular buffers" if kind is AllocKind.CB else "stack of intermediates"
        head = (
            f"Statically allocated {noun} on core range {config.core_range} grow to "
            f"{f['cb_region_end']} B which is beyond max L1 size of {config.l1_size_bytes} B"
        )
        return f"{head}. Failed: {what}; shrink the op's circular buffers or intermediates"
    low = f["lowest_heap_address"]
    low_name = f["lowest_heap_buffer"]
    if region is Region.STACK:
        noun = "circular buffers" if kind is AllocKind.CB else "stack intermediates"
        if low_name is None:
            head = (
                f"Statically allocated {noun} in program {op} grow into the L1_SMALL region on "
                f"core range {config.core_range}. L1_SMALL starts at {low} and static "
                f"{noun} region ends at {f['cb_region_end']}"
            )
        else:
            head = (
                f"Statically allocated {noun} in program {op} clash with L1 buffers on core "
                f"range {config.core_range}. L1 buffer allocated at {low} and static circular "
                f"buffer region ends at {f['cb_region_end']}"
            )
        tail = f"lowest L1 buffer: '{low_name}'" if low_name else "no L1 buffer below L1_SMALL"
        return (
            f"{head}. Failed: {what} at {f['address']}; {tail}; bank size {f['bank_size']} B, "
            f"largest free block {f['largest_free_block']} B; free or move L1 buffers before "
            "this op, or shrink its circular buffers"
        )
    head = (
        f"L1 buffer allocated at {f['address']} clashes with the circular-buffer/stack region "
        f"on core range {config.core_range}, which ends at {f['cb_region_end']}"
    )
    return (
        f"{head}. Failed: {what}; bank size {f['bank_size']} B, largest free block "
        f"{f['largest_free_block']} B (fragmentation pushed it down); free tensors earlier or "
        "allocate long-lived tensors before short-lived ones"
    )
