"""What each port, DMA channel, buffer and the PE array did, read from a traced SimResult.

One neutral model that the VCD, Perfetto and plot views draw from. It only rearranges the
raw records (port grants, transfers, PE segments, occupancy, stall spans); it never
recomputes a number SimResult holds. Everything is clipped to a cycle window.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field

from cyclesim.engine.fabric import PE
from cyclesim.engine.record import FOREVER, S_DMA
from cyclesim.errors import TraceError
from cyclesim.results import SimResult
from cyclesim.results.attribution import SPATIAL


@dataclass(frozen=True, slots=True)
class Busy:
    """A resource busy over cycles [start, end) moving `bits` of `tensor` for `who`."""

    start: int
    end: int
    tensor: str
    who: str
    bits: int
    kind: str = ""  # fill, reload, drain (transfers); empty for single bursts


@dataclass(frozen=True, slots=True)
class Segment:
    """The PE array computing tile `tile` of `einsum` over [start, end)."""

    start: int
    end: int
    einsum: str
    tile: int


@dataclass(frozen=True, slots=True)
class Stall:
    """The PE array not stepping over [start, end), charged to one root cause."""

    start: int
    end: int
    phase: str
    cause: str
    where: str  # tensor@memory, port, competitor in words
    chain: str
    cycles: int


@dataclass(slots=True)
class Buffer:
    """One storage node's slots: changes (t, tiles resident, tile index per slot or None)."""

    memory: str
    tensor: str
    label: str
    slots: int
    tile_bits: int
    changes: list[tuple[int, int, tuple[int | None, ...]]] = field(default_factory=list)


@dataclass(slots=True)
class Activity:
    """The whole picture over [start, end): ports, DMA channels, PE array, buffers."""

    start: int
    end: int
    cycles: int
    ports: dict[str, list[Busy]]  # port key -> bursts, in time order
    port_memory: dict[str, str]
    dma: dict[str, list[list[Busy]]]  # engine -> per channel transfers
    segments: list[Segment]
    stalls: list[Stall]
    spatial: list[Stall]  # spread over their span, overlap segments
    buffers: list[Buffer]
    memories: list[str]  # outermost first, as in the plan's ports
    # memory with an L1 allocator -> (t, bytes in use), the value at start first
    l1: dict[str, list[tuple[int, int]]] = field(default_factory=dict)


def _require_trace(res: SimResult) -> None:
    rec = res.raw.rec
    if rec.transfers is None or rec.pe_segments is None or rec.occupancy is None:
        raise TraceError("this view needs a traced run: replay with trace=True (or a trace_filter)")


def window_of(res: SimResult, window: tuple[int, int] | None = None) -> tuple[int, int]:
    """The recorded window intersected with the one asked for; raise TraceError if empty."""
    rec = res.raw.rec
    w0, w1 = rec.trace_window
    w1 = min(w1, res.cycles) if w1 != FOREVER else res.cycles
    if window is not None:
        w0, w1 = max(w0, window[0]), min(w1, window[1])
    if w1 <= w0 and not (w0 == w1 == res.cycles == 0):
        raise TraceError(f"the window [{w0}, {w1}) is empty: the run has {res.cycles} cycles")
    return w0, w1


def _bursts(big: int, small: int, burst: int) -> list[tuple[int, int]]:
    """(parent-side bits, child-side bits) of each burst, as the engine cuts a transfer."""
    out, sent_big, sent_small = [], 0, 0
    while sent_big < big:
        b = min(burst, big - sent_big)
        sent_big += b
        s = small * sent_big // big - sent_small
        sent_small += s
        out.append((b, s))
    return out or [(0, 0)]


def requester(node: int, kind: str) -> int:
    """The requester id a transfer holds ports under: 2*node for fills, 2*node + 1 for write-backs."""
    return 2 * node + (kind == "drain")


