"""The L1 model's two failures: a call out of order (L1UsageError) and a clash, out-of-memory
or CBs beyond L1 (L1AllocationError, carrying the facts tt-metal's message gives)."""

from __future__ import annotations

from typing import Any

from cyclesim.errors import CyclesimError
from cyclesim.l1.config import AllocKind, FailureKind, Policy


class L1UsageError(CyclesimError):
    """The L1 API was called out of order (unknown buffer, duplicate name, no frame to pop)."""


class L1AllocationError(CyclesimError):
    """A clash, out-of-memory or CBs beyond L1, with the facts tt-metal's message gives."""

    def __init__(self, reason: FailureKind, message: str, **facts: Any) -> None:
        self.reason = reason
        self.buffer: str = facts.pop("buffer")
        self.buffer_kind: AllocKind = facts.pop("buffer_kind")
        self.address: int | None = facts.pop("address", None)
        self.size_bytes: int = facts.pop("size_bytes")
        self.total_size_bytes: int = facts.pop("total_size_bytes")
        self.num_banks: int = facts.pop("num_banks")
        self.cb_region_end: int = facts.pop("cb_region_end")
        self.lowest_heap_address: int = facts.pop("lowest_heap_address")
        self.lowest_heap_buffer: str | None = facts.pop("lowest_heap_buffer", None)
        self.bank_size: int = facts.pop("bank_size")
        self.largest_free_block: int = facts.pop("largest_free_block")
        self.total_free: int = facts.pop("total_free")
        self.allocated: int = facts.pop("allocated")
        self.policy: Policy = facts.pop("policy")
        self.op: str = facts.pop("op")
        if facts:
            raise TypeError(f"unknown facts {sorted(facts)}")
        self.detail = message
        super().__init__(message)

    def facts(self) -> dict[str, Any]:
        """The facts as a JSON-ready mapping."""
        return {
            "reason": str(self.reason),
            "buffer": self.buffer,
            "buffer_kind": str(self.buffer_kind),
            "address": self.address,
            "size_bytes": self.size_bytes,
            "total_size_bytes": self.total_size_bytes,
            "num_banks": self.num_banks,
            "cb_region_end": self.cb_region_end,
            "lowest_heap_address": self.lowest_heap_address,
            "lowest_heap_buffer": self.lowest_heap_buffer,
            "bank_size": self.bank_size,
            "largest_free_block": self.largest_free_block,
            "total_free": self.total_free,
            "allocated": self.allocated,
            "policy": str(self.policy),
            "op": self.op,
            "message": self.detail,
        }
