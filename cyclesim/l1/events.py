"""What the L1 model records: where a buffer sits (Placement), the state L1 is left in
(Snapshot), and each step of the allocation sequence (L1Event, with its Action)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from cyclesim.l1.config import AllocKind, Region


class Action(enum.StrEnum):
    """What an event in the allocation sequence did."""

    ALLOC = "alloc"
    FREE = "free"
    ENTER = "enter"  # an op (frame) starts
    EXIT = "exit"  # an op returns
    LAUNCH = "launch"  # a program starts: its CBs are checked against the L1 buffers
    RETIRE = "retire"  # a stack entry is dead; its space is held until its op returns


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a buffer sits: `size_bytes` is what each bank reserves (lockstep)."""

    name: str
    kind: AllocKind
    region: Region
    address: int
    size_bytes: int
    total_size_bytes: int
    num_banks: int
    op: str

    @property
    def end(self) -> int:
        """First address above the buffer."""
        return self.address + self.size_bytes


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The state of L1 after an event (tt-metal's memory-report figures plus the local top)."""

    local_top: int  # end of the program-local region: stack entries and live CBs
    lowest_heap_address: int  # lowest L1 buffer; the heap top when there is none
    headroom_bytes: int  # lowest_heap_address - local_top
    total_free_bytes: int
    largest_free_bytes: int
    fragmentation: float  # 1 - largest_free / total_free (0 when nothing is free)


@dataclass(frozen=True, slots=True)
class L1Event:
    """One step of the allocation sequence and the state it left."""

    seq: int
    action: Action
    name: str
    kind: AllocKind | None
    region: Region | None
    address: int | None
    size_bytes: int
    op: str
    depth: int
    snapshot: Snapshot
