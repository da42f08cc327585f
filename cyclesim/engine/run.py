"""The replay: one SimPy process per storage node (fills, write-backs) and one for the PE array.

Ports are plain resources arbitrated per burst (fabric.py); DMA engines are SimPy resources
with one slot per channel. Events happen per burst, per transfer and per PE segment, never
per cycle.
"""

from __future__ import annotations

import difflib
import os
import time
from dataclasses import dataclass, replace
from functools import partial

import simpy

from cyclesim.engine.dma import Channels
from cyclesim.engine.environment import ReplayEnvironment
from cyclesim.engine.fabric import Fabric
from cyclesim.engine.fastforward import FastForward, FastForwardStats
from cyclesim.engine.loop import deadlock_message, gc_paused, run_to_empty_queue
from cyclesim.engine.options import RunOptions
from cyclesim.engine.record import FOREVER, Recorder, TraceFilter
from cyclesim.engine.rows import Rows
from cyclesim.engine.space import (
    LEDGER_ENVIRONMENT_VARIABLE,
    CapacityOverflow,
    Space,
    ledger_overflows,
)
from cyclesim.engine.state import NodeState, PeState
from cyclesim.engine.systolic import Wavefront
from cyclesim.engine.tiles import Tiles, entry_classifier
from cyclesim.engine.transfer import Link, transfer
from cyclesim.engine.verify import (
    VERIFY_ENVIRONMENT_VARIABLE,
    FastForwardMismatch,
    run_differences,
)
from cyclesim.errors import DeadlockError, OptionError
from cyclesim.schedule.counts import (
    READ,
    READ_TO_ABOVE,
    READ_TO_BELOW,
    WRITE,
    WRITE_FROM_ABOVE,
    WRITE_FROM_BELOW,
)
from cyclesim.schedule.plan import NodePlan, Plan
from cyclesim.schedule.steps import program_blocks, segment_classifier, segment_profile
from cyclesim.vocabulary import Fold, PeWait, TransferKind, Wait


@dataclass(slots=True)
class RawRun:
    """What the engine hands to results: the plan, the records, counts and the end time."""

    plan: Plan
    rec: Recorder
    counts: dict[tuple, list[int]]  # (einsum, tensor, memory, action, direction) -> [values, bits]
    cycles: int
    wall_seconds: float
    options: RunOptions  # how it was replayed (the plan's reuse and isolate_einsums too)
    env_events: int = 0  # SimPy events scheduled (SimPy's own event counter)
    fast_forward: FastForwardStats = FastForwardStats()  # what fast-forward skipped

    @property
    def fast_forward_on(self) -> bool:
        """Whether fast-forward was allowed (RunOptions.fast_forward)."""
        return self.options.fast_forward


