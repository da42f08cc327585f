"""The walk from a wait of the PE array to its root causes, through recorded timelines.

The PE array waits for a node's tile; that node's process was, cycle by cycle, waiting for a
slot, for its parent's tile, for the producing Einsum, for its ports, or moving bursts. A wait
for the parent is followed into the parent's timeline, and so on to a root. Interval
arithmetic over the recorded state timelines: no per-cycle loop. What each recorded wait is
charged to is the table results/wait_causes.BY_WAIT.

The Attributor also keeps `earliest`, the earliest start cycle of a recorded row the walks
have read (results/attribution.py: a fast-forward copy whose walk reads nothing before the
stretch is every copy's walk, moved).
"""

from __future__ import annotations

from bisect import bisect_right
from math import inf
from typing import NamedTuple

from cyclesim.engine.run import RawRun
from cyclesim.results.spans import SpanList, SpanRepeat, collect, same_moved
from cyclesim.results.stall_span import StallSpan
from cyclesim.results.timeline_reader import RunReader, read_rows, start_cycles, started_by
from cyclesim.results.wait_causes import BY_WAIT, holder_label
from cyclesim.schedule.plan import NodePlan
from cyclesim.vocabulary import Cause, Direction


class Walk(NamedTuple):
    """Where the walk to a root stands: whose timeline, the phase, the chain so far (a tuple:
    one is made per span walked, and a frozen dataclass costs several times more to make)."""

    kind: Direction  # the fill's timeline or the write-back's
    node: int
    n: NodePlan
    phase: str
    here: tuple[str, ...]  # the chain, ending with this process
    depth: int
    entry: int | None  # the tile of node the chain waits for, when known
    what: str  # the process's action: fill, entry (reload), write-back