def who_label(res: SimResult, who: int) -> str:
    """A grant's holder in words: 'PE array', 'fill of A@abuf' or 'write-back of Z@acc'."""
    if who == PE:
        return "PE array"
    n = res.raw.plan.nodes[who // 2]
    return f"{'write-back' if who % 2 else 'fill'} of {n.label()}"


def _dur(grant: list, end: int) -> int:
    return (grant[1] if grant[1] is not None else end) - grant[0]


def _spread(bursts: list[int], durations: list[int]) -> list[int]:
    """Bits per grant: bursts laid onto a transfer's grants (a grant may hold a run of them).

    One burst per grant when the counts match; otherwise bursts in proportion to each grant's
    cycles, at least one each. The total is always the transfer's bits.
    """
    n, m = len(bursts), len(durations)
    if m == 0:
        return []
    if m == n:
        return list(bursts)
    total = sum(durations) or m
    out, done, acc = [], 0, 0
    for i, d in enumerate(durations):
        acc += d if sum(durations) else 1
        upto = n if i == m - 1 else max(done + 1, min(n - (m - 1 - i), round(n * acc / total)))
        out.append(sum(bursts[done:upto]))
        done = upto
    return out


def build_activity(res: SimResult, window: tuple[int, int] | None = None) -> Activity:
    """Gather the traced records of res into an Activity clipped to window; TraceError if untraced."""
    _require_trace(res)
    plan, rec = res.raw.plan, res.raw.rec
    w0, w1 = window_of(res, window)
    nodes = plan.nodes
    keys = [p.key for p in plan.ports]
    port_memory = {p.key: p.memory for p in plan.ports}
    # bits of each grant: the transfers' bursts laid onto that node's grants in time order
    grant_bits: dict[tuple[str, int], int] = {}
    grant_kind: dict[tuple[str, int], str] = {}
    by_who: dict[tuple[str, int], list[int]] = {}
    for key in keys:
        for i, g in enumerate(rec.grants.get(key, ())):
            by_who.setdefault((key, g[2]), []).append(i)
    starts = {kw: [rec.grants[kw[0]][i][0] for i in idx] for kw, idx in by_who.items()}
    used: dict[tuple[str, int], int] = {}
    for start, end, node, kind, _tile, big in sorted(rec.transfers, key=lambda t: (t[0], t[2])):
        n = nodes[node]
        src, dst = (n.fill_src, n.fill_dst) if kind != "drain" else (n.drain_dst, n.drain_src)
        small = big // n.union_values * n.tile_values if n.union_values else big
        sides = ((src.key, 0), (dst.key, 1)) if src.key != dst.key else ((src.key, 0),)
        bursts = _bursts(big, small, min(src.burst_bits, dst.burst_bits))
        for key, side in sides:
            kw = (key, requester(node, kind))
            idx = by_who.get(kw, [])
            pos = max(used.get(kw, 0), bisect_left(starts.get(kw, []), start))
            mine = []
            while pos < len(idx) and rec.grants[key][idx[pos]][0] < end and len(mine) < len(bursts):
                mine.append(idx[pos])
                pos += 1
            used[kw] = pos
            sizes = [s if side else b for b, s in bursts]
            for gi, bits in zip(
                mine, _spread(sizes, [_dur(rec.grants[key][i], end) for i in mine]), strict=True
            ):
                grant_bits[(key, gi)] = bits
                grant_kind[(key, gi)] = kind
    ports: dict[str, list[Busy]] = {}
    for key in keys:
        out = []
        for i, (gs, ge, who, tensor) in enumerate(rec.grants.get(key, ())):
            ge = ge if ge is not None else res.cycles
            if ge <= w0 or gs >= w1:
                continue
            out.append(
                Busy(
                    max(gs, w0),
                    min(ge, w1),
                    tensor,
                    who_label(res, who),
                    grant_bits.get((key, i), 0),
                    grant_kind.get((key, i), ""),
                )
            )
        ports[key] = out
    return Activity(
        w0,
        w1,
        res.cycles,
        ports,
        port_memory,
        _dma_channels(res, w0, w1),
        _segments(res, w0, w1),
        *_stalls(res, w0, w1),
        _buffers(res, w0, w1),
        _memories(res),
        _l1_occupancy(res, w0, w1),
    )


def _memories(res: SimResult) -> list[str]:
    """Memory levels outermost first: in loop-tree order of their storage nodes, then by port."""
    plan = res.raw.plan
    return list(dict.fromkeys([n.memory for n in plan.nodes] + [p.memory for p in plan.ports]))


def _dma_channels(res: SimResult, w0: int, w1: int) -> dict[str, list[list[Busy]]]:
    """Transfers through each DMA engine laid onto channels (lowest free channel first)."""
    plan, rec = res.raw.plan, res.raw.rec
    out: dict[str, list[list[Busy]]] = {}
    free_at: dict[str, list[int]] = {}
    for name, channels, _setup in plan.dma:
        out[name] = [[] for _ in range(channels)]
        free_at[name] = [0] * channels
    for start, end, node, kind, _tile, bits in sorted(rec.transfers, key=lambda t: (t[0], t[2])):
        n = plan.nodes[node]
        if n.dma is None:
            continue
        tl = rec.drain_tl[node] if kind == "drain" else rec.fill_tl[node]
        acquire = _acquired(tl, start, end)
        lanes = free_at[n.dma]
        ch = next((c for c, t in enumerate(lanes) if t <= acquire), None)
        if ch is None:
            raise TraceError(f"DMA engine {n.dma}: more transfers at cycle {acquire} than channels")
        lanes[ch] = end
        if end > w0 and acquire < w1:
            out[n.dma][ch].append(
                Busy(max(acquire, w0), min(end, w1), n.tensor, n.label(), bits, kind)
            )
    return out


def _acquired(tl: list[tuple], start: int, end: int) -> int:
    """When a transfer got its DMA channel: after its wait for one (recorded at its start), else its start."""
    i = bisect_left(tl, (start,), key=lambda s: (s[0],))
    while i < len(tl) and tl[i][0] == start:
        if tl[i][1] == S_DMA:
            return min(tl[i + 1][0], end) if i + 1 < len(tl) else end
        i += 1
    return start


def _segments(res: SimResult, w0: int, w1: int) -> list[Segment]:
    leaves = res.raw.plan.leaves
    segs = sorted(res.raw.rec.pe_segments)
    return [
        Segment(max(s, w0), min(e, w1), leaves[li].einsum, g)
        for s, e, li, g in segs
        if e > w0 and s < w1
    ]


def _stalls(res: SimResult, w0: int, w1: int) -> tuple[list[Stall], list[Stall]]:
    stalls, spatial = [], []
    for s in sorted(res.spans, key=lambda s: (s.start, s.end)):
        if s.end <= w0 or s.start >= w1 or s.cycles <= 0:
            continue
        where = f"{s.tensor}@{s.memory}" if s.tensor else ""
        if s.port:
            where += f" port {s.port_memory}.{s.port}" if s.port_memory else f" {s.port}"
        if s.competitor:
            where += f" vs {s.competitor}"
        st = Stall(
            max(s.start, w0), min(s.end, w1), s.phase, s.cause, where.strip(), s.chain, s.cycles
        )
        (spatial if s.cause == SPATIAL else stalls).append(st)
    return stalls, spatial


def _l1_occupancy(res: SimResult, w0: int, w1: int) -> dict[str, list[tuple[int, int]]]:
    """Per memory with an L1 allocator: bytes in use, the value at w0 first; empty without one."""
    out: dict[str, list[tuple[int, int]]] = {}
    for t, memory, used in res.raw.rec.l1_occupancy or ():
        series = out.setdefault(memory, [(w0, 0)])
        if t <= w0 or series[-1][0] == t:
            series[-1] = (series[-1][0], used)
        elif t <= w1:  # a free at the last cycle shows the L1 empty when the run ends
            series.append((t, used))
    return out


def _buffers(res: SimResult, w0: int, w1: int) -> list[Buffer]:
    """Per storage node with recorded occupancy: tiles resident and the tile held by each slot."""
    plan, rec = res.raw.plan, res.raw.rec
    events: dict[int, list[tuple[int, int]]] = {}
    for t, node, d in rec.occupancy:
        events.setdefault(node, []).append((t, d))
    out = []
    for n in plan.nodes:
        if n.parent is None or (n.index not in events and n.index not in rec.occupancy_before):
            continue
        entered, released = rec.occupancy_before.get(n.index, [0, 0])
        slots: list[int | None] = [None] * n.slots
        for k in range(released, entered):
            slots[k % n.slots] = k
        bits = n.tile_values * (n.psum_bits if n.output_role else n.bits)
        buf = Buffer(n.memory, n.tensor, n.label(), n.slots, bits)
        buf.changes.append((w0, entered - released, tuple(slots)))
        for t, d in events.get(n.index, ()):
            if d > 0:
                slots[entered % n.slots] = entered
                entered += 1
            else:
                slots[released % n.slots] = None
                released += 1
            change = (max(t, w0), entered - released, tuple(slots))
            if buf.changes and buf.changes[-1][0] == change[0]:
                buf.changes[-1] = change
            else:
                buf.changes.append(change)
        out.append(buf)
    return out
