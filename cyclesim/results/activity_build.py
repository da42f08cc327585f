"""Build the Activity of a traced run: its raw records rearranged and clipped to a window.

The port grants, transfers, DMA channels, buffers, L1 and DRAM banks are read here; the PE
array's part in results.activity_pe. Result.activity calls build_activity once per window.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable

import numpy as np

from cyclesim.engine.fabric import PE, requester_of
from cyclesim.engine.loop import gc_paused
from cyclesim.engine.record import FOREVER
from cyclesim.errors import TraceError
from cyclesim.results.activity import (
    BANK_ACTIVE,
    BANK_IDLE,
    NO_ROW,
    Activity,
    Buffer,
    Busy,
    DramBank,
    Segments,
    Track,
    prefill_numbered,
)
from cyclesim.results.activity_pe import build_pe_states, build_pe_use
from cyclesim.results.record_columns import numbered_by, row_columns
from cyclesim.results.wait_causes import holder_label
from cyclesim.vocabulary import BankCommand, TransferKind, Wait

OPEN = -1  # the end (and bits) of a grant still held when the run ended (None in the record)


def _require_trace(res) -> None:
    rec = res.raw.rec
    if rec.transfers is None or rec.pe_segments is None or rec.occupancy is None:
        raise TraceError("this view needs a traced run: replay with trace=True (or a trace_filter)")


def window_of(res, window: tuple[int, int] | None = None) -> tuple[int, int]:
    """The recorded window intersected with the one asked for; raise TraceError if empty."""
    rec = res.raw.rec
    w0, w1 = rec.trace_window
    w1 = min(w1, res.cycles) if w1 != FOREVER else res.cycles
    if window is not None:
        w0, w1 = max(w0, window[0]), min(w1, window[1])
    if w1 <= w0 and not (w0 == w1 == res.cycles == 0):
        raise TraceError(f"the window [{w0}, {w1}) is empty: the run has {res.cycles} cycles")
    return w0, w1


def who_label(res, who: int) -> str:
    """A grant's holder in words: 'PE array', 'fill of A@abuf' or 'write-back of Z@acc'."""
    return holder_label(res.raw.plan.nodes, who)


def who_kind(res, who: int) -> str:
    """The kind of transfer a grant's holder makes: fill, reload (a fill of a node holding
    partial sums) or write-back; empty for the PE array."""
    if who == PE:
        return ""
    node, write_back = requester_of(who)
    if write_back:
        return TransferKind.WRITE_BACK
    return TransferKind.RELOAD if res.raw.plan.nodes[node].output_role else TransferKind.FILL


def _zipped(columns: list) -> list[tuple]:
    return list(
        zip(*(c.tolist() if isinstance(c, np.ndarray) else c for c in columns), strict=True)
    )


# what build_activity does, in order: on_stage is called with each name once it is done
ACTIVITY_STAGES = ("transfers", "ports", "PE segments", "PE array", "DMA", "buffers", "DRAM")


def build_activity(
    res, window: tuple[int, int] | None = None, on_stage: Callable[[str], None] | None = None
) -> Activity:
    """Gather the traced records of res (a Result) into an Activity clipped to window.

    Raise TraceError if the run was not traced or the window is empty. Views call
    Result.activity(window), which builds it once per window; on_stage(name) hears each
    of ACTIVITY_STAGES as it is done (a progress bar's ticks: building can take seconds).
    """
    with gc_paused():
        return _build_activity(res, window, on_stage or (lambda name: None))


def _build_activity(
    res, window: tuple[int, int] | None, on_stage: Callable[[str], None]
) -> Activity:
    _require_trace(res)
    plan, rec = res.raw.plan, res.raw.rec
    w0, w1 = window_of(res, window)
    keys = [p.key for p in plan.ports]
    port_memory = {p.key: p.memory for p in plan.ports}
    # every grant by column (with the bits the engine recorded it moved), fast-forward's
    # repeats written out by numpy
    grants = {key: row_columns(rec.grants.get(key, ()), 5, OPEN) for key in keys}
    on_stage("transfers")
    ports = {key: _port_track(res, rec, w0, w1, grants[key]) for key in keys}
    on_stage("ports")
    pe_segments = row_columns(rec.pe_segments, 4)  # sorted once, for both
    by_start = np.lexsort(pe_segments[::-1])
    pe_segments = [c[by_start] for c in pe_segments]
    segments = _segments(res, w0, w1, pe_segments)
    pe_ports, pieces = build_pe_use(res, w0, w1, pe_segments)
    shown = _shown_ports(rec.trace_filter, keys, port_memory, ports, pe_ports)
    on_stage("PE segments")
    pe_states = build_pe_states(res, w0, w1, pieces)
    on_stage("PE array")
    dma = _dma_channels(res, w0, w1, _sorted_transfers(rec.transfers) if plan.dma else [])
    on_stage("DMA")
    buffers = _buffers(res, w0, w1)
    on_stage("buffers")
    banks = _dram_banks(res, w0, w1, {port_memory[k] for k in shown})
    on_stage("DRAM")
    return Activity(
        w0,
        w1,
        res.cycles,
        {k: ports[k] for k in shown},
        {k: pe_ports[k] for k in shown},
        {k: port_memory[k] for k in shown},
        {p.key: p.width_bits for p in plan.ports if p.key in shown},
        dma,
        segments,
        pe_states,
        buffers,
        _memories(res),
        _l1_occupancy(res, w0, w1),
        banks,
        {name: config.ranks for name, config, _, _ in plan.dram},
    )


