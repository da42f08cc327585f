"""Per-op and whole-run figures read off a replay's allocation sequence."""

from __future__ import annotations

from dataclasses import dataclass, replace

from cyclesim.l1.config import AllocKind, Policy, Region
from cyclesim.l1.events import Action, L1Event
from cyclesim.l1.tree_replay import OpInstance, ReplayResult


@dataclass(frozen=True, slots=True)
class OpReport:
    """What one op call needed and what L1 looked like while it ran."""

    path: str
    op: str
    depth: int
    requirement_bytes: int  # stack: its frame peak, one number; else CB peak + heap/pool peak
    contiguous: bool  # True when requirement_bytes is one contiguous region (policy stack)
    local_peak_bytes: int  # peak of the program-local region above where its frame started
    heap_peak_bytes: int  # peak bytes it held on the heap or in a pool (outputs excluded)
    output_bytes: int  # bytes of outputs it allocated for the model (any policy: heap)
    pool_bytes: int  # the pool preallocated for it (policy pool, top-level ops)
    cb_peak_bytes: int  # the largest CB set of one program it ran
    peak_cb_end: int | None  # highest CB region end at a program launch
    lowest_heap_address: int
    min_headroom_bytes: int
    min_total_free_bytes: int
    min_largest_free_bytes: int
    max_fragmentation: float
    completed: bool


@dataclass(frozen=True, slots=True)
class RunSummary:
    """Whole-run figures of one policy."""

    policy: Policy
    events: int
    peak_local_top: int
    lowest_heap_address: int
    min_headroom_bytes: int
    min_largest_free_bytes: int
    worst_fragmentation: float
    worst_fragmentation_seq: int
    failed: bool
    empty_at_end: bool


def op_reports(result: ReplayResult) -> tuple[OpReport, ...]:
    """One report per op call, in call order."""
    cb_bytes_at = _cb_bytes_at_launch(result.events)
    reports = [_op_report(result, inst, cb_bytes_at) for inst in result.instances]
    if result.unbounded is not None:  # a failed replay: take the needs from the unbounded one
        needs = {r.path: r for r in op_reports(result.unbounded)}
        reports = [
            r if r.completed or r.path not in needs else _with_needs(r, needs[r.path])
            for r in reports
        ]
    return tuple(reports)


def _with_needs(report: OpReport, need: OpReport) -> OpReport:
    """An unfinished op's report with the requirement figures of its unbounded replay."""
    return replace(
        report,
        requirement_bytes=need.requirement_bytes,
        contiguous=need.contiguous,
        local_peak_bytes=need.local_peak_bytes,
        heap_peak_bytes=need.heap_peak_bytes,
        output_bytes=need.output_bytes,
        pool_bytes=need.pool_bytes,
        cb_peak_bytes=need.cb_peak_bytes,
    )


def summary(result: ReplayResult) -> RunSummary:
    """Peaks and worst cases over the whole allocation sequence."""
    events = result.events
    snaps = [e.snapshot for e in events]
    worst = max(range(len(snaps)), key=lambda i: snaps[i].fragmentation, default=0)
    return RunSummary(
        result.policy,
        len(events),
        max((s.local_top for s in snaps), default=result.config.unreserved_base_bytes),
        min((s.lowest_heap_address for s in snaps), default=result.config.heap_top),
        min((s.headroom_bytes for s in snaps), default=result.config.bank_size_bytes),
        min((s.largest_free_bytes for s in snaps), default=result.config.bank_size_bytes),
        snaps[worst].fragmentation if snaps else 0.0,
        worst,
        result.failure is not None,
        result.empty_at_end,
    )


def _cb_bytes_at_launch(events: tuple[L1Event, ...]) -> dict[int, int]:
    """Bytes of live circular buffers at each launch event (seq -> bytes)."""
    live: dict[str, int] = {}
    out = {}
    for event in events:
        if event.kind is AllocKind.CB and event.action is Action.ALLOC:
            live[event.name] = event.size_bytes
        elif event.kind is AllocKind.CB and event.action is Action.FREE:
            live.pop(event.name, None)
        elif event.action is Action.LAUNCH:
            out[event.seq] = sum(live.values())
    return out


def _op_report(result: ReplayResult, inst: OpInstance, cb_bytes_at: dict[int, int]) -> OpReport:
    end = inst.exit_seq if inst.exit_seq is not None else len(result.events) - 1
    span = result.events[inst.enter_seq : end + 1]
    owns_pool = any(e.kind is AllocKind.POOL and e.action is Action.ALLOC for e in span)
    held: dict[str, int] = {}
    outputs = held_now = heap_peak = 0
    for event in span:
        if event.action is Action.ALLOC and event.kind is AllocKind.OUTPUT:
            outputs += event.size_bytes
        elif event.action is Action.ALLOC and event.region in (Region.HEAP, Region.POOL):
            if owns_pool and event.region is Region.POOL:
                continue
            held[event.name] = event.size_bytes
            held_now += event.size_bytes
            heap_peak = max(heap_peak, held_now)
        elif event.action is Action.FREE and event.name in held:
            held_now -= held.pop(event.name)
    launches = [e for e in span if e.action is Action.LAUNCH]
    snaps = [e.snapshot for e in span]
    local_peak = max(s.local_top for s in snaps) - inst.entry_local_top
    stack = result.policy is Policy.STACK
    contiguous = stack and heap_peak == 0
    return OpReport(
        inst.path,
        inst.op,
        inst.depth,
        local_peak if contiguous else local_peak + heap_peak,
        contiguous,
        local_peak,
        heap_peak,
        outputs,
        inst.pool_bytes,
        max((cb_bytes_at[e.seq] for e in launches), default=0),
        max((e.address for e in launches), default=None),
        min(s.lowest_heap_address for s in snaps),
        min(s.headroom_bytes for s in snaps),
        min(s.total_free_bytes for s in snaps),
        min(s.largest_free_bytes for s in snaps),
        max(s.fragmentation for s in snaps),
        inst.exit_seq is not None,
    )
