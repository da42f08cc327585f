"""A storage node: its tile tables, its fill and write-back processes, and their state.

Each node of the plan is one StorageNode. Its fill enters tiles in order (an input's from its
parent, an output's partial sums on a revisit); an output's write-back sends each tile back
once all its users are done. What a process carries across a yield lives in a NodeState,
read back after every yield, so fast-forward can compare it (snapshot) and move it (shift).
Over 400 lines: the fill and the write-back read together (one hands the other its tiles).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cyclesim.engine.snapshot import Origin
from cyclesim.engine.tiles import Tiles, entry_classifier
from cyclesim.engine.transfer import transfer
from cyclesim.engine.transfer_state import TransferState
from cyclesim.engine.visits import VisitBlocks, shift_visits
from cyclesim.schedule.counts import (
    READ,
    READ_TO_ABOVE,
    READ_TO_BELOW,
    WRITE,
    WRITE_FROM_ABOVE,
    WRITE_FROM_BELOW,
)
from cyclesim.schedule.plan import NodePlan
from cyclesim.vocabulary import TransferKind, Wait

if TYPE_CHECKING:
    from cyclesim.engine.shared import Replay

# the vocabulary's members this module reads on the hot path, bound once: an enum
# attribute costs ~0.2 us in Python 3.11 (EnumType's __getattr__), a global ~0.02 us
_IDLE = Wait.IDLE
_KIND_FILL = TransferKind.FILL
_KIND_RELOAD = TransferKind.RELOAD
_KIND_WRITE_BACK = TransferKind.WRITE_BACK
_PARENT = Wait.PARENT
_PIPELINE = Wait.PIPELINE
_PREVIOUS_WRITE_BACK = Wait.PREVIOUS_WRITE_BACK
_PRODUCER = Wait.PRODUCER
_SLOT = Wait.SLOT
_SPACE = Wait.SPACE
_START = Wait.START
_TRANSFER = Wait.TRANSFER
_USES = Wait.USES


class NodeState:
    """A fill or write-back process: the entry it is at, where it waits, its transfer.

    `stage` is the yield the process is suspended at, a Wait (vocabulary.py), the same word
    its timeline row records.
    """

    __slots__ = ("stage", "k", "prev", "start", "xfer")

    def __init__(self) -> None:
        self.stage = _START
        self.k = 0  # the entry being entered, filled or written back (n.entries: done)
        # outputs' fill: the previous visit of entry k's values (or None)
        self.prev: int | None = None
        self.start = 0  # start of the entry's transfer
        self.xfer: TransferState | None = None  # the transfer in progress

    def snapshot(self, base: int, now: int, locs: dict, grants: bool) -> tuple:
        """The state relative to cycle now and tile base; fields it overwrites before reading
        are left out.

        grants (snapshots between grants, inside transfers): the burst index is left out (it
        is compared as a count that grows by a constant per period) and the transfer's start
        is kept absolute (the same transfer goes on). locs: id(event) -> where it is held."""
        xfer = None if self.xfer is None else self.xfer.snapshot(now, locs, grants)
        prev = (
            self.prev - self.k
            if self.stage in (_PARENT, _PREVIOUS_WRITE_BACK) and self.prev is not None
            else None
        )
        start: int | None = None
        if self.stage == _TRANSFER:
            start = self.start if grants else self.start - now
        return (self.stage, self.k - base, prev, start, xfer)

    def shift(self, dt: int, tiles: int) -> None:
        """Move the process dt cycles and `tiles` entries on (a fast-forward jump)."""
        self.start += dt
        if self.xfer is not None:
            self.xfer.shift(dt)
        if tiles:
            self.k += tiles
            if self.prev is not None:
                self.prev += tiles


class StorageNode:
    """One node of the plan: its tiles, who uses them, its fill and write-back processes."""

    __slots__ = (
        "replay",
        "plan",
        "tiles",
        "fill",
        "write_back",
        "intermediate",
        "takes_room",
        "pipeline",
    )

    def __init__(self, replay: Replay, n: NodePlan, intermediate: bool, takes_room: bool) -> None:
        self.replay = replay
        self.plan = n
        self.tiles = Tiles(replay.env)
        self.fill = NodeState()  # the fill process's state
        self.write_back = NodeState()  # the write-back process's state (outputs)
        # is its tensor an intermediate (another Einsum reads it)? Only those nodes record
        # when their producer computed each part, for the `dependency` rule
        self.intermediate = intermediate
        self.takes_room = takes_room  # does it take and free room in its memory (space.py)
        # the cycles the PE array's pipeline delays the results it writes here
        self.pipeline = replay.plan.pipeline_depth if n.pe_written_by else 0

    # ------------------------------------------------------------------ uses
    def finish_use(
        self, k: int, who: tuple, producer_side: bool, part: int = 0, computed: int = 0
    ) -> None:
        """One user of tile k is done; the last one frees or writes back the tile.

        A producer's user completes `part` of the tile (NodePlan.dependency_groups parts);
        consumers wait on that part only, keyed k * parts + part. `computed` is the cycle the
        producer computed the values this user delivers (recorded for intermediates).
        """
        n, t, r = self.plan, self.tiles, self.replay
        node = n.index
        if producer_side:
            prod_left = t.prod_left
            parts = n.dependency_groups
            pkey = k * parts + part
            left = prod_left.get(pkey, n.producer_uses_per_tile // parts) - 1
            if self.intermediate:
                by_tile, by_part = t.computed_tile, t.computed_part
                by_tile[k] = max(by_tile.get(k, computed), computed)
                by_part[pkey] = max(by_part.get(pkey, computed), computed)
                if left == 0:
                    r.rec.produced[(node, pkey)] = (by_part.pop(pkey), who)
            if left == 0:
                prod_left.pop(pkey, None)
                t.fire(t.produced, pkey)
            else:
                prod_left[pkey] = left
        if n.is_backing:
            return
        remaining = t.remaining
        left = remaining.get(k, n.uses_per_tile) - 1
        r.rec.last_finisher.entries[(node, k)] = who  # (Finishers.__setitem__, one call less)
        if left:
            remaining[k] = left
            return
        remaining.pop(k, None)
        if n.output_role:  # its write-back process waits for this
            t.fire(t.used, k)
            if self.pipeline:  # ... and for its last results to leave the PE pipeline
                t.lands_at[k] = r.env.now + self.pipeline
        else:
            t.resident.pop(k, None)
            t.forget_parts(k, n.dependency_groups)
            if n.still_levels and k + 1 < n.entries and n.extends_previous(k + 1):
                return  # the next entry is this tile again: it keeps the slot
            self._leave(k, n.first_entry_of(n.tile_of(k)) if n.still_levels else k)

    def _leave(self, k: int, room_entry: int) -> None:
        """Entry k left the node: its slot is free, and its room, which the space ledger
        keeps under the tile's first entry (room_entry)."""
        t, r, node = self.tiles, self.replay, self.plan.index
        if self.takes_room:
            r.space.free(node, room_entry)
        t.fire(t.released, k)
        if r.rec.occupancy is not None:
            r.rec.occupy(r.env.now, node, -1)
        if r.l1 is not None:
            r.l1.release(node, r.env.now)

    def _mark_resident(self, k: int) -> None:
        t = self.tiles
        t.fire(t.resident, k)
        rec = self.replay.rec
        if rec.occupancy is not None:
            rec.occupy(self.replay.env.now, self.plan.index, +1)

    # ------------------------------------------------------------------ fast-forward
    def snapshot(self, origin: Origin, base: int, grants: bool) -> tuple:
        """Its fill's and write-back's states relative to origin and tile base (the tables
        are Tiles.snapshot's); grants: a snapshot between grants (NodeState.snapshot)."""
        if self.plan.parent is None:
            return ()
        fill, now, locs = self.fill, origin.now, origin.locs
        if fill.stage == _PREVIOUS_WRITE_BACK:  # the only waiter `drained` ever holds
            waiter = self.tiles.drained.get(fill.prev)
            if waiter is not None and waiter is not True:  # (True: it woke, in the queue)
                origin.event(waiter, ("tile", self.plan.index, "drained"))
        out: tuple = (fill.snapshot(base, now, locs, grants),)
        if self.plan.output_role:
            out += (self.write_back.snapshot(base, now, locs, grants),)
        return out

    def shift(self, dt: int, tiles: int, visits: VisitBlocks) -> None:
        """Move the node dt cycles and `tiles` tiles on, as if that many had passed: its
        processes, its tables, and an output's revisit marks (visits: its entries' digits,
        engine/visits.py)."""
        n = self.plan
        f_old, w_old = self.fill.k, self.write_back.k
        if n.parent is not None:
            self.fill.shift(dt, tiles)
            if n.output_role:
                self.write_back.shift(dt, tiles)
        self.tiles.shift(dt, tiles, n.dependency_groups)
        if tiles and n.parent is not None and n.output_role:
            shift_visits(self.tiles, visits, self.fill, f_old, self.write_back, w_old, tiles)

    # ------------------------------------------------------------------ processes
    def fill_process(self):
        """Fill (inputs) or enter (outputs: partial-sum reload on a revisit) tiles in order.

        Over 80 lines: one generator on purpose, it is a SimPy process on the hot path, and
        splitting it into sub-generators would cost a frame per yield. The entry it is at and
        what it carries across a yield live in self.fill; after every yield the entry is read
        back from there (fast-forward may have moved it).
        """
        r, n, st = self.replay, self.plan, self.fill
        env, rec, fabric = r.env, r.rec, r.fabric
        node, tl, t = n.index, rec.fill_tl[n.index], self.tiles
        parent = r.nodes[n.parent]
        p = parent.plan
        pt = parent.tiles
        link = None  # built at the first transfer (an output's entries may never reload)
        l1 = r.l1 if r.l1 is not None and r.l1.tracked[node] else None
        slots, ratio, output_role, wait_producer = n.slots, n.ratio, n.output_role, n.wait_producer
        wait_parent = not p.is_backing
        released, drained, last_visit = t.released, t.drained, t.last_visit
        p_resident, p_produced = pt.resident, pt.produced
        first_and_key = entry_classifier(n)[0] if output_role else None
        who = ("node", node)
        par_values, chi_values = n.union_values, n.tile_values
        read_values = par_values * n.parent_instances  # per transfer, all instances
        write_values = chi_values * n.instances
        producer = r.producer_of.get(n.tensor)
        reads = writes = None  # this node's count cells, made at its first transfer
        space, space_used = r.space, self.takes_room
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
                        tl.append((env.now, _PARENT, p.index))
                        st.stage = _PARENT
                        yield pt.waiter(p_resident, kp)
                    prev = st.prev
                    if prev is not None and drained.get(prev) is not True:
                        tl.append((env.now, _PREVIOUS_WRITE_BACK, node))
                        st.stage = _PREVIOUS_WRITE_BACK
                        yield t.waiter(drained, prev)
                        prev = st.prev
                    drained.pop(prev, None)
            elif repeats and n.extends_previous(k):
                # the previous entry's tile again (DESIGN "retain: refill only when the tile
                # changes"): no parent tile, slot or transfer; its use of the parent is done
                parent.finish_use(k // ratio, who, False)
                t.fire(t.resident, k)
                st.k = k + 1
                continue
            else:
                kp = k // ratio
                if wait_parent and p_resident.get(kp) is not True:
                    tl.append((env.now, _PARENT, p.index))
                    st.stage = _PARENT
                    yield pt.waiter(p_resident, kp)
                    kp = st.k // ratio
                if wait_producer:
                    pkey = kp * p.dependency_groups + p.user_group(st.k, n.ratio)
                    if p_produced.get(pkey) is not True:
                        tl.append((env.now, _PRODUCER, (producer, pkey)))
                        st.stage = _PRODUCER
                        yield pt.waiter(p_produced, pkey)
            k = st.k
            if (n.tile_of(k) if repeats else k) >= slots:
                # the tile `slots` fills back gives its slot back with its last entry
                ks = n.first_entry_of(n.tile_of(k) - slots + 1) - 1 if repeats else k - slots
                if released.get(ks) is not True:
                    tl.append((env.now, _SLOT, ks))
                    st.stage = _SLOT
                    yield t.waiter(released, ks)
                    k = st.k
                    ks = n.first_entry_of(n.tile_of(k) - slots + 1) - 1 if repeats else k - slots
                released.pop(ks, None)
            if space_used:
                if watched:
                    # in a memory the branches share beyond its size, room is granted at the
                    # end of the cycle in tie order, and only in the fill's branch's turn
                    # (space.py): granted, its room is taken; waiting, its state is written
                    st.stage = _SPACE
                    yield space.ask(node, st.k, tl)
                else:
                    space.take(node, st.k)
                k = st.k
            if first:  # a first visit reads nothing: the tile is entered
                if l1 is not None and k == 0:
                    l1.take(node, env.now)  # the first slot is taken: place its L1 buffer
                self._mark_resident(k)
                st.k = k + 1
                continue
            bits = n.psum_bits if output_role else n.bits
            if l1 is not None and k == 0:
                l1.take(node, env.now)  # the first slot is taken: place its L1 buffer
            st.start = env.now
            if link is None:
                link = r.link(n, False)
            if link.dram is not None:
                link.dram.select(k)
            st.stage = _TRANSFER
            yield from transfer(
                env, fabric, rec, tl, link, par_values * bits, chi_values * bits, st
            )
            k, start = st.k, st.start
            if rec.transfers is not None and rec.keep_transfer(node, start, env.now):
                kind = _KIND_RELOAD if output_role else _KIND_FILL
                rec.transfers.append((start, env.now, node, kind, k, par_values * bits))
            if reads is None:
                reads = r.cell((n.owner, n.tensor, p.memory, READ, READ_TO_BELOW))
                writes = r.cell((n.owner, n.tensor, n.memory, WRITE, WRITE_FROM_ABOVE))
            reads[0] += read_values
            reads[1] += read_values * bits
            writes[0] += write_values
            writes[1] += write_values * bits
            if not output_role:
                parent.finish_use(k // ratio, who, False)
            self._mark_resident(k)
            st.k = k + 1
        st.stage = _IDLE
        tl.append((env.now, _IDLE, None))
        r.end = max(r.end, env.now)

    def write_back_process(self):
        """Write each output tile back to its parent once all its users are done.

        Its entry and transfer live in self.write_back, read back after every yield (as the
        fill's). Over ~80 lines for the same reason as fill_process.
        """
        r, n, st = self.replay, self.plan, self.write_back
        env, rec, fabric = r.env, r.rec, r.fabric
        node, tl, t = n.index, rec.drain_tl[n.index], self.tiles
        link = r.link(n, True)
        parent = r.nodes[n.parent]
        p = parent.plan
        pt = parent.tiles
        pipelined = self.pipeline > 0
        ratio, wait_parent = n.ratio, not p.is_backing
        used, p_resident, lands_at = t.used, pt.resident, t.lands_at
        is_final = entry_classifier(n)[1]
        intermediate = self.intermediate
        who = ("node", node)
        par_values, chi_values = n.union_values, n.tile_values
        read_values = chi_values * n.instances  # per transfer, all instances
        write_values = par_values * n.parent_instances
        reads = writes = None  # this node's count cells, made at its first transfer
        entries = n.entries
        while st.k < entries:
            k = st.k
            if used.get(k) is not True:
                tl.append((env.now, _USES, k))
                st.stage = _USES
                yield t.waiter(used, k)
            if pipelined:  # the tile's results land pipeline_depth after the PE array is
                # done with it, also while this process was busy with an earlier tile
                left = lands_at.pop(st.k) - env.now
                if left > 0:
                    tl.append((env.now, _PIPELINE, None))
                    st.stage = _PIPELINE
                    yield env.timeout(left)
                    rec.events += 1
            kp = st.k // ratio
            if wait_parent and p_resident.get(kp) is not True:
                tl.append((env.now, _PARENT, p.index))
                st.stage = _PARENT
                yield pt.waiter(p_resident, kp)
            k = st.k
            final = is_final(k)
            bits = n.bits if final else n.psum_bits
            st.start = env.now
            if link.dram is not None:
                link.dram.select(k)
            st.stage = _TRANSFER
            yield from transfer(
                env, fabric, rec, tl, link, par_values * bits, chi_values * bits, st
            )
            k, start = st.k, st.start
            kp = k // ratio
            if rec.transfers is not None and rec.keep_transfer(node, start, env.now):
                rec.transfers.append((start, env.now, node, _KIND_WRITE_BACK, k, par_values * bits))
            if reads is None:
                reads = r.cell((n.owner, n.tensor, n.memory, READ, READ_TO_ABOVE))
                writes = r.cell((n.owner, n.tensor, p.memory, WRITE, WRITE_FROM_BELOW))
            reads[0] += read_values
            reads[1] += read_values * bits
            writes[0] += write_values
            writes[1] += write_values * bits
            if not final:  # a later visit reloads these partial sums after this write-back
                t.fire(t.drained, k)
            used.pop(k, None)
            t.resident.pop(k, None)
            t.forget_parts(k, n.dependency_groups)
            self._leave(k, k)
            computed = t.computed_tile.pop(k, 0) if intermediate else 0
            parent.finish_use(kp, who, True, p.user_group(k, n.ratio), computed)
            st.k = k + 1
        st.stage = _IDLE
        tl.append((env.now, _IDLE, None))
        r.end = max(r.end, env.now)