def _sorted_transfers(rows) -> list[tuple]:
    """The traced transfers, by start and then node (as sorted() orders them)."""
    transfers = row_columns(rows, 6)
    by_start = np.lexsort((transfers[2], transfers[0]))
    return _zipped([c[by_start] if isinstance(c, np.ndarray) else [c[i] for i in by_start.tolist()] for c in transfers])  # fmt: skip


def _port_track(res, rec, w0: int, w1: int, grants: list) -> Track:
    """A port's grants inside [w0, w1), clipped to it, whose holders the trace keeps (--only),
    with the bits the engine recorded each moved on the port (0 for one still open)."""
    starts, ends, holders, tensors, bits = grants
    ends = np.where(ends == OPEN, res.cycles, ends)
    bits = np.where(bits == OPEN, 0, bits)
    out = Track()
    distinct, holder = np.unique(holders, return_inverse=True)  # holder: each grant's, by number
    labels = [who_label(res, h) if _traced(rec, h) else "" for h in distinct.tolist()]
    kinds = [who_kind(res, h) for h in distinct.tolist()]
    shown = np.array([bool(label) for label in labels], dtype=bool)[holder.reshape(-1)]
    keep = np.flatnonzero(shown & (ends > w0) & (starts < w1))
    out.starts.frombytes(np.maximum(starts[keep], w0).tobytes())
    out.ends.frombytes(np.minimum(ends[keep], w1).tobytes())
    out.bits.frombytes(np.ascontiguousarray(bits[keep], dtype=np.int64).tobytes())
    # the kept grants' columns as lists, taken by numpy from object columns, not value by value
    held = holder.reshape(-1)[keep]
    out.tensors = _objects(tensors)[keep].tolist()
    out.whos = _objects(labels)[held].tolist()
    out.kinds = _objects(kinds)[held].tolist()
    prefill_numbered(out, "whos", numbered_by(held, labels)[0])  # for the views, from numbers
    return out


def _objects(values) -> np.ndarray:
    """A list as a numpy object column (its items themselves, not converted)."""
    column = np.empty(len(values), dtype=object)
    column[:] = values
    return column


def _traced(rec, who: int) -> bool:
    """Is a grant's holder among the traced resources (--only)? The PE array's, when its
    segments are kept; a transfer's, when its storage node is."""
    if who == PE:
        return rec.trace_leaves is None or any(rec.trace_leaves)
    return rec.trace_nodes is None or rec.trace_nodes[requester_of(who)[0]]


def _shown_ports(trace_filter, keys, port_memory, ports, pe_ports) -> list[str]:
    """The ports a trace shows: all, or with a resource filter (--only) those it names (by key
    or memory) and those a recorded transfer or PE segment used."""
    wanted = None if trace_filter is None else trace_filter.resources
    if wanted is None:
        return keys
    wanted = set(wanted)
    return [
        k
        for k in keys
        if k in wanted
        or port_memory[k] in wanted
        or len(ports[k].starts)
        or len(pe_ports[k].starts)
    ]


def _memories(res) -> list[str]:
    """Memory levels outermost first: in loop-tree order of their storage nodes, then by port."""
    plan = res.raw.plan
    return list(dict.fromkeys([n.memory for n in plan.nodes] + [p.memory for p in plan.ports]))


def _dma_channels(res, w0: int, w1: int, transfers: list[tuple]) -> dict[str, list[list[Busy]]]:
    """Transfers (the run's, by start and node) through each DMA engine laid onto channels
    (lowest free channel first)."""
    plan, rec = res.raw.plan, res.raw.rec
    out: dict[str, list[list[Busy]]] = {}
    free_at: dict[str, list[int]] = {}
    for name, channels, _setup in plan.dma:
        out[name] = [[] for _ in range(channels)]
        free_at[name] = [0] * channels
    for start, end, node, kind, _tile, bits in transfers if plan.dma else ():
        n = plan.nodes[node]
        if n.dma is None:
            continue
        tl = rec.drain_tl[node] if kind == TransferKind.WRITE_BACK else rec.fill_tl[node]
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
        if tl[i][1] == Wait.DMA:
            return min(tl[i + 1][0], end) if i + 1 < len(tl) else end
        i += 1
    return start


def _segments(res, w0: int, w1: int, segs: list[np.ndarray]) -> Segments:
    """The recorded segments (segs: sorted columns) inside [w0, w1), clipped to it."""
    starts, ends, leaf_of, tiles = segs
    inside = np.flatnonzero((ends > w0) & (starts < w1))
    return Segments(
        np.maximum(starts[inside], w0),
        np.minimum(ends[inside], w1),
        leaf_of[inside],
        tiles[inside],
        tuple(leaf.einsum for leaf in res.raw.plan.leaves),
    )


