"""The PE array: its process over the program's segments, and the state it carries.

The PE array waits for each segment's operand tiles (engine/storage_node.py), takes its port
shares for the kind of segment, computes it, and hands the tiles' uses back. Its segment,
the kind of segment whose shares it holds and its open wait are fields here, read back after
every yield, so fast-forward can compare them (snapshot) and move them (shift).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from cyclesim.engine.event_loop import Event
from cyclesim.engine.snapshot import Origin, Unknown
from cyclesim.engine.systolic import Wavefront
from cyclesim.schedule.counts import READ, READ_TO_BELOW, WRITE, WRITE_FROM_BELOW
from cyclesim.schedule.steps import program_blocks, segment_classifier, segment_profile
from cyclesim.vocabulary import Fold, PeWait, Wait

if TYPE_CHECKING:
    from cyclesim.engine.rows import Rows
    from cyclesim.engine.shared import Replay

# the vocabulary's members this module reads on the hot path, bound once: an enum
# attribute costs ~0.2 us in Python 3.11 (EnumType's __getattr__), a global ~0.02 us
_COMPUTE = Wait.COMPUTE
_FOLD_DRAIN = Fold.DRAIN
_FOLD_FILL = Fold.FILL
_IDLE = Wait.IDLE
_OPERAND = Wait.OPERAND
_PE_PRODUCED = PeWait.PRODUCED
_PE_RESIDENT = PeWait.RESIDENT
_PIPELINE = Wait.PIPELINE
_START = Wait.START
_WAVEFRONT_DRAIN = Wait.WAVEFRONT_DRAIN
_WAVEFRONT_FILL = Wait.WAVEFRONT_FILL


class PeArray:
    """The PE array of one replay: its process, the segment it is at, what it holds."""

    __slots__ = ("replay", "stage", "g", "start", "held", "kinds", "wait", "waiting")

    def __init__(self, replay: Replay) -> None:
        self.replay = replay
        self.stage = _START  # the yield it is suspended at (its timeline's word)
        self.g = 0  # the segment being waited for or computed
        self.start = 0  # start of the segment's stream
        self.held: _SegmentKind | None = None  # the kind whose port shares it holds
        # (leaf, level, first visit) -> _SegmentKind, in first-run order
        self.kinds: dict[tuple, _SegmentKind] = {}
        self.wait: _SegmentWait | None = None  # the open wait for a segment's operands
        # (node, tile, 'resident' | 'produced', since) while it waits (deadlock messages)
        self.waiting: tuple | None = None

    def process(self):
        """Wait for each segment's operand tiles, then compute the segment.

        Over 80 lines: one generator on purpose, it is a SimPy process on the hot path (per
        segment and per operand), and splitting it into sub-generators would cost a frame per
        yield. The segment it is at, the kind whose port shares it holds and its open wait
        are fields of self, read back after every yield (fast-forward may have moved them).
        """
        r, st = self.replay, self
        env, rec, plan = r.env, r.rec, r.plan
        nodes, fabric = plan.nodes, r.fabric
        waits, spatial, pe_segments = rec.pe_waits, rec.spatial, rec.pe_segments
        set_shares, timeout = fabric.set_shares, env.fast_timeout
        kinds = st.kinds  # (leaf, level, first visit) -> _SegmentKind, in first-run order
        # read off the enum once: an enum attribute costs ~0.3 us in Python 3.11 (EnumType's
        # __getattr__), and the loop below runs per segment and per operand
        resident, produced, computing = _PE_RESIDENT, _PE_PRODUCED, _COMPUTE
        wave = None
        if plan.systolic is not None:
            wave = Wavefront(plan, rec.systolic, rec.systolic_spans)
        boundaries, every = r.boundaries, r.boundary_every
        storage = r.nodes
        previous = None  # the leaf of the block run before this one
        for li, g0, g1 in program_blocks(plan):
            # DESIGN "Operand registers hold the previous cycle's value only": the first step
            # after another Einsum's step re-reads every operand (level 0)
            after_other = previous is not None and previous != li
            previous = li
            if r.space.tight:  # fills into shared memories wait for their branch's turn
                r.space.enter(li)
            leaf = plan.leaves[li]
            who = ("pe", li)
            classify = segment_classifier(leaf)
            # per operand: node, ratio, tiles, waits for residency, waits for the producer,
            # output, the node's plan (parts of a tile its producer completes in turn), and
            # the node's finish_use (bound once: it runs per operand and segment)
            ops = tuple(
                (
                    o.node,
                    o.ratio,
                    storage[o.node].tiles,
                    not nodes[o.node].is_backing,
                    not o.is_output and nodes[o.node].output_role,
                    o.is_output,
                    nodes[o.node],
                    storage[o.node].finish_use,
                )
                for o in leaf.operands
            )
            st.g = g0
            while st.g < g1:
                g = st.g
                for i, (node, ratio, t, check_resident, check_produced, _, n, _) in enumerate(ops):
                    k = g // ratio
                    ev = None
                    if check_resident and t.resident.get(k) is not True:
                        ev = t.waiter(t.resident, k)
                    pkey = k
                    if check_produced and n.dependency_groups > 1:
                        pkey = k * n.dependency_groups + n.user_group(g, ratio)
                    if ev is None and check_produced:
                        ev = t.waiter(t.produced, pkey)
                        kind = produced
                    else:
                        kind = resident
                    while ev is not None:
                        if st.wait is None:
                            if st.held is not None:  # the PE array uses no port while it waits
                                set_shares(st.held.give_back)
                                st.held = None
                            st.wait = _SegmentWait(env.now, ops, g, i)
                        st.waiting = (node, k, kind, env.now)
                        st.stage = _OPERAND
                        yield ev
                        st.waiting = None
                        rec.events += 1
                        st.wait.met(i, kind, env.now, k, pkey)
                        ev = None
                        if kind is resident and check_produced:
                            ev = t.waiter(t.produced, pkey)
                            kind = produced
                if st.wait is not None:
                    st.wait.record(waits, ops, env.now)
                    st.wait = None
                if rec.first_step is None:
                    rec.first_step = env.now
                level, first = classify(g)
                if after_other and g == g0:
                    level = 0
                sk = kinds.get((li, level, first))
                if sk is None:  # a handful of kinds of segment per leaf: compute each once
                    sk = kinds[(li, level, first)] = _SegmentKind(leaf, level, first)
                held = st.held
                if sk is not held:
                    shares = sk.after.get(held)
                    if shares is None:
                        shares = sk.after[held] = sk.shares_after(held)
                    set_shares(shares)
                    st.held = sk
                if boundaries is not None and g % every == 0:
                    boundaries.append(g)  # fast-forward may snapshot after this step
                if wave is not None and (fill := wave.fill_cycles(li, g, g0, level)):
                    st.stage = _WAVEFRONT_FILL
                    yield timeout(fill)  # systolic: preload and skew of a new fold
                    rec.events += 1
                    wave.note(li, _FOLD_FILL, env.now - fill, env.now)
                st.start = env.now
                st.stage = computing
                yield timeout(sk.cycles)
                rec.events += 1
                g, start, now = st.g, st.start, env.now
                if wave is not None and (drain := wave.drain_cycles(li, g, g1, classify)):
                    st.stage = _WAVEFRONT_DRAIN
                    yield timeout(drain)  # systolic: the fold's wavefront leaves the array
                    rec.events += 1
                    g, start, now = st.g, st.start, env.now - drain
                    wave.note(li, _FOLD_DRAIN, now, env.now)
                if pe_segments is not None and rec.keep_segment(li, start, now):
                    pe_segments.append((start, now, li, g))
                for (oi, pk), c in sk.spatial:
                    cur = spatial.get((li, oi, pk))
                    if cur is None:
                        spatial[(li, oi, pk)] = [c, start, now]
                    else:
                        cur[0] += c
                        cur[2] = now
                sk.runs += 1
                for _, ratio, _, _, _, is_output, n, finish_use in ops:
                    if is_output:
                        part = n.user_group(g, ratio) if n.dependency_groups > 1 else 0
                        finish_use(g // ratio, who, True, part, now)
                    else:
                        finish_use(g // ratio, who, False)
                r.segments_done += 1
                st.g = g + 1
        st.stage = _IDLE
        if st.held is not None:
            set_shares(st.held.give_back)
        self._count_accesses()
        rec.last_step_end = env.now
        if plan.pipeline_depth:
            st.stage = _PIPELINE
            yield env.timeout(plan.pipeline_depth)
            rec.events += 1
        r.end = max(r.end, env.now)

    # ------------------------------------------------------------------ fast-forward
    def snapshot(self, origin: Origin, g: int, grants: bool) -> tuple:
        """Its state relative to origin: at an iteration boundary it has just started segment
        g, waiting for nothing (else Unknown); between grants (grants) it stays where it is,
        waiting or not, so its times are absolute."""
        # the kind held, by its profile: two kinds with one profile act alike (a period may
        # start with iteration 0 of a loop, whose first segment is of an outer loop's kind)
        held = None if self.held is None else self.held.prof
        if not grants:
            if self.wait is not None or self.waiting is not None or self.g != g:
                raise Unknown("pe")
            return (self.stage, self.start - origin.now, held)
        wait, open_wait = self.wait, None
        if wait is not None:
            open_wait = (
                wait.start,
                tuple(wait.met_at.items()),
                tuple(wait.keys.items()),
                tuple(wait.resident_at.items()),
            )
        return (self.stage, self.g, self.start, held, open_wait, self.waiting)

    def shift(self, dt: int, segments: int) -> None:
        """Move it dt cycles and `segments` segments on (a fast-forward jump)."""
        self.g += segments
        self.start += dt

    def runs(self) -> dict[tuple, int]:
        """Segments run so far per kind of segment (a fast-forward mark)."""
        return {key: sk.runs for key, sk in self.kinds.items()}

    def repeat_runs(self, before: dict[tuple, int], after: dict[tuple, int], times: int) -> None:
        """Add the segments run between two marks `times` more times (a jump's periods)."""
        for key, sk in self.kinds.items():
            sk.runs += times * (after[key] - before.get(key, 0))

    def _count_accesses(self) -> None:
        """The PE array's accesses: each executed segment's profile, summed per kind."""
        r = self.replay
        plan = r.plan
        for (li, _, _), sk in self.kinds.items():
            leaf, prof, times = plan.leaves[li], sk.prof, sk.runs
            for i, o in enumerate(leaf.operands):
                memory = plan.nodes[o.node].memory
                if prof.reads[i]:
                    reads = prof.reads[i] * times
                    r.count(leaf.einsum, o.tensor, memory, READ, READ_TO_BELOW, reads, o.bits)
                if prof.writes[i]:
                    writes = prof.writes[i] * times
                    r.count(leaf.einsum, o.tensor, memory, WRITE, WRITE_FROM_BELOW, writes, o.bits)


class _SegmentWait:
    """The PE array's wait for one segment's operand tiles, charged to the binding tile.

    The PE array waits for its operands one after another; every cycle of the wait goes to
    the tile ready last (ties to operand order), split at the cycle that tile became
    resident: before it, its fill ('resident'); after it, its producer ('produced').
    """

    __slots__ = ("start", "met_at", "resident_at", "keys")

    def __init__(self, start: int, ops: tuple, g: int, first: int) -> None:
        self.start = start
        self.met_at: dict[int, int] = {}  # operand index -> cycle its last need was met
        self.keys: dict[int, tuple[int, int]] = {}  # operand index -> (tile, part key)
        # operand index -> cycle its tile became resident, for tiles missing at the start
        self.resident_at: dict[int, int | None] = {}
        for j in range(first, len(ops)):
            _, ratio, t, check_resident, check_produced, _, _, _ = ops[j]
            k = g // ratio
            if check_resident and t.resident.get(k) is not True:
                self.resident_at[j] = None
                if check_produced:  # it may become resident before the PE array looks at it
                    t.waiter(t.resident, k).callbacks.append(partial(self._resident, j))

    def _resident(self, j: int, event: Event) -> None:
        self.resident_at[j] = int(event.env.now)

    def met(self, i: int, kind: str, now: int, k: int, pkey: int) -> None:
        """Operand i's need `kind` was met at cycle now."""
        self.met_at[i] = now
        self.keys[i] = (k, pkey)
        if kind == _PE_RESIDENT:
            self.resident_at[i] = now

    def record(self, waits: Rows, ops: tuple, now: int) -> None:
        """Append the wait [start, now) of the binding tile: (start, end, node, kind, key)."""
        start = self.start
        if now == start:
            return
        binding = next(i for i, at in self.met_at.items() if at == now)  # in operand order
        node = ops[binding][0]
        k, pkey = self.keys[binding]
        resident = self.resident_at.get(binding, start)
        if resident is None:  # resident and produced in the same cycle: one need, one state
            resident = now
        if resident > start:
            waits.append((start, resident, node, _PE_RESIDENT, k))
        if now > resident:
            waits.append((resident, now, node, _PE_PRODUCED, pkey))


class _SegmentKind:
    """One kind of PE segment of a leaf (level, first visit): its profile and port shares."""

    __slots__ = ("prof", "cycles", "spatial", "want", "give_back", "after", "runs")

    def __init__(self, leaf, level: int, first: bool) -> None:
        self.prof = prof = segment_profile(leaf, level, first)
        self.cycles = prof.cycles
        self.spatial = prof.spatial
        # bits per cycle the PE array takes on each port it uses during the segment
        self.want = {key: -(-bits // prof.cycles) for key, bits in prof.port_bits}
        self.give_back = tuple((key, 0) for key in self.want)  # the PE array stops using them
        self.after: dict = {}  # kind held before (or None) -> the shares to set
        self.runs = 0  # segments of this kind executed

    def shares_after(self, before: _SegmentKind | None) -> tuple[tuple[str, int], ...]:
        """The (port, bits) shares to set when the PE array held `before`'s shares.

        Ports it no longer uses are given back first, then its shares are taken, in the order
        of the profile; a share equal to the one already held is left out (a no-op).
        """
        want, held = self.want, before.want if before is not None else {}
        shares = [(key, 0) for key in held if key not in want]
        shares += [(key, bits) for key, bits in want.items() if held.get(key) != bits]
        return tuple(shares)
