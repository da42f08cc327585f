"""Every cycle the PE array does not complete a step, charged to one root cause.

The PE array waits for a node's tile; that node's process was, cycle by cycle, waiting for a
slot, for its parent's tile, for the producing Einsum, for its ports, or moving bursts. A wait
for the parent is followed into the parent's timeline, and so on to a root. Interval
arithmetic over the recorded state timelines: no per-cycle loop.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from cyclesim.engine.fabric import PE
from cyclesim.engine.record import (
    S_BURST,
    S_DMA,
    S_DRAIN,
    S_DRAM,
    S_IDLE,
    S_LATENCY,
    S_PARENT,
    S_PIPE,
    S_PORT,
    S_PRODUCER,
    S_SETUP,
    S_SLOT,
    S_SPACE,
    S_USES,
)
from cyclesim.engine.rows import Repeat, Rows
from cyclesim.engine.run import RawRun
from cyclesim.results.spans import SpanList, SpanRepeat, same_moved

BANDWIDTH, CONTENTION, BUFFER_FULL, LATENCY = "bandwidth", "contention", "buffer_full", "latency"
# the last link of the chain of a latency the PE array's pipeline causes
PIPELINE_DEPTH = "PE pipeline depth"
DEPENDENCY, SPATIAL, L1_ALLOC = "dependency", "spatial", "l1_alloc"
ROW_MISS, BANK_CONFLICT, REFRESH, TURNAROUND = "row_miss", "bank_conflict", "refresh", "turnaround"
DRAM_QUEUE = "dram_queue"  # the DRAM controller's queue full, or older requests served first
DRAM_CAUSES = (ROW_MISS, BANK_CONFLICT, REFRESH, TURNAROUND, DRAM_QUEUE)  # docs/dram_causes.md
SYSTOLIC_FILL, SYSTOLIC_DRAIN = "systolic_fill", "systolic_drain"  # a systolic fold's wavefront
CAUSES = (
    (BANDWIDTH, CONTENTION, BUFFER_FULL, LATENCY, DEPENDENCY, SPATIAL, L1_ALLOC)
    + DRAM_CAUSES
    + (SYSTOLIC_FILL, SYSTOLIC_DRAIN)
)


@dataclass(frozen=True, slots=True)
class StallSpan:
    """Cycles [start, end) charged to one root cause."""

    start: int
    end: int
    phase: str  # onload, compute, offload
    cause: str
    memory: str | None
    tensor: str | None
    port: str | None  # port name
    port_memory: str | None
    competitor: str | None
    chain: str  # the path from the PE array's wait to the root, words joined by ' <- '
    cycles: int  # end - start, except for spatial stalls spread over [start, end)
    action: str | None = (
        None  # what the root process was doing: fill, entry (reload), write-back, compute
    )
    holder: tuple[int, int] | None = None  # buffer_full: (node, the tile holding its slot)


def is_pipeline_latency(span) -> bool:
    """Whether a StallSpan (or a group of them, with the same cause and port) is the PE array's
    pipeline depth: the one latency charged to no port (a port's latency and a DMA engine's
    setup name theirs), what explain cuts."""
    return span.cause == LATENCY and span.port is None


class Attributor:
    """Walks recorded timelines of one run to roots."""

    def __init__(self, raw: RawRun) -> None:
        self.raw = raw
        self.nodes = raw.plan.nodes
        self.rec = raw.rec
        self._times: dict[tuple, object] = {}
        self._grants = {k: _reader(v) for k, v in raw.rec.grants.items()}
        self._grant_starts: dict[str, object] = {}  # per port key, made on first look
        self._readers: dict[tuple, object] = {}

    # -------------------------------------------------------------- helpers
    def _label(self, who: int) -> str:
        if who == PE:
            return "PE array"
        n = self.nodes[who // 2]
        return f"{'write-back' if who % 2 else 'fill'} of {n.label()}"

    def _dram_config(self, port_key: str):
        """The DramConfig of the DRAM-modelled memory a port key belongs to."""
        memory = port_key.split(".", 1)[0]
        return next((c for name, c, _, _ in self.raw.plan.dram if name == memory), None)

    def _timeline(self, kind: str, node: int) -> list[tuple]:
        key = (kind, node)
        tl = self._readers.get(key)
        if tl is None:
            rows = (self.rec.fill_tl if kind == "fill" else self.rec.drain_tl)[node]
            tl = self._readers[key] = _reader(rows)
        return tl

    def _times_of(self, kind: str, node: int):
        key = (kind, node)
        t = self._times.get(key)
        if t is None:
            t = self._times[key] = _starts(self._timeline(kind, node))
        return t

    # -------------------------------------------------------------- the walk
    def explain(
        self,
        kind: str,
        node: int,
        a: int,
        b: int,
        phase: str,
        chain: tuple[str, ...],
        depth: int = 0,
        entry: int | None = None,
    ):
        """Yield StallSpans covering [a, b) by what node's `kind` process was doing.

        entry: the tile of node the chain waits for, when known (a fill): a revisit whose
        previous visit is still being written back waits on that write-back first, even while
        the process is still at an earlier entry waiting for a slot (DESIGN "Cause of a waiting
        cycle": parent tile resident, free slot, ports; the first unmet one is its state)."""
        if a >= b:
            return
        n = self.nodes[node]
        tl = self._timeline(kind, node)
        times = self._times_of(kind, node)
        i = max(0, _bisect(times, a) - 1)
        what = "write-back" if kind == "drain" else ("entry" if n.output_role else "fill")

        def span(*args, holder=None):
            return self._span(*args, action=what, holder=holder)

        here = chain + (f"{what} of {n.tensor} at {n.memory}",)
        repeats = tl.repeats if isinstance(tl, _RunReader) else ()
        t = a
        while t < b:
            if repeats and i < len(tl) and times[i] == t:
                whole = self._repeated_copies(
                    repeats, i, t, b, kind, node, phase, chain, depth, entry
                )
                if whole is not None:
                    i, t = whole[0], whole[1]
                    yield whole[2]
                    continue
            if not tl or times[i] > t:
                # before the process recorded anything: it had not started this work yet
                end = min(b, times[i]) if tl else b
                yield span(t, end, phase, BUFFER_FULL, n, None, None, "not started", here)
                t = end
                continue
            state, info = tl[i][1], tl[i][2]
            end = min(b, times[i + 1]) if i + 1 < len(tl) else b
            if end <= t:
                i += 1
                continue
            if depth > 64:
                yield span(t, end, phase, DEPENDENCY, n, None, None, "deep chain", here)
            elif state == S_SLOT and self._draining(n, entry, info):
                # the tile the chain waits for (a revisit) needs its previous visit's values
                # back first: that write-back is its state, not the slot (DESIGN's order)
                yield from self.explain(
                    "drain", node, t, end, phase, here + ("previous write-back",), depth + 1
                )
            elif state == S_PARENT:
                p = self.nodes[info]
                yield from self.explain(
                    "fill",
                    info,
                    t,
                    end,
                    phase,
                    here + (f"parent tile at {p.memory}",),
                    depth + 1,
                    entry // n.ratio if entry is not None else None,
                )
            elif state == S_DRAIN:
                yield from self.explain(
                    "drain", info, t, end, phase, here + ("previous write-back",), depth + 1
                )
            elif state == S_USES:
                who = self.rec.last_finisher.get((node, info))
                if who is not None and who[0] == "node":
                    yield from self.explain(
                        "drain", who[1], t, end, phase, here + ("tile still in use",), depth + 1
                    )
                else:
                    yield span(
                        t,
                        end,
                        phase,
                        DEPENDENCY,
                        n,
                        None,
                        None,
                        "PE array",
                        here + ("tile in use by the PE array",),
                    )
            elif state == S_SLOT:
                yield span(
                    t,
                    end,
                    phase,
                    BUFFER_FULL,
                    n,
                    None,
                    None,
                    f"an earlier tile of {n.label()}",
                    here + (f"no free slot in {n.memory}: tile {info} still holds it",),
                    holder=(node, info),
                )
            elif state == S_SPACE:  # no room in the memory (engine/space.py)
                if info is None:  # nothing held yet: the room is kept for the running branch
                    who, why = (
                        "the running branch",
                        f"room in {n.memory} kept for the running branch",
                    )
                else:
                    holder = self.nodes[info[0]]
                    who = f"a tile of {holder.label()}"
                    why = f"no room in {n.memory}: tile {info[1]} of {holder.label()} holds it"
                yield span(
                    t, end, phase, BUFFER_FULL, n, None, None, who, here + (why,), holder=info
                )
            elif state == S_PRODUCER:
                einsum, pkey = info
                yield from self.produced(n.parent, pkey, einsum, t, end, phase, here, depth + 1)
            elif state == S_PORT:
                yield from self._contention(
                    t, end, phase, n, 2 * node + (kind == "drain"), info, here, what
                )
            elif state == S_DMA:
                yield span(
                    t,
                    end,
                    phase,
                    CONTENTION,
                    n,
                    info,
                    None,
                    f"DMA {info} channels busy",
                    here + (f"waiting for a channel of {info}",),
                )
            elif state == S_SETUP:
                yield span(
                    t, end, phase, LATENCY, n, info, None, None, here + (f"DMA {info} setup",)
                )
            elif state == S_BURST:
                yield span(
                    t,
                    end,
                    phase,
                    BANDWIDTH,
                    n,
                    info,
                    None,
                    None,
                    here + (f"moving bursts through {info}",),
                )
            elif state == S_DRAM:
                cause, key, opener, where = info
                where = _where_text(where, key.split(".", 1)[0], self._dram_config(key))
                competitor = self._label(opener) if opener is not None else None
                words = {
                    ROW_MISS: f"row miss at {where}",
                    BANK_CONFLICT: f"bank conflict at {where}: row opened by {competitor}",
                    REFRESH: f"refresh at {where}",
                    TURNAROUND: f"read/write turnaround at {where}",
                    CONTENTION: f"DRAM data bus busy with {competitor} at {where}",
                    DRAM_QUEUE: f"DRAM controller queue at {where}"
                    + (f", behind {competitor}" if competitor is not None else ""),
                }[cause]
                yield span(t, end, phase, cause, n, key, None, competitor, here + (words,))
            elif state == S_LATENCY:
                yield span(
                    t, end, phase, LATENCY, n, info, None, None, here + (f"latency of {info}",)
                )
            elif state == S_PIPE:
                yield span(t, end, phase, LATENCY, n, None, None, None, here + (PIPELINE_DEPTH,))
            elif state == S_IDLE:
                yield span(t, end, phase, DEPENDENCY, n, None, None, None, here + ("done",))
            else:
                raise AssertionError(f"unknown state {state}")
            t = end
            i += 1

    def _repeated_copies(self, repeats, i, t, b, kind, node, phase, chain, depth, entry):
        """When row i of node's timeline starts a copy of a stretch fast-forward repeated and
        at least four whole copies lie in [t, b): (the row index and cycle after them, their
        spans as a SpanList of copy 1 and a SpanRepeat of the rest); else None.

        Copies are walked like _walk_waits walks the PE array's: the first, second, third and
        last on their own, and the second to last repeated when the third and last are the
        second moved on (what they read the jump repeated too). Spans split at row starts
        anyway, so cutting the walk at copy starts changes no span."""
        r = bisect_right(repeats[0], i) - 1
        if r >= 0:
            start, piece = repeats[0][r], repeats[1][r]
            n, K = piece._n, piece.count
            if i >= start + n * K or (i - start) % n:
                return None
            P = piece._span
            c0 = (i - start) // n  # copies of the piece before row i
            # whole copies c0..: copy c ends where copy c + 1 starts (not the last copy)
            m = min(K - 1 - c0, (b - t) // P) if P > 0 else 0
            if m < 4:
                return None
            d = piece.tile.by if piece.tile is not None and piece.tile.states else 0
            tiles = tuple(d if k == node else 0 for k in range(len(self.nodes))) if d else None

            def walk(c: int) -> SpanList:
                a = t + c * P
                return _collect(self.explain(kind, node, a, a + P, phase, chain, depth, entry))

            first, second = walk(0), walk(1)
            last = walk(m - 1)
            if not (
                same_moved(second, walk(2), P, 1, tiles)
                and same_moved(second, last, (m - 2) * P, m - 2, tiles)
            ):
                return None
            out = SpanList()
            out.add(first)
            out.add(SpanRepeat(second, m - 1, P, tiles))
            return i + m * n, t + m * P, out
        return None

    def _draining(self, n, entry: int | None, holder: int) -> bool:
        """Whether entry (a revisit of an output tile whose parent is the backing store) still
        waits for its previous visit's write-back while the process waits for tile holder's
        slot. A tile's slot is freed when its write-back lands, and write-backs land in tile
        order: while the slot of holder <= the previous visit is held, that visit has not
        landed either."""
        if entry is None or not n.output_role or not self.nodes[n.parent].is_backing:
            return False
        if entry <= holder or n.visit_flags(entry)[0]:
            return False
        key = n.element_key(entry)
        return any(n.element_key(j) == key for j in range(entry - 1, holder - 1, -1))

    def produced(
        self,
        node: int,
        pkey: int,
        einsum: str | None,
        a: int,
        b: int,
        phase: str,
        chain: tuple[str, ...],
        depth: int = 0,
    ):
        """Yield StallSpans covering [a, b), a wait for part pkey of node's tile to be produced.

        `dependency` while the producing Einsum has not computed the part; from the cycle it
        has, the wait follows the write-back that lands the part in the node.
        """
        n = self.nodes[node]
        computed, who = self.rec.produced.get((node, pkey), (b, None))
        split = min(max(computed, a), b)
        if split > a:
            yield self._span(
                a,
                split,
                phase,
                DEPENDENCY,
                n,
                None,
                None,
                einsum,
                chain + (f"Einsum {einsum} has not computed it",),
                action="compute",
            )
        if split < b and who is not None and who[0] == "node":
            yield from self.explain(
                "drain",
                who[1],
                split,
                b,
                phase,
                chain + (f"computed by {einsum} at cycle {computed}, being written back",),
                depth,
            )
        elif split < b:  # no write-back to follow: the producer itself completed it
            yield self._span(
                split,
                b,
                phase,
                DEPENDENCY,
                n,
                None,
                None,
                einsum,
                chain + (f"Einsum {einsum} has not produced it",),
                action="compute",
            )

    def _contention(
        self, a: int, b: int, phase: str, n, own: int, keys: tuple[str, ...], chain, action=None
    ):
        """Split [a, b) by who held the wanted ports; the PE array when no transfer did.

        Every cycle names keys[0], the transfer's binding port (engine/transfer.py
        named_keys), whichever of its ports the competitor holds."""
        t = a
        while t < b:
            holder, until, busy = None, b, keys[0]
            for k in keys:
                grants = self._grants.get(k, [])
                starts = self._grant_starts.get(k)
                if starts is None:
                    starts = self._grant_starts[k] = _starts(grants)
                j = _bisect(starts, t) - 1
                if j >= 0 and (grants[j][1] is None or grants[j][1] > t) and grants[j][2] != own:
                    end = grants[j][1] if grants[j][1] is not None else b
                    holder, until, busy = grants[j][2], min(b, end), k
                    break
                if j + 1 < len(starts):
                    until = min(until, max(starts[j + 1], t + 1))
            competitor = "PE array" if holder is None else self._label(holder)
            yield self._span(
                t,
                until,
                phase,
                CONTENTION,
                n,
                keys[0],
                None,
                competitor,
                chain + (f"{busy} busy with {competitor}",),
                action=action,
            )
            t = until

    def _span(
        self, a, b, phase, cause, n, port_key, _unused, competitor, chain, action=None, holder=None
    ) -> StallSpan:
        port = port_mem = None
        if port_key is not None and "." in port_key:
            port_mem, port = port_key.split(".", 1)
        elif port_key is not None:
            port = port_key
        return StallSpan(
            a,
            b,
            phase,
            cause,
            n.memory,
            n.tensor,
            port,
            port_mem,
            competitor,
            " <- ".join(chain),
            b - a,
            action,
            holder,
        )


def attribute(raw: RawRun) -> SpanList:
    """All stall spans of a run: onload, waits between steps, spatial stalls, offload."""
    rec, plan = raw.rec, raw.plan
    at = Attributor(raw)
    first = rec.first_step if rec.first_step is not None else raw.cycles
    producer_of = {leaf.operands[-1].tensor: leaf.einsum for leaf in plan.leaves}

    def waits(rows) -> SpanList:
        spans = _Collector()
        for t0, t1, node, kind, key in rows:
            phase = "onload" if t1 <= first else "compute"
            n = plan.nodes[node]
            if kind == "produced":
                spans.extend(
                    at.produced(
                        node,
                        key,
                        producer_of.get(n.tensor),
                        t0,
                        t1,
                        phase,
                        (f"PE array waits for {n.tensor} at {n.memory}",),
                    )
                )
                continue
            spans.extend(
                at.explain(
                    "fill",
                    node,
                    t0,
                    t1,
                    phase,
                    (f"PE array waits for {n.tensor} tile at {n.memory}",),
                    entry=key,
                )
            )
        return spans.done()

    out = _walk_waits(rec.pe_waits, waits)
    spans: list[StallSpan] = []
    for (li, oi, key), (cycles, start, end) in rec.spatial.items():
        leaf = plan.leaves[li]
        o = leaf.operands[oi]
        # the port that binds the step (DESIGN "Naming a stalled transfer's port")
        port = next(p for p in (o.read_port, o.write_port) if p is not None and p.key == key)
        spans.append(
            StallSpan(
                start,
                end,
                "compute",
                SPATIAL,
                plan.nodes[o.node].memory,
                o.tensor,
                port.name if port else None,
                port.memory if port else None,
                None,
                f"PE array steps of {leaf.einsum} wait on {port.key if port else '?'} "
                f"({o.values_per_step * o.bits} b per step, {port.width_bits if port else '?'} b/cycle)",
                cycles,
                "compute",
            )
        )
    spans.extend(_wavefront(raw))
    out.add(spans)
    last = rec.last_step_end
    if raw.cycles > last:
        out.add(_offload(at, raw, last))
    return out


def _walk_waits(rows: Rows, waits) -> SpanList:
    """The spans of the PE array's waits; a stretch fast-forward repeated K times gives its
    copies' spans as a SpanRepeat when they repeat exactly.

    Copy j's waits are copy 1's moved j - 1 periods on, and so are the timelines and grants
    they are traced through, within the stretch. A walk may still read rows from before the
    stretch (a transfer already under way when it began): copy 1 is walked on its own, copies
    2, 3 and K are walked and compared, and when 3 and K are 2 moved on, so is every copy
    between (each reads rows the stretch repeats). Otherwise every copy is walked.
    """
    out = SpanList()
    for piece in rows.pieces():
        if not isinstance(piece, Repeat):
            out.add(waits(piece))
            continue
        period = dict(piece.steps).get(0, 0)
        tiles = piece.tile.by if piece.tile is not None else None  # per node, per period
        K = piece.count
        copies: dict[int, SpanList] = {}

        def copy(j: int, piece=piece, copies=copies) -> SpanList:
            if j not in copies:
                copies[j] = _walk_waits(piece.copy_rows(j), waits)
            return copies[j]

        out.add(copy(1))
        if K >= 4 and (
            same_moved(copy(2), copy(3), period, 1, tiles)
            and same_moved(copy(2), copy(K), (K - 2) * period, K - 2, tiles)
        ):
            out.add(SpanRepeat(copy(2), K - 1, period, tiles))
            continue

        for j in range(2, K + 1):
            out.add(copy(j))
            copies.pop(j, None)
    return out


def _wavefront(raw: RawRun) -> list[StallSpan]:
    """A systolic array's fill and drain cycles, one span per leaf and kind, like spatial stalls.

    They lie between the PE array's first step and its last one, so they are compute-phase
    stalls: cycles in which the array completes no iteration of the loop nest.
    """
    plan, spans = raw.plan, []
    for (li, kind), (cycles, start, end) in raw.rec.systolic.items():
        leaf = plan.leaves[li]
        what = "preload and skew of each fold" if kind == "fill" else "wavefront draining out"
        cause = SYSTOLIC_FILL if kind == "fill" else SYSTOLIC_DRAIN
        spans.append(
            StallSpan(
                start,
                end,
                "compute",
                cause,
                None,
                None,
                None,
                None,
                None,
                f"PE array of {leaf.einsum}: {what} ({plan.systolic.dataflow.value} systolic array)",
                cycles,
                "compute",
            )
        )
    return spans


def _offload(at: Attributor, raw: RawRun, last: int) -> list[StallSpan] | SpanList:
    """After the last step: follow the write-back that lands last, back to its roots."""
    plan, rec = raw.plan, raw.rec
    best, best_t = None, -1
    for n in plan.nodes:
        tl = rec.drain_tl[n.index]
        if tl and tl[-1][0] > best_t:
            best, best_t = n.index, tl[-1][0]
    if best is None or best_t < raw.cycles:
        return [
            StallSpan(
                last,
                raw.cycles,
                "offload",
                LATENCY,
                None,
                None,
                None,
                None,
                None,
                PIPELINE_DEPTH,
                raw.cycles - last,
            )
        ]
    n = plan.nodes[best]
    return _collect(
        at.explain(
            "drain",
            best,
            last,
            raw.cycles,
            "offload",
            (f"run ends with the write-back of {n.tensor} from {n.memory}",),
        )
    )


class _Collector:
    """Builds a SpanList from what explain yields: StallSpans, gathered into lists, and the
    SpanLists of repeated stretches, kept as their pieces."""

    __slots__ = ("out", "run")

    def __init__(self) -> None:
        self.out, self.run = SpanList(), []

    def extend(self, items) -> None:
        run = self.run
        for item in items:
            if isinstance(item, StallSpan):
                run.append(item)
                continue
            self.out.add(run)
            self.run = run = []
            self.out.add(item)

    def done(self) -> SpanList:
        self.out.add(self.run)
        self.run = []
        return self.out


def _collect(items) -> SpanList:
    """What explain yields, as one SpanList."""
    c = _Collector()
    c.extend(items)
    return c.done()


class _RunReader:
    """Rows fast-forward repeated, read by index one run at a time: the piece (a list, or one
    copy of a Repeat shifted whole) holding the last row read is kept, so a walk over
    neighbouring rows pays one lookup per copy, not per row (engine/rows.py)."""

    __slots__ = ("rows", "_lo", "_hi", "_run", "_n", "repeats")

    COPY_LIMIT = 4096  # copies of longer periods are read row by row (no large copy made)

    def __init__(self, rows: Rows) -> None:
        self.rows, self._lo, self._hi, self._run, self._n = rows, 0, 0, (), len(rows)
        starts, pieces, at = [], [], 0
        for piece in rows.pieces():
            if isinstance(piece, Repeat):
                starts.append(at)
                pieces.append(piece)
            at += len(piece)
        # the repeated stretches: (their first row indices, the Repeats), or () for none
        self.repeats = (starts, pieces) if pieces else ()

    def __len__(self) -> int:
        return self._n

    def __bool__(self) -> bool:
        return self._n > 0

    def __getitem__(self, i: int) -> tuple:
        if i < 0:
            i += self._n
        if self._lo <= i < self._hi:
            return self._run[i - self._lo]
        piece, r = self.rows._locate(i)
        if not isinstance(piece, Repeat):
            self._lo, self._hi, self._run = i - r, i - r + len(piece), piece
            return piece[r]
        n = piece._n
        if n > self.COPY_LIMIT:
            return piece.row(r)
        j, k = divmod(r, n)
        self._lo = i - k
        self._hi = self._lo + n
        self._run = [piece.shift(row, j + 1) for row in piece.base]
        return self._run[k]

    def bisect_right(self, key: int) -> int:
        return self.rows.bisect_right(key)


def _reader(rows):
    """The rows as they are when they are a plain list, else a _RunReader over them."""
    if isinstance(rows, Rows) and rows.flat is None:
        return _RunReader(rows)
    return rows.flat if isinstance(rows, Rows) else rows


class _StartColumn:
    """The first column (start cycles) of rows fast-forward repeated, read without writing
    the rows out: indexing and bisect by arithmetic over the repeats (engine/rows.py)."""

    __slots__ = ("rows",)

    def __init__(self, rows: Rows) -> None:
        self.rows = rows

    def __getitem__(self, i: int) -> int:
        return self.rows[i][0]

    def __len__(self) -> int:
        return len(self.rows)


_STARTS_LIMIT = 250_000  # longer repeated timelines keep their starts as arithmetic


def _starts(rows) -> object:
    """The start cycles of a timeline's or a port's rows: a list when the rows are one."""
    if isinstance(rows, _RunReader):
        rows = rows.rows
    flat = rows.flat if isinstance(rows, Rows) else rows
    if flat is None and len(rows) <= _STARTS_LIMIT:
        flat = rows  # a few hundred thousand ints: bisected by the builtin, read by index
    if flat is None:
        return _StartColumn(_RunReader(rows))
    return _first_column(flat) if isinstance(flat, Rows) else [r[0] for r in flat]


def _first_column(rows: Rows) -> list[int]:
    """The first column of rows, each repeated stretch by arithmetic over its base's column
    (copy j adds j times the stretch's step to it) instead of shifting every row."""
    out: list[int] = []
    for piece in rows.pieces():
        if not isinstance(piece, Repeat) or (piece.tile is not None and piece.tile.column == 0):
            out.extend([r[0] for r in piece])
            continue
        base, step = _first_column(piece.base), dict(piece.steps).get(0, 0)
        for j in range(1, piece.count + 1):
            d = j * step
            out.extend([x + d for x in base])
    return out


def _bisect(starts, t: int) -> int:
    """How many rows start at or before t."""
    if isinstance(starts, _StartColumn):
        return starts.rows.bisect_right(t)
    return bisect_right(starts, t)


def bank_path(channel: int, rank: int, bank_group: int, bank: int, ranks: int) -> tuple[str, ...]:
    """('ch0', 'bg1', 'bank2') for bank 2 of bank group 1, with 'rank1' after the channel when
    the device has more than one rank: the words the traces name a bank by (its VCD scopes,
    its Perfetto track after the memory's name) and the stall chains too."""
    rank_word = (f"rank{rank}",) if ranks > 1 else ()
    return (f"ch{channel}", *rank_word, f"bg{bank_group}", f"bank{bank}")


def _where_text(where: tuple[int, int, int], memory: str, config) -> str:
    """'DRAM ch0 bg1 bank1 row 17' for a DRAM delay's (channel, flat bank index, row): the
    bank as the traces name it (config: the memory's DramConfig; without it 'channel 0 bank 5
    row 17', the bank counted as the timer does)."""
    channel, bank, row = where
    if config is None:
        return f"channel {channel} bank {bank} row {row}"
    return f"{memory} {' '.join(bank_path(*config.bank_coords(bank), config.ranks))} row {row}"