def _l1_occupancy(res, w0: int, w1: int) -> dict[str, list[tuple[int, int]]]:
    """Per memory with an L1 allocator: bytes in use, the value at w0 first; empty without one."""
    out: dict[str, list[tuple[int, int]]] = {}
    for t, memory, used in res.raw.rec.l1_occupancy or ():
        series = out.setdefault(memory, [(w0, 0)])
        if t <= w0 or series[-1][0] == t:
            series[-1] = (series[-1][0], used)
        elif t <= w1:  # a free at the last cycle shows the L1 empty when the run ends
            series.append((t, used))
    return out


def _dram_banks(res, w0: int, w1: int, shown: set[str]) -> dict[str, list[DramBank]]:
    """Per DRAM-modelled memory whose ports the trace shows: each used bank's state and open row
    over [w0, w1), from the bank commands the engine recorded per row visit (an activate opens
    a row; a precharge closes it, the bank idle once it is done; a refresh holds every bank of
    its rank). At one cycle an activate follows the end of a precharge or refresh."""
    records = res.raw.rec.dram_banks or ()
    configs = {name: config for name, config, _, _ in res.raw.plan.dram if name in shown}
    # (memory, bank) -> [(t, order, state, row)]; order puts the end of a precharge first
    changes: dict[tuple[str, int], list[tuple[int, int, str, int]]] = {}
    for seq, (t, memory, b, kind, value) in enumerate(records):
        config = configs.get(memory)
        if config is None:
            continue
        if kind == BankCommand.ACTIVATE:
            changes.setdefault((memory, b), []).append((t, 1, seq, BANK_ACTIVE, value))
            continue
        banks = range(b, b + config.banks) if kind == BankCommand.REFRESH else (b,)
        for bank in banks:
            out = changes.setdefault((memory, bank), [])
            out.append((t, 1, seq, kind, NO_ROW))
            out.append((value, 0, seq, BANK_IDLE, NO_ROW))
    result: dict[str, list[DramBank]] = {name: [] for name in configs}
    for (memory, b), items in sorted(changes.items()):
        bank = DramBank(memory, *configs[memory].bank_coords(b))
        state, row = BANK_IDLE, NO_ROW
        items.sort()
        for t, _, _, kind, value in items:
            if t <= w0:
                state, row = kind, value
                continue
            if t >= w1:
                break
            if not bank.times:
                bank.times.append(w0)
                bank.states.append(state)
                bank.rows.append(row)
            if bank.times[-1] == t:  # a later change at the same cycle replaces it
                bank.states[-1], bank.rows[-1] = kind, value
            elif kind != bank.states[-1] or value != bank.rows[-1]:
                bank.times.append(t)
                bank.states.append(kind)
                bank.rows.append(value)
            bank.activates += kind == BANK_ACTIVE
        if not bank.times:
            bank.times.append(w0)
            bank.states.append(state)
            bank.rows.append(row)
        bank.activates += sum(1 for t, _, _, kind, _ in items if kind == BANK_ACTIVE and t == w0)
        result[memory].append(bank)
    return result


def _buffers(res, w0: int, w1: int) -> list[Buffer]:
    """Per storage node with recorded occupancy: tiles resident and the tile held by each slot.

    Tiles enter and leave in order, tile k in slot k % slots: after e entries and r releases
    slot s holds the last tile k < e with k % slots == s, if k >= r (by numpy per node). Of
    several states at one cycle (times before w0 count as w0) the last is kept."""
    plan, rec = res.raw.plan, res.raw.rec
    times, node_of, deltas = row_columns(rec.occupancy, 3)
    order = np.argsort(node_of, kind="stable")
    cuts = np.flatnonzero(np.diff(node_of[order])) + 1
    events = {int(node_of[p[0]]): p for p in np.split(order, cuts)} if len(order) else {}
    out = []
    for n in plan.nodes:
        if n.parent is None or (n.index not in events and n.index not in rec.occupancy_before):
            continue
        entered, released = rec.occupancy_before.get(n.index, [0, 0])
        mine = events.get(n.index, np.zeros(0, dtype=np.int64))
        d = deltas[mine]
        at = np.concatenate(([w0], np.maximum(times[mine], w0)))
        ins = entered + np.concatenate(([0], np.cumsum(d > 0)))
        outs = released + np.concatenate(([0], np.cumsum(d <= 0)))
        last = np.ones(len(at), dtype=bool)  # the last state of each cycle
        last[:-1] = at[1:] != at[:-1]
        at, ins, outs = at[last], ins[last], outs[last]
        buf = Buffer(n.memory, n.tensor, n.label(), n.slots, n.tile_values * n.stored_bits)
        buf.times.frombytes(at.tobytes())
        buf.counts.frombytes((ins - outs).tobytes())
        for s in range(n.slots):
            k = ins - 1 - (ins - 1 - s) % n.slots  # the last tile entered into slot s
            held = np.where((k >= outs) & (k >= 0), k, -1)
            buf.slot_tiles.append(array("q", held.tobytes()))
        out.append(buf)
    return out
