"""What the engine writes down while it runs: state timelines, port grants, PE waits, counts.

Always on, because stall attribution needs it; flat tuples appended in the hot path. The
optional trace (buffer occupancy, segment spans) is collected only when tracing is on.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from cyclesim.engine.finishers import Finishers
from cyclesim.engine.rows import Rows
from cyclesim.errors import OptionError
from cyclesim.schedule.plan import NodePlan, Plan

FOREVER = 1 << 62  # end of an open trace window


@dataclass(frozen=True, slots=True)
class TraceFilter:
    """Which traced events to keep: the cycle window [start, end) and resource names (None: all).

    A name matches a transfer when it is the storage node's memory, tensor or label
    ('A@abuf'), the memory or key ('DRAM.dram_rd') of a port it uses, or its DMA engine;
    it matches a PE segment when it is 'PE' or the segment's Einsum.
    """

    start: int = 0
    end: int | None = None
    resources: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.start < 0 or (self.end is not None and self.end <= self.start):
            raise ValueError(
                f"trace window [{self.start}, {self.end}) is empty or negative; give 0 <= start < end"
            )


@dataclass(slots=True)
class Recorder:
    """Per-run records; indices are node indices, port keys are 'memory.port'."""

    # every row list is a Rows (engine/rows.py): a list whose fast-forwarded stretches are
    # stored once with their shifts
    # per node: [(t, wait, info)], wait a vocabulary.Wait (its comment says what info holds)
    fill_tl: list[Rows] = field(default_factory=list)
    drain_tl: list[Rows] = field(default_factory=list)
    # port -> [(start, end, who, tensor, bits)]: bits the grant moved on that port (whole
    # bursts, engine/transfer.py); the open grant is a list [start, None, who, tensor, None]
    grants: dict[str, Rows] = field(default_factory=dict)
    # (start, end, node, kind, key): the PE array's wait for a segment, charged to its binding
    # tile (the one ready last); key is the tile ('resident') or the part key ('produced')
    pe_waits: Rows = field(default_factory=Rows)
    pe_segments: Rows | None = None  # (start, end, leaf, g) when tracing
    spatial: dict[tuple, list] = field(
        default_factory=dict
    )  # (leaf, operand) -> [cycles, first, last]
    systolic: dict[tuple, list] = field(
        default_factory=dict
    )  # (leaf, 'fill' | 'drain') -> [cycles, first, last] (engine/systolic.py)
    transfers: Rows | None = None  # (start, end, node, kind, tile, bits) when tracing
    occupancy: Rows | None = None  # (t, node, tiles resident) when tracing
    # (node, tile) -> ('pe'|'node', idx); fast-forward's skipped tiles as rules (finishers.py)
    last_finisher: Finishers = field(default_factory=Finishers)
    # intermediates only: (node, part key) -> (cycle its producer computed the part, who
    # completed the part there: ('pe', leaf) or ('node', the node whose write-back landed it))
    produced: dict[tuple, tuple] = field(default_factory=dict)
    events: int = 0
    first_step: int | None = None
    last_step_end: int = 0
    # trace filter, compiled against the plan (see TraceFilter); only read when tracing
    trace_filter: TraceFilter | None = None
    trace_window: tuple[int, int] = (0, FOREVER)
    trace_nodes: tuple[bool, ...] | None = None  # per node: keep its transfers and occupancy
    trace_leaves: tuple[bool, ...] | None = None  # per leaf: keep its PE segments
    occupancy_before: dict[int, list[int]] = field(
        default_factory=dict
    )  # node -> [entered, released] before the window
    # L1 allocators (engine/l1.py), only when a memory has an `allocator:`
    l1_log: list[tuple] | None = None  # every allocator event: rows of engine.l1.LOG_COLUMNS
    l1_occupancy: list[tuple] | None = None  # (t, memory, bytes in use) when tracing
    # DRAM-modelled memories (dram/timer.py): the bank commands of each row visit when
    # tracing, (t, memory, bank, kind, row or end cycle) with kind ACTIVATE / PRECHARGE /
    # REFRESH (a rank's refresh: bank is its first bank); and after the run, per memory, the
    # timer's counts (requests, row_hits, activates, refreshes) and each bank's open row (-1)
    dram_banks: list[tuple] | None = None
    # a systolic PE array's wavefront, per fold when tracing: (start, end, leaf, 'fill' | 'drain')
    systolic_spans: Rows | None = None
    dram_counts: dict[str, dict[str, int]] = field(default_factory=dict)
    dram_open_rows: dict[str, list[int]] = field(default_factory=dict)
    # per memory timed by the controller in the loop (engine/dram_loop.py): every request in
    # entry order, (address, is write, arrival, entered, completed) in DRAM cycles
    # (`cyclesim run --dram-trace`)
    dram_requests: dict[str, tuple] = field(default_factory=dict)

    def keep_transfer(self, node: int, start: int, end: int) -> bool:
        """A traced span of a node passes the filter (overlaps the window, resource wanted)."""
        w0, w1 = self.trace_window
        return start < w1 and end >= w0 and (self.trace_nodes is None or self.trace_nodes[node])

    def keep_segment(self, leaf: int, start: int, end: int) -> bool:
        """A PE segment passes the filter."""
        w0, w1 = self.trace_window
        return start < w1 and end >= w0 and (self.trace_leaves is None or self.trace_leaves[leaf])

    def occupy(self, t: int, node: int, delta: int) -> None:
        """Record a tile entering (+1) or leaving (-1) a node; before the window only count it."""
        if self.trace_nodes is not None and not self.trace_nodes[node]:
            return
        w0, w1 = self.trace_window
        if t < w0:
            base = self.occupancy_before.setdefault(node, [0, 0])
            base[0 if delta > 0 else 1] += 1
        elif t < w1:
            self.occupancy.append((t, node, delta))


def compile_filter(rec: Recorder, plan: Plan, f: TraceFilter) -> None:
    """Resolve a TraceFilter against the plan: a window and per-node / per-leaf flags."""
    rec.trace_filter = f
    rec.trace_window = (f.start, f.end if f.end is not None else FOREVER)
    if f.resources is None:
        return
    wanted = set(f.resources)

    def names(n: NodePlan) -> set[str]:
        out = {n.memory, n.tensor, n.label()}
        for p in (n.fill_src, n.fill_dst, n.drain_src, n.drain_dst):
            if p is not None:
                out |= {p.memory, p.key}
        if n.dma is not None:
            out.add(n.dma)
        return out

    # every port the plan uses (the PE array's too: a trace shows them), the nodes' names
    ports = {name for p in plan.ports for name in (p.memory, p.key)}
    known = {"PE", *(leaf.einsum for leaf in plan.leaves), *ports}.union(*map(names, plan.nodes))
    unknown = [name for name in f.resources if name not in known]
    if unknown:  # a name that matches nothing would silently leave its resource out
        close = difflib.get_close_matches(unknown[0], sorted(known), n=1)
        raise OptionError(
            f"--only {unknown[0]!r} names nothing in this run"
            + (f": did you mean {close[0]!r}?" if close else "")
            + f" (known: {', '.join(sorted(known))})"
        )
    rec.trace_nodes = tuple(bool(names(n) & wanted) for n in plan.nodes)
    rec.trace_leaves = tuple(bool({"PE", leaf.einsum} & wanted) for leaf in plan.leaves)
