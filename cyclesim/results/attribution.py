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
from cyclesim.engine.rows import Repeat, Rows
from cyclesim.engine.run import RawRun
from cyclesim.results.spans import SpanList, SpanRepeat, same_moved
from cyclesim.schedule.plan import NodePlan
from cyclesim.vocabulary import Cause, Direction, Fold, PeWait, Wait

# the last link of the chain of a latency the PE array's pipeline causes
PIPELINE_DEPTH = "PE pipeline depth"
CAUSES = tuple(Cause)  # in the report's column order


@dataclass(frozen=True, slots=True)
class _Walk:
    """Where the walk to a root stands: whose timeline, the phase, the chain so far."""

    kind: Direction  # the fill's timeline or the write-back's
    node: int
    n: NodePlan
    phase: str
    here: tuple[str, ...]  # the chain, ending with this process
    depth: int
    entry: int | None  # the tile of node the chain waits for, when known
    what: str  # the process's action: fill, entry (reload), write-back


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
    return span.cause == Cause.LATENCY and span.port is None


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
            rows = (self.rec.fill_tl if kind == Direction.FILL else self.rec.drain_tl)[node]
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
        kind: Direction,
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
        cycle": parent tile resident, free slot, ports; the first unmet one is its state).
        Each recorded wait is explained by its entry in _BY_WAIT."""
        if a >= b:
            return
        n = self.nodes[node]
        tl = self._timeline(kind, node)
        times = self._times_of(kind, node)
        i = max(0, _bisect(times, a) - 1)
        what = (
            "write-back"
            if kind == Direction.WRITE_BACK
            else ("entry" if n.output_role else Direction.FILL)
        )
        here = chain + (f"{what} of {n.tensor} at {n.memory}",)
        repeats = tl.repeats if isinstance(tl, _RunReader) else ()
        w = _Walk(kind, node, n, phase, here, depth, entry, what)
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
                yield self._root(w, t, end, Cause.BUFFER_FULL, competitor="not started")
                t = end
                continue
            state, info = tl[i][1], tl[i][2]
            end = min(b, times[i + 1]) if i + 1 < len(tl) else b
            if end <= t:
                i += 1
                continue
            if depth > 64:
                yield self._root(w, t, end, Cause.DEPENDENCY, competitor="deep chain")
            else:
                by_wait = self._BY_WAIT.get(state)
                if by_wait is None:
                    raise AssertionError(f"unknown state {state}")
                yield from by_wait(self, w, t, end, info)
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

    def _root(
        self,
        w: _Walk,
        t: int,
        end: int,
        cause: Cause,
        port_key=None,
        competitor=None,
        why=(),
        holder=None,
    ) -> StallSpan:
        """A span of [t, end) charged to a root cause where the walk stands; why: the words
        the chain ends with beyond where it stands."""
        return self._span(
            t,
            end,
            w.phase,
            cause,
            w.n,
            port_key,
            None,
            competitor,
            w.here + why,
            action=w.what,
            holder=holder,
        )

    def _follow(self, w: _Walk, kind: Direction, node: int, t: int, end: int, why: str, entry=None):
        """Follow the wait into another process's timeline, one link deeper."""
        return self.explain(kind, node, t, end, w.phase, w.here + (why,), w.depth + 1, entry)

    # ------------------------------------------------- what each recorded wait is charged to
    def _slot(self, w: _Walk, t: int, end: int, holder: int):
        if self._draining(w.n, w.entry, holder):
            # the tile the chain waits for (a revisit) needs its previous visit's values
            # back first: that write-back is its state, not the slot (DESIGN's order)
            yield from self._follow(w, Direction.WRITE_BACK, w.node, t, end, "previous write-back")
            return
        n = w.n
        yield self._root(
            w,
            t,
            end,
            Cause.BUFFER_FULL,
            competitor=f"an earlier tile of {n.label()}",
            why=(f"no free slot in {n.memory}: tile {holder} still holds it",),
            holder=(w.node, holder),
        )

    def _parent(self, w: _Walk, t: int, end: int, parent: int):
        p = self.nodes[parent]
        entry = w.entry // w.n.ratio if w.entry is not None else None
        yield from self._follow(
            w, Direction.FILL, parent, t, end, f"parent tile at {p.memory}", entry
        )

    def _previous_write_back(self, w: _Walk, t: int, end: int, node: int):
        yield from self._follow(w, Direction.WRITE_BACK, node, t, end, "previous write-back")

    def _uses(self, w: _Walk, t: int, end: int, tile: int):
        who = self.rec.last_finisher.get((w.node, tile))
        if who is not None and who[0] == "node":
            yield from self._follow(w, Direction.WRITE_BACK, who[1], t, end, "tile still in use")
        else:
            yield self._root(
                w,
                t,
                end,
                Cause.DEPENDENCY,
                competitor="PE array",
                why=("tile in use by the PE array",),
            )

    def _space(self, w: _Walk, t: int, end: int, holder):  # no room in the memory (engine/space.py)
        n = w.n
        if holder is None:  # nothing held yet: the room is kept for the running branch
            who, why = "the running branch", f"room in {n.memory} kept for the running branch"
        else:
            h = self.nodes[holder[0]]
            who = f"a tile of {h.label()}"
            why = f"no room in {n.memory}: tile {holder[1]} of {h.label()} holds it"
        yield self._root(w, t, end, Cause.BUFFER_FULL, competitor=who, why=(why,), holder=holder)

    def _producer(self, w: _Walk, t: int, end: int, info):
        einsum, pkey = info
        yield from self.produced(w.n.parent, pkey, einsum, t, end, w.phase, w.here, w.depth + 1)

    def _port(self, w: _Walk, t: int, end: int, keys):
        own = 2 * w.node + (w.kind == Direction.WRITE_BACK)  # its requester id (engine/fabric.py)
        yield from self._contention(t, end, w.phase, w.n, own, keys, w.here, w.what)

    def _dma(self, w: _Walk, t: int, end: int, engine: str):
        yield self._root(
            w,
            t,
            end,
            Cause.CONTENTION,
            engine,
            f"DMA {engine} channels busy",
            (f"waiting for a channel of {engine}",),
        )

    def _setup(self, w: _Walk, t: int, end: int, engine: str):
        yield self._root(w, t, end, Cause.LATENCY, engine, why=(f"DMA {engine} setup",))

    def _burst(self, w: _Walk, t: int, end: int, key: str):
        yield self._root(w, t, end, Cause.BANDWIDTH, key, why=(f"moving bursts through {key}",))

    def _dram(self, w: _Walk, t: int, end: int, info):
        cause, key, opener, where = info
        where = _where_text(where, key.split(".", 1)[0], self._dram_config(key))
        competitor = self._label(opener) if opener is not None else None
        words = {
            Cause.ROW_MISS: f"row miss at {where}",
            Cause.BANK_CONFLICT: f"bank conflict at {where}: row opened by {competitor}",
            Cause.REFRESH: f"refresh at {where}",
            Cause.TURNAROUND: f"read/write turnaround at {where}",
            Cause.CONTENTION: f"DRAM data bus busy with {competitor} at {where}",
            Cause.DRAM_QUEUE: f"DRAM controller queue at {where}"
            + (f", behind {competitor}" if competitor is not None else ""),
        }[cause]
        yield self._root(w, t, end, cause, key, competitor, (words,))

    def _latency(self, w: _Walk, t: int, end: int, key: str):
        yield self._root(w, t, end, Cause.LATENCY, key, why=(f"latency of {key}",))

    def _pipeline(self, w: _Walk, t: int, end: int, _info):
        yield self._root(w, t, end, Cause.LATENCY, why=(PIPELINE_DEPTH,))

    def _idle(self, w: _Walk, t: int, end: int, _info):
        yield self._root(w, t, end, Cause.DEPENDENCY, why=("done",))

    # each wait a timeline records (vocabulary.Wait), and what explains its cycles
    _BY_WAIT = {
        Wait.SLOT: _slot,
        Wait.SPACE: _space,
        Wait.PARENT: _parent,
        Wait.PRODUCER: _producer,
        Wait.PREVIOUS_WRITE_BACK: _previous_write_back,
        Wait.USES: _uses,
        Wait.DMA: _dma,
        Wait.SETUP: _setup,
        Wait.PORT: _port,
        Wait.BURST: _burst,
        Wait.DRAM: _dram,
        Wait.LATENCY: _latency,
        Wait.PIPELINE: _pipeline,
        Wait.IDLE: _idle,
    }

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
                Cause.DEPENDENCY,
                n,
                None,
                None,
                einsum,
                chain + (f"Einsum {einsum} has not computed it",),
                action="compute",
            )
        if split < b and who is not None and who[0] == "node":
            yield from self.explain(
                Direction.WRITE_BACK,
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
                Cause.DEPENDENCY,
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
                Cause.CONTENTION,
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
            if kind == PeWait.PRODUCED:
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
                    Direction.FILL,
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
                Cause.SPATIAL,
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
        what = "preload and skew of each fold" if kind == Fold.FILL else "wavefront draining out"
        cause = Cause.SYSTOLIC_FILL if kind == Fold.FILL else Cause.SYSTOLIC_DRAIN
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
                Cause.LATENCY,
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
            Direction.WRITE_BACK,
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