class Attributor:
    """Walks recorded timelines of one run to roots."""

    def __init__(self, raw: RawRun) -> None:
        self.raw = raw
        self.nodes = raw.plan.nodes
        self.rec = raw.rec
        self._times: dict[tuple, object] = {}
        self._grants = {k: read_rows(v) for k, v in raw.rec.grants.items()}
        self._grant_starts: dict[str, object] = {}  # per port key, made on first look
        self._readers: dict[tuple, object] = {}
        self._processes: dict[tuple, tuple] = {}  # (kind, node) -> _process's answer
        # the earliest start cycle of a timeline row or port grant read so far (rows are
        # dated when recorded, so none earlier was read); -inf once a walk has read what
        # fast-forward does not repeat by copies (a tile's producer or last finisher, the
        # absence of any earlier row). The caller resets it around what it wants to know.
        self.earliest: float = inf

    # -------------------------------------------------------------- helpers
    def label(self, who: int) -> str:
        return holder_label(self.nodes, who)

    def _timeline(self, kind: str, node: int) -> list[tuple]:
        key = (kind, node)
        tl = self._readers.get(key)
        if tl is None:
            rows = (self.rec.fill_tl if kind == Direction.FILL else self.rec.drain_tl)[node]
            tl = self._readers[key] = read_rows(rows)
        return tl

    def _times_of(self, kind: str, node: int):
        key = (kind, node)
        t = self._times.get(key)
        if t is None:
            t = self._times[key] = start_cycles(self._timeline(kind, node))
        return t

    def _process(self, kind: Direction, node: int) -> tuple:
        """What a walk through node's `kind` process reads, made on first look: its timeline,
        the rows' start cycles and count, its repeats, its action and the chain's word for it."""
        key = (kind, node)
        got = self._processes.get(key)
        if got is None:
            n = self.nodes[node]
            tl, times = self._timeline(kind, node), self._times_of(kind, node)
            what = (
                "write-back"
                if kind == Direction.WRITE_BACK
                else ("entry" if n.output_role else Direction.FILL)
            )
            repeats = tl.repeats if isinstance(tl, RunReader) else ()
            word = f"{what} of {n.tensor} at {n.memory}"
            got = self._processes[key] = (n, tl, times, len(tl), repeats, what, word)
        return got

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
        Each recorded wait is explained by its entry in wait_causes.BY_WAIT."""
        if a >= b:
            return
        got = self._processes.get((kind, node))
        n, tl, times, rows, repeats, what, word = got or self._process(kind, node)
        i = bisect_right(times, a) if type(times) is list else times.count_by(a)
        i = i - 1 if i else 0
        if rows:  # reads row i, or that no row starts by a
            start = tl[i][0]
            first_read = start if start <= a else -inf
            if first_read < self.earliest:
                self.earliest = first_read
        w = Walk(kind, node, n, phase, chain + (word,), depth, entry, what)
        t = a
        while t < b:
            row = tl[i] if rows else None  # (i < rows: the walk ends at the last row)
            start = row[0] if rows else None
            if repeats and start == t:
                whole = self._repeated_copies(
                    repeats, i, t, b, kind, node, phase, chain, depth, entry
                )
                if whole is not None:
                    i, t = whole[0], whole[1]
                    yield whole[2]
                    continue
            if not rows or start > t:
                # before the process recorded anything: it had not started this work yet
                end = min(b, start) if rows else b
                yield self.root(w, t, end, Cause.BUFFER_FULL, competitor="not started")
                t = end
                continue
            state, info = row[1], row[2]
            end = min(b, tl[i + 1][0]) if i + 1 < rows else b
            if end <= t:
                i += 1
                continue
            if depth > 64:
                yield self.root(w, t, end, Cause.DEPENDENCY, competitor="deep chain")
            else:
                by_wait = BY_WAIT.get(state)
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
                return collect(self.explain(kind, node, a, a + P, phase, chain, depth, entry))

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

    def root(
        self,
        w: Walk,
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
        return self.span(
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

    def follow(self, w: Walk, kind: Direction, node: int, t: int, end: int, why: str, entry=None):
        """Follow the wait into another process's timeline, one link deeper."""
        return self.explain(kind, node, t, end, w.phase, w.here + (why,), w.depth + 1, entry)

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
        self.earliest = -inf  # fast-forward does not repeat `produced` by copies
        computed, who = self.rec.produced.get((node, pkey), (b, None))
        split = min(max(computed, a), b)
        if split > a:
            yield self.span(
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
            yield self.span(
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

    def contention(
        self, a: int, b: int, phase: str, n, own: int, keys: tuple[str, ...], chain, action=None
    ):
        """Split [a, b) by who held the wanted ports; the PE array when no transfer did.

        Every cycle names keys[0], the transfer's binding port (engine/link.py
        named_keys), whichever of its ports the competitor holds."""
        t = a
        while t < b:
            holder, until, busy = None, b, keys[0]
            for k in keys:
                grants = self._grants.get(k, [])
                starts = self._grant_starts.get(k)
                if starts is None:
                    starts = self._grant_starts[k] = start_cycles(grants)
                j = started_by(starts, t) - 1
                if grants:  # reads grant j, or that none starts by t
                    first_read = starts[j] if j >= 0 else -inf
                    if first_read < self.earliest:
                        self.earliest = first_read
                if j >= 0 and (grants[j][1] is None or grants[j][1] > t) and grants[j][2] != own:
                    end = grants[j][1] if grants[j][1] is not None else b
                    holder, until, busy = grants[j][2], min(b, end), k
                    break
                if j + 1 < len(starts):
                    until = min(until, max(starts[j + 1], t + 1))
            competitor = "PE array" if holder is None else self.label(holder)
            yield self.span(
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

    def span(
        self, a, b, phase, cause, n, port_key, _unused, competitor, chain, action=None, holder=None
    ) -> StallSpan:
        port, port_mem = _PORT_NAMES.get(port_key) or _port_names(port_key)
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


_PORT_NAMES: dict = {None: (None, None)}  # port key -> (port, memory), made on first use


def _port_names(port_key: str) -> tuple[str, str | None]:
    """'sram.rw_port_1' -> ('rw_port_1', 'sram'); a key without a memory -> (key, None)."""
    got = _PORT_NAMES[port_key] = (
        tuple(reversed(port_key.split(".", 1))) if "." in port_key else (port_key, None)
    )
    return got
