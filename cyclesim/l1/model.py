"""The L1 address space of one core: top-down heap, program-local stack of CBs, pools.

Runtime API (what a replay engine calls):

    l1 = L1.from_config({"l1_size_bytes": 1499136, "unreserved_base_bytes": 103712, ...}, "stack")
    l1.push_frame("attention")                     # an op starts (pool_bytes=N opens its pool)
    l1.allocate("attention:scores", "intermediate", 442368, page_size_bytes=2048)
    l1.allocate("attention:cb_in0", "cb", 16384, page_size_bytes=2048)
    l1.launch("attention")                         # tt-metal's CB/L1 clash check
    l1.end_program()                               # the program's CBs are released
    l1.free("attention:scores")
    l1.pop_frame()                                 # stack entries of the op are popped (LIFO)

Every failure raises `L1AllocationError` carrying tt-metal's facts; misuse raises `L1UsageError`.
After an `L1AllocationError` the L1 is as it was before the failing call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cyclesim.l1.config import (
    AllocKind,
    FailureKind,
    L1Config,
    Policy,
    Region,
    bank_bytes,
    round_up,
)
from cyclesim.l1.errors import L1AllocationError, L1UsageError
from cyclesim.l1.events import Action, L1Event, Placement, Snapshot
from cyclesim.l1.freelist import FreeList


@dataclass(slots=True)
class _Pool:
    block: Placement
    free_list: FreeList
    names: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _Frame:
    op: str
    local_index: int  # len(stack) when the frame was pushed
    pool: _Pool | None = None


class L1:
    """One core's L1 under one policy; keeps the allocation sequence as `events`."""

    def __init__(
        self, config: L1Config, policy: Policy | str | None = None, *, record: bool = True
    ) -> None:
        self.config = config
        self.policy = Policy(policy) if policy is not None else config.policy
        self.record = record
        self.events: list[L1Event] = []
        self._heap = FreeList(config.unreserved_base_bytes, config.heap_top, config.alignment_bytes)
        self._heap_live: dict[str, Placement] = {}
        self._stack: list[list[Any]] = []  # [placement, dead]
        self._frames: list[_Frame] = [_Frame("", 0)]
        self._live: dict[str, Placement] = {}

    @classmethod
    def from_config(cls, data: dict[str, Any], policy: Policy | str | None = None) -> L1:
        """An L1 from an allocator mapping (the `allocator:` of an architecture's memory)."""
        return cls(L1Config.from_dict(data), policy)

    # ------------------------------------------------------------------ queries
    @property
    def local_top(self) -> int:
        """End of the program-local region (stack entries, dead or not, and live CBs)."""
        return self._stack[-1][0].end if self._stack else self.config.unreserved_base_bytes

    @property
    def depth(self) -> int:
        """Number of open frames (ops being executed)."""
        return len(self._frames) - 1

    def live(self) -> tuple[Placement, ...]:
        """Every live buffer, in allocation order."""
        return tuple(self._live.values())

    def is_empty(self) -> bool:
        """True when nothing is allocated and no frame is open."""
        return not self._live and not self._stack and not self._heap_live and self.depth == 0

    def lowest_heap(self) -> Placement | None:
        """The L1 buffer at the lowest address (tt-metal's clash check reads its address)."""
        return min(self._heap_live.values(), key=lambda p: p.address, default=None)

    def snapshot(self) -> Snapshot:
        """Free space, largest free block and fragmentation of the whole L1 right now."""
        top = self.local_top
        sizes = [end - max(start, top) for start, end in self._heap.blocks() if end > top]
        total = sum(sizes)
        largest = max(sizes, default=0)
        lowest = self.lowest_heap()
        low = lowest.address if lowest else self.config.heap_top
        frag = 1.0 - largest / total if total else 0.0
        return Snapshot(top, low, low - top, total, largest, frag)

    # ------------------------------------------------------------------ frames
    def push_frame(self, op: str, *, pool_bytes: int = 0) -> None:
        """An op starts; under policy pool, `pool_bytes` > 0 reserves its pool on the heap."""
        self._frames.append(_Frame(op, len(self._stack)))
        self._log(Action.ENTER, op, None, None, None, 0)
        if pool_bytes > 0 and self.policy is Policy.POOL:
            size = round_up(pool_bytes, self.config.alignment_bytes)
            try:
                block = self._heap_alloc(f"{op}:pool", AllocKind.POOL, size, size, 1)
            except L1AllocationError:
                self._frames.pop()
                if self.record:
                    self.events.pop()
                raise
            self._live[block.name] = block
            end = block.address + size
            self._frames[-1].pool = _Pool(
                block, FreeList(block.address, end, self.config.alignment_bytes)
            )
            self._log_placement(Action.ALLOC, block)

    def pop_frame(self) -> list[Placement]:
        """An op returns: pop its stack entries in LIFO order and release its pool."""
        if self.depth == 0:
            raise L1UsageError("pop_frame() without an open frame; call push_frame() first")
        frame = self._frames[-1]
        released = []
        while len(self._stack) > frame.local_index:
            placement, dead = self._stack.pop()
            if not dead:
                del self._live[placement.name]
                released.append(placement)
            self._log_placement(Action.FREE, placement)
        if frame.pool is not None:
            for name in reversed(frame.pool.names):
                released.append(self.free(name))
            block = frame.pool.block
            del self._live[block.name]
            del self._heap_live[block.name]
            self._heap.free(block.address, block.size_bytes)
            self._log_placement(Action.FREE, block)
        self._frames.pop()
        self._log(Action.EXIT, frame.op, None, None, None, 0)
        return released

    # ------------------------------------------------------------------ allocation
    def allocate(
        self,
        name: str,
        kind: AllocKind | str,
        size_bytes: int,
        *,
        page_size_bytes: int | None = None,
        num_banks: int | None = None,
        region: Region | str | None = None,
    ) -> Placement:
        """Place a named buffer; `size_bytes` is the whole tensor (per core for a CB).

        Raise L1AllocationError on a clash or out-of-memory, L1UsageError on a reused name.
        """
        kind = AllocKind(kind)
        if name in self._live:
            raise L1UsageError(f"buffer '{name}' is already allocated; free it first")
        page = page_size_bytes or size_bytes
        if size_bytes <= 0 or page <= 0:
            raise L1UsageError(f"buffer '{name}': sizes must be positive, got {size_bytes}/{page}")
        banks = 1 if kind is AllocKind.CB else (num_banks or self.config.num_banks)
        per_bank = bank_bytes(size_bytes, page, banks, self.config.alignment_bytes)
        where = Region(region) if region is not None else self._default_region(kind)
        if where is Region.STACK:
            placement = self._push_local(name, kind, per_bank, size_bytes, banks)
            self._stack.append([placement, False])
        elif where is Region.POOL and self._pool() is not None:
            placement = self._pool_alloc(name, kind, per_bank, size_bytes, banks)
        else:
            placement = self._heap_alloc(name, kind, per_bank, size_bytes, banks)
        self._live[name] = placement
        self._log_placement(Action.ALLOC, placement)
        return placement

    def free(self, name: str) -> Placement:
        """Release a buffer; a stack intermediate is only marked dead until its op returns."""
        placement = self._live.pop(name, None)
        if placement is None:
            raise L1UsageError(f"free of unknown buffer '{name}' (not allocated or already freed)")
        if placement.region is Region.HEAP:
            del self._heap_live[name]
            self._heap.free(placement.address, placement.size_bytes)
        elif placement.region is Region.POOL:
            pool = next(f.pool for f in self._frames if f.pool and name in f.pool.names)
            pool.names.remove(name)
            pool.free_list.free(placement.address, placement.size_bytes)
        else:
            entry = next(e for e in reversed(self._stack) if e[0] is placement)
            entry[1] = True
            if self._stack[-1] is not entry or placement.kind is not AllocKind.CB:
                self._log_placement(Action.RETIRE, placement)  # space held until popped
            while self._stack and self._stack[-1][1] and self._stack[-1][0].kind is AllocKind.CB:
                self._log_placement(Action.FREE, self._stack.pop()[0])
            return placement
        self._log_placement(Action.FREE, placement)
        return placement

    def launch(self, program: str | None = None) -> int:
        """A program starts: check its CB region against the L1 buffers; return the CB end."""
        end = self.local_top
        if end > self.config.l1_size_bytes or end > self.snapshot().lowest_heap_address:
            raise L1UsageError("the CB region overlaps L1 buffers; allocate() should have refused")
        self._log(Action.LAUNCH, program or self._frames[-1].op, None, Region.STACK, end, 0)
        return end

    def end_program(self) -> list[Placement]:
        """A program ends: release its live circular buffers."""
        cbs = [e[0] for e in self._stack if not e[1] and e[0].kind is AllocKind.CB]
        return [self.free(p.name) for p in reversed(cbs)]

    # ------------------------------------------------------------------ internals
    def _default_region(self, kind: AllocKind) -> Region:
        if kind is AllocKind.CB:
            return Region.STACK
        if kind is AllocKind.INTERMEDIATE:
            return {Policy.HEAP: Region.HEAP, Policy.STACK: Region.STACK, Policy.POOL: Region.POOL}[
                self.policy
            ]
        return Region.HEAP

    def _pool(self) -> _Pool | None:
        return next((f.pool for f in reversed(self._frames) if f.pool is not None), None)

    def _placement(self, name, kind, region, address, per_bank, total, banks) -> Placement:
        return Placement(name, kind, region, address, per_bank, total, banks, self._frames[-1].op)

    def _push_local(self, name, kind, per_bank, total, banks) -> Placement:
        address = self.local_top
        placement = self._placement(name, kind, Region.STACK, address, per_bank, total, banks)
        end = placement.end
        lowest = self.lowest_heap()
        if end > self.config.l1_size_bytes:
            raise self._failure(FailureKind.BEYOND_L1, placement, end)
        if end > (lowest.address if lowest else self.config.heap_top):
            raise self._failure(FailureKind.CLASH, placement, end)
        return placement

    def _heap_alloc(self, name, kind, per_bank, total, banks) -> Placement:
        address = self._heap.allocate_top_down(per_bank)
        if address is None:
            placement = self._placement(name, kind, Region.HEAP, -1, per_bank, total, banks)
            raise self._failure(FailureKind.OUT_OF_MEMORY, placement, self.local_top)
        placement = self._placement(name, kind, Region.HEAP, address, per_bank, total, banks)
        if address < self.local_top:
            self._heap.free(address, per_bank)
            raise self._failure(FailureKind.CLASH, placement, self.local_top)
        self._heap_live[name] = placement
        return placement

    def _pool_alloc(self, name, kind, per_bank, total, banks) -> Placement:
        pool = self._pool()
        assert pool is not None
        address = pool.free_list.allocate_top_down(per_bank)
        placement = self._placement(name, kind, Region.POOL, address or -1, per_bank, total, banks)
        if address is None:
            raise self._failure(FailureKind.OUT_OF_MEMORY, placement, self.local_top, pool)
        pool.names.append(name)
        return placement

    def _failure(
        self, reason: FailureKind, p: Placement, cb_end: int, pool: _Pool | None = None
    ) -> L1AllocationError:
        from cyclesim.l1.messages import failure_message

        lowest = self.lowest_heap()
        allocator = pool.free_list if pool else self._heap
        facts = dict(
            buffer=p.name,
            buffer_kind=p.kind,
            address=p.address if p.address >= 0 else None,
            size_bytes=p.size_bytes,
            total_size_bytes=p.total_size_bytes,
            num_banks=p.num_banks,
            cb_region_end=cb_end,
            lowest_heap_address=lowest.address if lowest else self.config.heap_top,
            lowest_heap_buffer=lowest.name if lowest else None,
            bank_size=pool.block.size_bytes if pool else self.config.bank_size_bytes,
            largest_free_block=allocator.largest_free(),
            total_free=allocator.free_bytes(),
            allocated=(allocator.end - allocator.start) - allocator.free_bytes(),
            policy=self.policy,
            op=p.op,
        )
        message = failure_message(
            reason, self.config, p.region, pool.block.name if pool else None, facts
        )
        return L1AllocationError(reason, message, **facts)

    def _log_placement(self, action: Action, p: Placement) -> None:
        self._log(action, p.name, p.kind, p.region, p.address, p.size_bytes)

    def _log(self, action, name, kind, region, address, size) -> None:
        if self.record:
            op = self._frames[-1].op
            snap = self.snapshot()
            event = L1Event(
                len(self.events), action, name, kind, region, address, size, op, self.depth, snap
            )
            self.events.append(event)