class _Replay:
    """Holds the shared state of one run; its methods are the SimPy processes."""

    def __init__(self, plan: Plan, trace: bool, trace_filter: TraceFilter | None = None) -> None:
        self.plan = plan
        self.nodes = plan.nodes
        self.env = ReplayEnvironment()
        self.rec = Recorder()
        self.last_finisher = self.rec.last_finisher
        if trace:
            self.rec.pe_segments = Rows()
            self.rec.transfers = Rows()
            self.rec.occupancy = Rows()
            self.rec.systolic_spans = Rows()
            if trace_filter is not None:
                _compile_filter(self.rec, plan, trace_filter)
        self.trace = trace
        widths = {p.key: p.width_bits for p in plan.ports}
        self.fabric = Fabric(self.env, widths, self.rec.grants, plan.port_order)
        self.tiles = [Tiles(self.env) for _ in plan.nodes]
        self.counts: dict[tuple, list[int]] = {}
        self.dma = {
            name: (Channels(self.env, channels, name), setup, name)
            for name, channels, setup in plan.dma
        }
        self.segments_done = 0
        self.rec.fill_tl = [Rows() for _ in plan.nodes]
        self.rec.drain_tl = [Rows() for _ in plan.nodes]
        self.end = 0
        self.pe_waiting: tuple | None = None  # (node, tile, 'resident' | 'produced', since)
        self.producer_of = {leaf.operands[-1].tensor: leaf.einsum for leaf in plan.leaves}
        # per node: is its tensor an intermediate (another Einsum reads it)? Only those nodes
        # record when their producer computed each part, for the `dependency` rule
        consumed = {o.tensor for leaf in plan.leaves for o in leaf.operands if not o.is_output}
        self.intermediate = tuple(
            n.tensor in consumed and n.tensor in self.producer_of for n in plan.nodes
        )
        self.dram = {}  # per DRAM-modelled memory: its timer (dram/timer.py)
        if plan.dram:
            # the compiled timer when it is current, else dram/timer.py (dram/native.py)
            from cyclesim.dram.native import DramTimer
            from cyclesim.engine.dram_loop import DramLoop

            self.dram = {
                name: DramLoop(self.env, config, mhz, record=True, keep_commands=trace)
                if config.replay_controller
                else DramTimer(config, mhz)
                for name, config, _, mhz in plan.dram
            }
            if trace:  # each row visit's bank commands, for the per-bank trace signals
                self.rec.dram_banks = []
                for name, timer in self.dram.items():
                    if not isinstance(timer, DramLoop):
                        timer.trace_into(self.rec.dram_banks, name)
        self.l1 = None  # L1 placement (engine/l1.py) when a memory has an `allocator:`
        if plan.allocators:
            from cyclesim.engine.l1 import L1Places

            self.l1 = L1Places(plan, self.rec, trace)
        # per node: the cycles the PE array's pipeline delays the results it writes there
        self.pipeline = tuple(plan.pipeline_depth if n.pe_written_by else 0 for n in plan.nodes)
        # per node: its fill's and its write-back's state (engine/state.py), and the PE array's
        self.fill_state = [NodeState() for _ in plan.nodes]
        self.drain_state = [NodeState() for _ in plan.nodes]
        self.pe_state = PeState()
        # what each memory holds; fills wait for room (DESIGN "A memory never holds more than
        # its size"); with a ledger, the invariant is checked after the run
        ledger = os.environ.get(LEDGER_ENVIRONMENT_VARIABLE, "0") not in ("", "0")
        self.space = Space(self.env, plan, ledger)
        self.space_used = tuple(
            ledger or self.space.watched(n.index) for n in plan.nodes
        )  # per node: does it take and free room
        # segments the PE array started since the driver last looked (None: nobody looks)
        self.boundaries: list[int] | None = None
        self.boundary_every = 1  # ... of the segments that are a multiple of this

    # ------------------------------------------------------------------ bookkeeping
    def count(
        self,
        einsum: str,
        tensor: str,
        memory: str,
        action: str,
        direction: str,
        values: int,
        bits: int,
    ) -> None:
        key = (einsum, tensor, memory, action, direction)
        cur = self.counts.get(key)
        if cur is None:
            self.counts[key] = [values, values * bits]
        else:
            cur[0] += values
            cur[1] += values * bits

    def _cell(self, key: tuple) -> list[int]:
        """The [values, bits] cell of a count key, made (in first-use order) if new."""
        cur = self.counts.get(key)
        if cur is None:
            cur = self.counts[key] = [0, 0]
        return cur

    def finish_use(
        self,
        node: int,
        k: int,
        who: tuple,
        producer_side: bool,
        part: int = 0,
        computed: int = 0,
    ) -> None:
        """One user of tile k of a node is done; the last one frees or drains the tile.

        A producer's user completes `part` of the tile (NodePlan.dependency_groups parts);
        consumers wait on that part only, keyed k * parts + part. `computed` is the cycle the
        producer computed the values this user delivers (recorded for intermediates).
        """
        n = self.nodes[node]
        t = self.tiles[node]
        if producer_side:
            prod_left = t.prod_left
            parts = n.dependency_groups
            pkey = k * parts + part
            left = prod_left.get(pkey, n.producer_uses_per_tile // parts) - 1
            if self.intermediate[node]:
                by_tile, by_part = t.computed_tile, t.computed_part
                by_tile[k] = max(by_tile.get(k, computed), computed)
                by_part[pkey] = max(by_part.get(pkey, computed), computed)
                if left == 0:
                    self.rec.produced[(node, pkey)] = (by_part.pop(pkey), who)
            if left == 0:
                prod_left.pop(pkey, None)
                t.fire(t.produced, pkey)
            else:
                prod_left[pkey] = left
        if n.is_backing:
            return
        remaining = t.remaining
        left = remaining.get(k, n.uses_per_tile) - 1
        self.last_finisher[(node, k)] = who
        if left:
            remaining[k] = left
            return
        remaining.pop(k, None)
        if n.output_role:  # its write-back process waits for this
            t.fire(t.used, k)
            if self.pipeline[node]:  # ... and for its last results to leave the PE pipeline
                t.lands_at[k] = self.env.now + self.pipeline[node]
        else:
            t.resident.pop(k, None)
            _forget_parts(t.produced, k, n.dependency_groups)
            if n.still_levels and k + 1 < n.entries and n.extends_previous(k + 1):
                return  # the next entry is this tile again: it keeps the slot
            if self.space_used[node]:
                self.space.free(node, n.first_entry_of(n.tile_of(k)) if n.still_levels else k)
            t.fire(t.released, k)
            if self.rec.occupancy is not None:
                self.rec.occupy(self.env.now, node, -1)
            if self.l1 is not None:
                self.l1.release(node, self.env.now)

    def _mark_resident(self, n: NodePlan, k: int) -> None:
        t = self.tiles[n.index]
        t.fire(t.resident, k)
        if self.rec.occupancy is not None:
            self.rec.occupy(self.env.now, n.index, +1)

    def _dram_side(self, link: Link, n: NodePlan, is_write: bool) -> Link:
        """Give the link its DRAM side when n's parent lives in a DRAM-modelled memory."""
        addresses = self.plan.dram_nodes[n.index] if self.plan.dram_nodes else None
        if addresses is not None:
            from cyclesim.engine.dram_port import DramSide

            link.dram = DramSide(self.dram[addresses.memory], addresses, is_write)
        return link

    def _dma(self, n: NodePlan):
        return self.dma[n.dma] if n.dma is not None else None

    # ------------------------------------------------------------------ processes
    def fill_proc(self, n: NodePlan, st: NodeState):
        """Fill (inputs) or enter (outputs: partial-sum reload on a revisit) tiles in order.

        The entry it is at and what it carries across a yield live in st (engine/state.py);
        after every yield the entry is read back from st (fast-forward may have moved it).
        """
        env, rec, fabric = self.env, self.rec, self.fabric
        node, tl, t = n.index, rec.fill_tl[n.index], self.tiles[n.index]
        p = self.plan.nodes[n.parent]
        pt = self.tiles[p.index]
        link = None  # built at the first transfer (an output's entries may never reload)
        l1 = self.l1 if self.l1 is not None and self.l1.tracked[node] else None
        slots, ratio, output_role, wait_producer = n.slots, n.ratio, n.output_role, n.wait_producer
        wait_parent = not p.is_backing
        released, drained, last_visit = t.released, t.drained, t.last_visit
        p_resident, p_produced = pt.resident, pt.produced
        first_and_key = entry_classifier(n)[0] if output_role else None
        who = ("node", node)
        par_values, chi_values = n.union_values, n.tile_values
        read_values = par_values * n.parent_instances  # per transfer, all instances
        write_values = chi_values * n.instances
        producer = self.producer_of.get(n.tensor)
        reads = writes = None  # this node's count cells, made at its first transfer
        space, space_used = self.space, self.space_used[node]
        watched = space.watched(node)
        entries = n.entries
        repeats = bool(n.still_levels)  # some entries are the previous entry's tile again
        while st.k < entries:
            # needs in DESIGN's order: the parent tile (and its values), a free slot, ports;
            # a need met in the same cycle as an earlier one is never the state
            k = st.k
            first = False
            if output_role:
                first, key = first_and_key(k)
                st.prev = last_visit.get(key)
                last_visit[key] = k
                if not first:  # a revisit reloads its partial sums from the parent
                    kp = k // ratio
                    if wait_parent and p_resident.get(kp) is not True:
                        tl.append((env.now, Wait.PARENT, p.index))
                        st.stage = Wait.PARENT
                        yield pt.waiter(p_resident, kp)
                    prev = st.prev
                    if prev is not None and drained.get(prev) is not True:
                        tl.append((env.now, Wait.PREVIOUS_WRITE_BACK, node))
                        st.stage = Wait.PREVIOUS_WRITE_BACK
                        yield t.waiter(drained, prev)
                        prev = st.prev
                    drained.pop(prev, None)
            elif repeats and n.extends_previous(k):
                # the previous entry's tile again (DESIGN "retain: refill only when the tile
                # changes"): no parent tile, slot or transfer; its use of the parent is done
                self.finish_use(p.index, k // ratio, who, False)
                t.fire(t.resident, k)
                st.k = k + 1
                continue
            else:
                kp = k // ratio
                if wait_parent and p_resident.get(kp) is not True:
                    tl.append((env.now, Wait.PARENT, p.index))
                    st.stage = Wait.PARENT
                    yield pt.waiter(p_resident, kp)
                    kp = st.k // ratio
                if wait_producer:
                    pkey = kp * p.dependency_groups + p.user_group(st.k, n.ratio)
                    if p_produced.get(pkey) is not True:
                        tl.append((env.now, Wait.PRODUCER, (producer, pkey)))
                        st.stage = Wait.PRODUCER
                        yield pt.waiter(p_produced, pkey)
            k = st.k
            if (n.tile_of(k) if repeats else k) >= slots:
                # the tile `slots` fills back gives its slot back with its last entry
                ks = n.first_entry_of(n.tile_of(k) - slots + 1) - 1 if repeats else k - slots
                if released.get(ks) is not True:
                    tl.append((env.now, Wait.SLOT, ks))
                    st.stage = Wait.SLOT
                    yield t.waiter(released, ks)
                    k = st.k
                    ks = n.first_entry_of(n.tile_of(k) - slots + 1) - 1 if repeats else k - slots
                released.pop(ks, None)
            if space_used:
                if watched:
                    # in a memory the branches share beyond its size, room is granted at the
                    # end of the cycle in tie order, and only in the fill's branch's turn
                    # (space.py): granted, its room is taken; waiting, its state is written
                    st.stage = Wait.SPACE
                    yield space.ask(node, st.k, tl)
                else:
                    space.take(node, st.k)
                k = st.k
            if first:  # a first visit reads nothing: the tile is entered
                if l1 is not None and k == 0:
                    l1.take(node, env.now)  # the first slot is taken: place its L1 buffer
                self._mark_resident(n, k)
                st.k = k + 1
                continue
            bits = n.psum_bits if output_role else n.bits
            if l1 is not None and k == 0:
                l1.take(node, env.now)  # the first slot is taken: place its L1 buffer
            st.start = env.now
            if link is None:
                link = Link(2 * node, n.tensor, n.fill_src, n.fill_dst, self._dma(n))
                self._dram_side(link, n, False)
            if link.dram is not None:
                link.dram.select(k)
            st.stage = Wait.TRANSFER
            yield from transfer(
                env, fabric, rec, tl, link, par_values * bits, chi_values * bits, st
            )
            k, start = st.k, st.start
            if rec.transfers is not None and rec.keep_transfer(node, start, env.now):
                rec.transfers.append(
                    (
                        start,
                        env.now,
                        node,
                        TransferKind.RELOAD if output_role else TransferKind.FILL,
                        k,
                        par_values * bits,
                    )
                )
            if reads is None:
                reads = self._cell((n.owner, n.tensor, p.memory, READ, READ_TO_BELOW))
                writes = self._cell((n.owner, n.tensor, n.memory, WRITE, WRITE_FROM_ABOVE))
            reads[0] += read_values
            reads[1] += read_values * bits
            writes[0] += write_values
            writes[1] += write_values * bits
            if not output_role:
                self.finish_use(p.index, k // ratio, who, False)
            self._mark_resident(n, k)
            st.k = k + 1
        st.stage = Wait.IDLE
        tl.append((env.now, Wait.IDLE, None))
        self.end = max(self.end, env.now)

    def drain_proc(self, n: NodePlan, st: NodeState):
        """Write each output tile back to its parent once all its users are done.

        Its entry and transfer live in st, read back after every yield (as fill_proc's).
        """
        env, rec, fabric = self.env, self.rec, self.fabric
        node, tl, t = n.index, rec.drain_tl[n.index], self.tiles[n.index]
        link = Link(2 * node + 1, n.tensor, n.drain_dst, n.drain_src, self._dma(n))
        link.child_on_tie = True  # a write-back's data leaves the child's read port
        self._dram_side(link, n, True)
        p = self.plan.nodes[n.parent]
        pt = self.tiles[p.index]
        pipelined = self.pipeline[node] > 0
        ratio, wait_parent = n.ratio, not p.is_backing
        used, p_resident, lands_at = t.used, pt.resident, t.lands_at
        is_final = entry_classifier(n)[1]
        intermediate = self.intermediate[node]
        who = ("node", node)
        par_values, chi_values = n.union_values, n.tile_values
        read_values = chi_values * n.instances  # per transfer, all instances
        write_values = par_values * n.parent_instances
        reads = writes = None  # this node's count cells, made at its first transfer
        entries = n.entries
        while st.k < entries:
            k = st.k
            if used.get(k) is not True:
                tl.append((env.now, Wait.USES, k))
                st.stage = Wait.USES
                yield t.waiter(used, k)
            if pipelined:  # the tile's results land pipeline_depth after the PE array is
                # done with it, also while this process was busy with an earlier tile
                left = lands_at.pop(st.k) - env.now
                if left > 0:
                    tl.append((env.now, Wait.PIPELINE, None))
                    st.stage = Wait.PIPELINE
                    yield env.timeout(left)
                    rec.events += 1
            kp = st.k // ratio
            if wait_parent and p_resident.get(kp) is not True:
                tl.append((env.now, Wait.PARENT, p.index))
                st.stage = Wait.PARENT
                yield pt.waiter(p_resident, kp)
            k = st.k
            final = is_final(k)
            bits = n.bits if final else n.psum_bits
            st.start = env.now
            if link.dram is not None:
                link.dram.select(k)
            st.stage = Wait.TRANSFER
            yield from transfer(
                env, fabric, rec, tl, link, par_values * bits, chi_values * bits, st
            )
            k, start = st.k, st.start
            kp = k // ratio
            if rec.transfers is not None and rec.keep_transfer(node, start, env.now):
                rec.transfers.append(
                    (start, env.now, node, TransferKind.WRITE_BACK, k, par_values * bits)
                )
            if reads is None:
                reads = self._cell((n.owner, n.tensor, n.memory, READ, READ_TO_ABOVE))
                writes = self._cell((n.owner, n.tensor, p.memory, WRITE, WRITE_FROM_BELOW))
            reads[0] += read_values
            reads[1] += read_values * bits
            writes[0] += write_values
            writes[1] += write_values * bits
            if not final:  # a later visit reloads these partial sums after this write-back
                t.fire(t.drained, k)
            used.pop(k, None)
            t.resident.pop(k, None)
            _forget_parts(t.produced, k, n.dependency_groups)
            if self.space_used[node]:
                self.space.free(node, k)
            t.fire(t.released, k)
            if rec.occupancy is not None:
                rec.occupy(env.now, node, -1)
            if self.l1 is not None:
                self.l1.release(node, env.now)
            computed = t.computed_tile.pop(k, 0) if intermediate else 0
            self.finish_use(p.index, kp, who, True, p.user_group(k, n.ratio), computed)
            st.k = k + 1
        st.stage = Wait.IDLE
        tl.append((env.now, Wait.IDLE, None))
        self.end = max(self.end, env.now)

    def pe_proc(self, st: PeState):
        """The PE array: wait for each segment's operand tiles, then compute the segment.

        The segment it is at, the kind whose port shares it holds and its open wait live in
        st, read back after every yield (fast-forward may have moved them).
        """
        env, rec, plan = self.env, self.rec, self.plan
        nodes, tiles, fabric = plan.nodes, self.tiles, self.fabric
        waits, spatial, pe_segments = rec.pe_waits, rec.spatial, rec.pe_segments
        finish_use, set_shares, timeout = self.finish_use, fabric.set_shares, env.timeout
        kinds = st.kinds  # (leaf, level, first visit) -> _SegmentKind, in first-run order
        # read off the enum once: an enum attribute costs ~0.3 us in Python 3.11 (EnumType's
        # __getattr__), and the loop below runs per segment and per operand
        resident, produced, computing = PeWait.RESIDENT, PeWait.PRODUCED, Wait.COMPUTE
        wave = None
        if plan.systolic is not None:
            wave = Wavefront(plan, rec.systolic, rec.systolic_spans)
        boundaries, every = self.boundaries, self.boundary_every
        previous = None  # the leaf of the block run before this one
        for li, g0, g1 in program_blocks(plan):
            # DESIGN "Operand registers hold the previous cycle's value only": the first step
            # after another Einsum's step re-reads every operand (level 0)
            after_other = previous is not None and previous != li
            previous = li
            if self.space.tight:  # fills into shared memories wait for their branch's turn
                self.space.enter(li)
            leaf = plan.leaves[li]
            who = ("pe", li)
            classify = segment_classifier(leaf)
            # per operand: node, ratio, tiles, waits for residency, waits for the producer,
            # output, the node's plan (parts of a tile its producer completes in turn)
            ops = tuple(
                (
                    o.node,
                    o.ratio,
                    tiles[o.node],
                    not nodes[o.node].is_backing,
                    not o.is_output and nodes[o.node].output_role,
                    o.is_output,
                    nodes[o.node],
                )
                for o in leaf.operands
            )
            st.g = g0
            while st.g < g1:
                g = st.g
                for i, (node, ratio, t, check_resident, check_produced, _, n) in enumerate(ops):
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
                        self.pe_waiting = (node, k, kind, env.now)
                        st.stage = Wait.OPERAND
                        yield ev
                        self.pe_waiting = None
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
                    st.stage = Wait.WAVEFRONT_FILL
                    yield timeout(fill)  # systolic: preload and skew of a new fold
                    rec.events += 1
                    wave.note(li, Fold.FILL, env.now - fill, env.now)
                st.start = env.now
                st.stage = computing
                yield timeout(sk.cycles)
                rec.events += 1
                g, start, now = st.g, st.start, env.now
                if wave is not None and (drain := wave.drain_cycles(li, g, g1, classify)):
                    st.stage = Wait.WAVEFRONT_DRAIN
                    yield timeout(drain)  # systolic: the fold's wavefront leaves the array
                    rec.events += 1
                    g, start, now = st.g, st.start, env.now - drain
                    wave.note(li, Fold.DRAIN, now, env.now)
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
                for node, ratio, _, _, _, is_output, n in ops:
                    if is_output:
                        part = n.user_group(g, ratio) if n.dependency_groups > 1 else 0
                        finish_use(node, g // ratio, who, True, part, now)
                    else:
                        finish_use(node, g // ratio, who, False)
                self.segments_done += 1
                st.g = g + 1
        st.stage = Wait.IDLE
        if st.held is not None:
            set_shares(st.held.give_back)
        # the PE array's accesses: each executed segment's profile, summed per kind of segment
        for (li, _, _), sk in kinds.items():
            leaf, prof, times = plan.leaves[li], sk.prof, sk.runs
            for i, o in enumerate(leaf.operands):
                n = nodes[o.node]
                if prof.reads[i]:
                    self.count(
                        leaf.einsum,
                        o.tensor,
                        n.memory,
                        READ,
                        READ_TO_BELOW,
                        prof.reads[i] * times,
                        o.bits,
                    )
                if prof.writes[i]:
                    self.count(
                        leaf.einsum,
                        o.tensor,
                        n.memory,
                        WRITE,
                        WRITE_FROM_BELOW,
                        prof.writes[i] * times,
                        o.bits,
                    )
        rec.last_step_end = env.now
        if plan.pipeline_depth:
            st.stage = Wait.PIPELINE
            yield env.timeout(plan.pipeline_depth)
            rec.events += 1
        self.end = max(self.end, env.now)


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
            _, ratio, t, check_resident, check_produced, _, _ = ops[j]
            k = g // ratio
            if check_resident and t.resident.get(k) is not True:
                self.resident_at[j] = None
                if check_produced:  # it may become resident before the PE array looks at it
                    t.waiter(t.resident, k).callbacks.append(partial(self._resident, j))

    def _resident(self, j: int, event: simpy.Event) -> None:
        self.resident_at[j] = event.env.now

    def met(self, i: int, kind: str, now: int, k: int, pkey: int) -> None:
        """Operand i's need `kind` was met at cycle now."""
        self.met_at[i] = now
        self.keys[i] = (k, pkey)
        if kind == PeWait.RESIDENT:
            self.resident_at[i] = now

    def record(self, waits: list, ops: tuple, now: int) -> None:
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
            waits.append((start, resident, node, PeWait.RESIDENT, k))
        if now > resident:
            waits.append((resident, now, node, PeWait.PRODUCED, pkey))


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


def _compile_filter(rec: Recorder, plan: Plan, f: TraceFilter) -> None:
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


def replay_plan(plan: Plan, options: RunOptions | None = None, **choices) -> RawRun:
    """Run the plan to completion; raise DeadlockError (an EngineError) if it cannot progress.

    options: how to run it (engine/options.py), by default the plan's reuse and
    isolate_einsums and `cyclesim run`'s defaults; choices override single fields of it
    (`replay_plan(plan, trace=True)`). Raise OptionError when options name another reuse or
    isolate_einsums than the plan was built with.

    fast_forward: skip iterations that repeat an exactly equal state (engine/fastforward.py);
    the result is identical either way, only SimPy's event counts differ.
    verify_fast_forward (or the environment variable CYCLESIM_VERIFY_FAST_FORWARD=1): when it
    fired, replay once more in full and raise FastForwardMismatch unless every record is the
    same (engine/verify.py); the test suite runs with it on.

    Raise L1ReplayError (an EngineError) at the cycle an L1 allocation does not fit, when a
    memory has an `allocator:` (engine/l1.py).

    A trace_filter implies tracing and keeps only the events it selects.
    """
    options = _options_for(plan, options, choices)
    wall0 = time.perf_counter()
    r = _Replay(plan, options.traced, options.trace_filter)
    env = r.env
    procs = []
    for n in plan.nodes:
        if n.parent is None:
            continue
        fill = env.process(r.fill_proc(n, r.fill_state[n.index]))
        procs.append((f"fill {n.label()}", r.rec.fill_tl[n.index], fill))
        if n.output_role:
            drain = env.process(r.drain_proc(n, r.drain_state[n.index]))
            procs.append((f"write-back {n.label()}", r.rec.drain_tl[n.index], drain))
    pe = env.process(r.pe_proc(r.pe_state))
    ff = FastForward(r, [p for _, _, p in procs] + [pe]) if options.fast_forward else None

    with gc_paused():
        run_to_empty_queue(
            env,
            progress=options.progress,
            total=sum(leaf.segments for leaf in plan.leaves),
            done=lambda: r.segments_done,
            wall0=wall0,
            boundaries=r.boundaries,
            at_boundary=ff.at_boundary if ff is not None else None,
        )
    # the queue is empty: nothing is scheduled, so a process still alive waits forever
    stuck = [(name, tl) for name, tl, p in procs if p.is_alive]
    if pe.is_alive or stuck:
        raise DeadlockError(deadlock_message(env.now, pe.is_alive, stuck, r))
    if r.space.ledger is not None:  # the test suite's invariant (engine/space.py)
        over = ledger_overflows(r.space.ledger, r.space.size)
        if over:
            raise CapacityOverflow("the replay overfilled a memory: " + "; ".join(over[:3]))
    for name, timer in r.dram.items():  # the DRAM timers' own counts and open rows
        if not hasattr(
            timer, "trace_into"
        ):  # the controller in the loop drains its buffered writes
            timer.finish(int(r.end))
            r.rec.dram_requests[name] = timer.requests()
            if r.rec.dram_banks is not None:  # the bank commands, for the traces' bank signals
                r.rec.dram_banks.extend(timer.bank_records(name))
        r.rec.dram_counts[name], r.rec.dram_open_rows[name] = dict(timer.counts), timer.open_row[:]
    # SimPy numbers every scheduled event from one counter: read it once, after the run
    env_events = env.scheduled_count()
    raw = RawRun(
        plan,
        r.rec,
        r.counts,
        int(r.end),
        time.perf_counter() - wall0,
        options,
        env_events,
        ff.stats if ff is not None else FastForwardStats(),
    )
    if raw.fast_forward.jumps and (
        options.verify_fast_forward
        or os.environ.get(VERIFY_ENVIRONMENT_VARIABLE, "0") not in ("", "0")
    ):
        full = replay_plan(plan, options, progress=False, fast_forward=False)
        diffs = run_differences(raw, full)
        if diffs:
            raise FastForwardMismatch("fast-forward changed the replay: " + "; ".join(diffs))
    return raw


def _options_for(plan: Plan, options: RunOptions | None, choices: dict) -> RunOptions:
    """The options a plan is replayed with: the given ones (by default the plan's schedule
    choices and the defaults) with single fields overridden by choices."""
    schedule = (plan.reuse.value, plan.isolate_einsums)
    if options is None:
        options = RunOptions(reuse=schedule[0], isolate_einsums=schedule[1])
    if choices:
        options = replace(options, **choices)
    if (options.reuse, options.isolate_einsums) != schedule:
        raise OptionError(
            f"the plan was built with reuse={schedule[0]}, isolate_einsums={schedule[1]}; "
            f"the options ask for reuse={options.reuse}, isolate_einsums={options.isolate_einsums}"
        )
    return options


def _forget_parts(produced: dict, k: int, parts: int) -> None:
    """Drop the produced flags of every part of tile k (the tile has left the node)."""
    for pkey in range(k * parts, (k + 1) * parts):
        produced.pop(pkey, None)
