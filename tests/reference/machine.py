"""The reference machine: advances ONE CYCLE AT A TIME with plain loops, from docs/design.md alone.

Each cycle c, in this order:
 1. what ends at c ends: bursts free their ports, latencies complete transfers, steps release
    their tiles;
 2. every transfer checks its needs in DESIGN's order (parent tile resident, free slot, its own
    node's previous transfer in that direction, ports); a fill that moves nothing (an output's
    first visit, zero-initialised) is resident as soon as its needs are met;
 3. the PE array starts the next step if every tile it needs is resident;
 4. ports are granted: all requests of the cycle, port by port (most requesters first), a
    rotating round-robin pointer per port, a grant takes both ports of the burst;
 5. every transfer's state in cycle c is written down, for the blame walk (blame.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from cyclesim.spec import Architecture
from cyclesim.spec.arch_types import Direction

from .nest import Leaf, Nest, Node, PortRef, Run, fill_ports, pe_port, writeback_ports

NOT_YET = None
STUCK_CYCLES = 1000  # no grant, step or completion for this long: every need waits on another


class ReferenceDeadlock(RuntimeError):
    """No transfer and no step can ever progress (a cyclic wait, e.g. for room)."""


@dataclass(eq=False)
class Transfer:
    kind: str  # "fill" or "write-back"
    node: Node
    run: Run
    src: PortRef  # the port the data leaves
    dst: PortRef  # the port it enters
    bits: int  # bits on the parent's port (one copy of a multicast value, every unicast share)
    bursts: list[tuple[int, PortRef]]  # per burst: cycles it holds both ports, the port it names
    latency: int
    latency_port: PortRef
    rank: tuple
    left: int = 0  # bursts still to move
    busy_until: int = -1  # end of the burst in flight
    moved_end: int | None = None  # end of the last burst
    done_at: int | None = None  # resident (fill) or landed (write-back)
    states: dict[int, tuple] = field(default_factory=dict)
    issued_at: int | None = None  # first cycle all its needs but ports were met
    pred: Transfer | None = None  # its node's previous transfer in the same direction
    burst_named: PortRef | None = None  # the port the burst in flight names
    dma: object = None  # the DMA engine serving its link (None: straight through the ports)
    ports_from: int | None = None  # with a DMA engine: channel held and setup done from here
    holds_from: int | None = None  # a fill into a watched memory: the cycle it took its room

    @property
    def label(self) -> str:
        return f"{self.kind} of {self.node.label}"

    def __repr__(self) -> str:
        return f"<{self.label} #{self.run.index}>"

    def next_burst(self) -> tuple[int, PortRef]:
        return self.bursts[len(self.bursts) - self.left]


def _bursts(src_bits: int, dst_bits: int, burst: int, src: PortRef, dst: PortRef):
    """Bursts where the bits meet: the side that moves more bits (the parent's port, carrying
    every instance's share; or either when equal) is cut into bursts of `burst` bits; the other
    side (each instance's own port, in parallel, in step) moves its share of each burst. A burst
    holds both ports for the slower side's ceil(bits / width) and names that port; on a tie the
    port the data leaves (src). (How the smaller side's bits split over the bursts is not in
    DESIGN: the reference splits them in proportion, rounding down the running total.)"""
    big, small = max(src_bits, dst_bits), min(src_bits, dst_bits)
    out = []
    for lo in range(0, big, burst):
        hi = min(big, lo + burst)
        part = small * hi // big - small * lo // big
        s_bits, d_bits = (hi - lo, part) if src_bits >= dst_bits else (part, hi - lo)
        cs = math.ceil(s_bits / src.port.width_bits)
        cd = math.ceil(d_bits / dst.port.width_bits)
        out.append((max(cs, cd, 1), dst if cd > cs else src))
    return out


def _transfer(kind: str, node: Node, run: Run, ports) -> Transfer:
    src, dst = ports
    burst = min(src.port.burst_bits, dst.port.burst_bits)
    parent, child = (src, dst) if kind == "fill" else (dst, src)
    if kind == "fill":
        bits, share = run.fill_bits, run.fill_instance_bits
        src_bits, dst_bits = bits, share
    else:
        bits, share = run.wb_bits, run.wb_instance_bits
        src_bits, dst_bits = share, bits
    latency_port = parent if parent.port.latency_cycles >= child.port.latency_cycles else child
    bursts = _bursts(src_bits, dst_bits, burst, src, dst) if bits else []
    return Transfer(
        kind=kind,
        node=node,
        run=run,
        src=src,
        dst=dst,
        bits=bits,
        bursts=bursts,
        latency=max(src.port.latency_cycles, dst.port.latency_cycles) if bits else 0,
        latency_port=latency_port,
        rank=(node.position, node.tensor_order, 0 if kind == "fill" else 1),
        left=len(bursts),
    )


@dataclass
class Step:
    start: int
    end: int
    spatial: tuple | None  # (memory, tensor, port) binding a step longer than one cycle


class Machine:
    def __init__(self, arch: Architecture, nest: Nest, reuse: str) -> None:
        self.arch, self.nest, self.reuse = arch, nest, reuse
        self.fills: dict[int, list[Transfer]] = {}  # per node id
        self.wbs: dict[int, list[Transfer]] = {}
        self.transfers: list[Transfer] = []
        for node in nest.nodes:
            if node.parent is None:
                continue
            fp = fill_ports(arch, node)
            self.fills[id(node)] = [_transfer("fill", node, r, fp) for r in node.runs]
            if node.is_output:
                wp = writeback_ports(arch, node)
                self.wbs[id(node)] = [_transfer("write-back", node, r, wp) for r in node.runs]
            self.transfers += self.fills[id(node)] + self.wbs.get(id(node), [])
            dma = arch.dma_for(node.parent.memory, node.memory)
            for t in self.fills[id(node)] + self.wbs.get(id(node), []):
                t.dma = dma if t.bits else None
        self.transfers.sort(key=lambda t: (t.rank, t.run.index))
        port_order = [(m.name, p.name) for m in arch.memories for p in m.ports]
        self.port_rank = {k: i for i, k in enumerate(port_order)}
        self.port_busy: dict[tuple, int] = {}  # port key -> end of the burst holding it
        self.port_holder: dict[tuple, Transfer] = {}
        self.pointer: dict[tuple, tuple] = {}  # port key -> rank of the last served requester
        self.steps: list[Step] = []
        self.situations: set[str] = set()  # open difference classes this schedule runs into
        for node_transfers in list(self.fills.values()) + list(self.wbs.values()):
            for a, b in zip(node_transfers, node_transfers[1:], strict=False):
                b.pred = a
        self.step_reads = self._pe_accesses()
        self._capacity()

    # ------------------------------------------------------------------ capacity
    def _capacity(self) -> None:
        """DESIGN "A memory never holds more than its size": a fill (or an output's entry)
        into a memory takes its tile's bits (at partial-sum width for outputs, per instance)
        from the moment it is issued until the tile is released, and waits while the memory's
        free bits are fewer. Watched: memories whose nodes' slots could together exceed the
        size (elsewhere the room is always there)."""
        self.tile_bits: dict[int, int] = {}
        worst: dict[str, int] = {}
        for node in self.nest.nodes:
            if node.parent is None:
                continue
            width = (
                self.nest.psum_bits[node.tensor] if node.is_output else self.nest.bits[node.tensor]
            )
            b = width * max(len(x) for r in node.runs for x in r.elements)
            self.tile_bits[id(node)] = b
            worst[node.memory] = worst.get(node.memory, 0) + node.slots * b
        self.size = {
            m: self.arch.memory(m).size_bits
            for m, need in worst.items()
            if self.arch.memory(m).size_bits is not None and need > self.arch.memory(m).size_bits
        }
        self.holding: list[Transfer] = []  # fills holding room in a watched memory, take order
        self.pe_leaf = 0  # the leaf whose steps the PE array runs (or waits to run)

    def _held(self, memory: str, c: int) -> list[Transfer]:
        """The fills whose tiles hold room in memory in cycle c (releases at c come first)."""
        return [
            t
            for t in self.holding
            if t.node.memory == memory and not self._released(t.node, t.run, c)
        ]

    def _room_need(self, t: Transfer, c: int):
        """Room in a watched memory, looked at in the cycle loop's order, so fills asking in one
        cycle take room in the tie order of arbitration (D15: DESIGN does not decide; the
        project's reading, which the replay follows since). Open in DESIGN (O5), the replay's reading: a node on one
        branch's path only takes room in that branch's turn (while the PE array runs or waits
        for that Einsum's steps), so a fill running ahead into the other branch cannot hold
        the room the running branch needs; a node above the split may take it any time."""
        node = t.node
        if t.holds_from is not None or node.memory not in self.size:
            return None
        if len(set(node.users)) == 1 and self.pe_leaf != node.users[0]:
            return ("turn",)
        held = self._held(node.memory, c)
        if (
            sum(self.tile_bits[id(h.node)] for h in held) + self.tile_bits[id(node)]
            > self.size[node.memory]
        ):
            # the tile named: the oldest one of another node holding room when the wait
            # began, for the whole wait (DESIGN names "the tile that holds the space"; which
            # one when several do is open, O5b: the replay's reading)
            before = t.states.get(c - 1)
            if before is not None and before[0] == "room":
                return before
            others = [h for h in held if h.node is not node]
            return ("room", (others or held)[0])
        return None

    # ------------------------------------------------------------------ the PE array
    def _pe_accesses(self):
        """Per step: {(memory, tensor, action): (values, bits)} and its length in cycles."""
        nest, arch = self.nest, self.arch
        out = []
        for s in range(len(nest.steps)):
            li = nest.leaf_of[s]
            leaf = nest.leaves[li]
            acc: dict[tuple, list[int]] = {}
            port_bits: dict[tuple, int] = {}  # (port key, instance) -> bits this step
            users: dict[tuple, dict[str, int]] = {}  # (port key, instance) -> tensor -> bits
            # DESIGN "Operand registers hold the previous cycle's value only": after a step of
            # another Einsum the registers hold that Einsum's operands, so every one is read
            same_einsum = s > 0 and nest.leaf_of[s - 1] == li
            for t in leaf.tensors:
                node = leaf.chains[t][-1]
                inst = self._instance_groups(node)
                now = nest.pe_elements[t][s]
                before = nest.pe_elements[t][s - 1] if same_einsum else None
                for g, positions in enumerate(inst):
                    if t == leaf.output:
                        elems = {now[p] for p in positions}
                        reads = {e for e in elems if self._first_visit(t, e) < s}
                        writes = elems
                        w = nest.psum_bits[t]
                        self._pe_add(
                            acc,
                            port_bits,
                            users,
                            node,
                            t,
                            g,
                            "read",
                            len(reads),
                            w,
                            Direction.READ_TO_BELOW,
                        )
                        self._pe_add(
                            acc,
                            port_bits,
                            users,
                            node,
                            t,
                            g,
                            "write",
                            len(writes),
                            w,
                            Direction.WRITE_FROM_BELOW,
                        )
                        continue
                    if self.reuse == "strict" or before is None:
                        changed = {now[p] for p in positions}
                    else:
                        changed = {now[p] for p in positions if now[p] != before[p]}
                    self._pe_add(
                        acc,
                        port_bits,
                        users,
                        node,
                        t,
                        g,
                        "read",
                        len(changed),
                        nest.bits[t],
                        Direction.READ_TO_BELOW,
                    )
            # the binding port: the largest ceil(bits / width); the operand named is the one
            # with the most bits through it (ties in operand order). Two ports tied: DESIGN
            # leaves it open (reported as O1); the reference takes the port whose named operand
            # changes most often (the output, else the one indexed by the deeper loop), and
            # among those the port met first in operand order (inputs, then the output's read
            # and write), as the replay does.
            cycles, binding = 1, None
            for (key, g), b in port_bits.items():  # in operand order
                width = next(p.width_bits for p in arch.memory(key[0]).ports if p.name == key[1])
                need = math.ceil(b / width)
                if need > cycles or (
                    need == cycles > 1
                    and self._often(users[(key, g)], leaf) > self._often(users[binding], leaf)
                ):
                    cycles, binding = need, (key, g)
            spatial = None
            if binding is not None:
                t = self._most_bits(users[binding], leaf)
                spatial = (leaf.chains[t][-1].memory, t, binding[0][1])
            out.append(({(leaf.einsum,) + k: v for k, v in acc.items()}, cycles, spatial))
        return out

    @staticmethod
    def _most_bits(by_tensor: dict[str, int], leaf: Leaf) -> str:
        ts = leaf.tensors
        return max(by_tensor, key=lambda x: (by_tensor[x], -ts.index(x)))

    def _often(self, by_tensor: dict[str, int], leaf: Leaf) -> int:
        """How often the port's named operand changes: the output every step, else the depth
        of the innermost temporal loop that indexes it."""
        t = self._most_bits(by_tensor, leaf)
        if t == leaf.output:
            return 1 << 30
        if self.reuse == "strict":  # every MAC reads every operand: all change every step
            return len(leaf.loop_ranks)
        return max(
            (d + 1 for d, r in enumerate(leaf.loop_ranks) if r in leaf.ranks[t]),
            default=0,
        )

    def _pe_add(self, acc, port_bits, users, node, t, g, action, values, width, direction):
        if not values:
            return
        a = acc.setdefault((node.memory, t, action), [0, 0])
        a[0] += values
        a[1] += values * width
        key = (pe_port(self.arch, node, direction).key, g)
        port_bits[key] = port_bits.get(key, 0) + values * width
        users.setdefault(key, {})
        users[key][t] = users[key].get(t, 0) + values * width

    def _instance_groups(self, node: Node) -> list[list[int]]:
        """PE positions grouped by the instance of node they read (one group: shared)."""
        groups: dict[tuple, list[int]] = {}
        for p, point in enumerate(self.nest.spatial_points):
            groups.setdefault(tuple(point[k] for k in node.inst_dims), []).append(p)
        return list(groups.values())

    def _first_visit(self, tensor: str, e) -> int:
        """The step in which the Einsum writing tensor first visits its element e."""
        if not hasattr(self, "_fv"):
            self._fv: dict = {}
            nest = self.nest
            for t in {lf.output for lf in nest.leaves}:
                for s, per in enumerate(nest.pe_elements[t]):
                    if nest.leaves[nest.leaf_of[s]].output == t:
                        for x in per:
                            self._fv.setdefault((t, x), s)
        return self._fv[(tensor, e)]

    # ------------------------------------------------------------------ helpers
    def _run_at(self, node: Node, s: int) -> Run:
        for r in node.runs:
            if r.first <= s <= r.last:
                return r
        raise AssertionError((node.label, s))

    def _released(self, node: Node, q: Run, c: int) -> bool:
        """Has run q given its slot back by cycle c? Inputs when every consumer is done (the PE
        array's last step, or the child's last fill from it); outputs when written back."""
        if node.is_output:
            t = self.wbs[id(node)][q.index]
            return t.done_at is not None and t.done_at <= c
        if node.child is None:
            end = self.step_end.get(q.last)
            return end is not None and end <= c
        for r in node.child.runs:
            if q.first <= r.first <= q.last:
                f = self.fills[id(node.child)][r.index]
                if f.done_at is None or f.done_at > c:
                    return False
        return True

    def _parent_fill(self, node: Node, run: Run) -> Transfer | None:
        """The fill of the parent tile this run lives in (None: the parent is a backing store)."""
        p = node.parent
        if p.parent is None:
            return None
        return self.fills[id(p)][self._run_at(p, run.first).index]

    def _grant_channels(self, wanting: list[Transfer], c: int) -> None:
        """A DMA engine's free channels go to the transfers that want one in cycle c in the
        order they asked (first come, first served; the same cycle in rank order): DESIGN's
        "Arbitration sees every request of the cycle" read as applying to channels too (D10).
        A channel is held until the transfer completes, latency included; the setup cycles
        come before its first burst."""
        for dma in {id(t.dma): t.dma for t in wanting}.values():
            mine = sorted((t for t in wanting if t.dma is dma), key=lambda t: (t.issued_at, t.rank))
            busy = sum(
                1
                for o in self.transfers
                if o.dma is dma
                and o.ports_from is not None
                and (o.done_at is None or o.done_at > c)
            )
            for t in mine:
                if busy < dma.channels:
                    busy += 1
                    t.ports_from = c + dma.setup_cycles
                    self.progress += 1
                else:
                    t.states[c] = ("dma", dma.name)

    @staticmethod
    def _done(t: Transfer | None, c: int) -> bool:
        return t is None or (t.done_at is not None and t.done_at <= c)

    # ------------------------------------------------------------------ needs
    def _fill_need(self, t: Transfer, c: int):
        node, run = t.node, t.run
        # An output's first visit moves nothing: it does not wait for the parent's tile (its
        # write-back will). DESIGN does not say; reported as open (O2), the replay's reading.
        pf = self._parent_fill(node, run) if run.fill_bits or not node.is_output else None
        if not self._done(pf, c):
            return ("parent", pf)
        if node.is_output and run.revisit:
            union = frozenset().union(*run.elements)
            for q in reversed(node.runs[: run.index]):
                if union & frozenset().union(*q.elements):
                    wb = self.wbs[id(node)][q.index]
                    if not self._done(wb, c):
                        return ("drain", wb)
                    break
        if run.index >= node.slots:
            holder = node.runs[run.index - node.slots]
            if not self._released(node, holder, c):
                return ("slot", holder.index)
        if run.index and not self._done(self.fills[id(node)][run.index - 1], c):
            return ("pred", self.fills[id(node)][run.index - 1])
        return self._room_need(t, c)

    def _wb_need(self, t: Transfer, c: int):
        """A write-back's needs, in order: its node's previous write-back, its tile left (the
        PE array's last step, or the children's write-backs into it), its parent tile, the PE
        pipeline delay, then ports. DESIGN gives the order for fills only; for write-backs it
        is open (reported as O3): the reference takes the replay's order."""
        node, run = t.node, t.run
        pred = self.wbs[id(node)][run.index - 1] if run.index else None
        if not self._done(pred, c):
            return ("pred", pred)
        pipe_until = None
        if node.child is None:
            end = self.step_end.get(run.last)
            if end is None or end > c:
                return ("uses", None)
            pipe_until = end + self.nest.pipeline
        else:
            for r in reversed(node.child.runs):
                if run.first <= r.first <= run.last:
                    wb = self.wbs[id(node.child)][r.index]
                    if not self._done(wb, c):
                        return ("uses", wb)
        pf = self._parent_fill(node, run)
        if not self._done(pf, c):
            return ("parent", pf)
        if pipe_until is not None and pipe_until > c:
            return ("pipe",)
        return None

    # ------------------------------------------------------------------ the cycle loop
    def run(self, limit: int = 200_000) -> int:
        nest = self.nest
        self.step_end: dict[int, int] = {}
        self.waits: list[tuple[int, int]] = []  # (cycle, step the PE array waits to start)
        n_steps = len(nest.steps)
        next_step, pe_free = 0, 0
        pending = list(self.transfers)
        c = 0
        self.progress, seen, since = 0, 0, 0  # grants, steps and completions so far
        while True:
            if pe_free <= c and next_step < n_steps:  # the PE array turns to its next step
                self.pe_leaf = nest.leaf_of[next_step]
            # 2. needs, in tree order; a fill that moves nothing is resident at once
            requesters: list[Transfer] = []
            channel_wanted: list[Transfer] = []
            for t in pending:
                if t.done_at is not None:
                    continue
                if t.left == len(t.bursts) and t.busy_until < 0:
                    need = self._fill_need(t, c) if t.kind == "fill" else self._wb_need(t, c)
                    if need is not None:
                        t.states[c] = need
                        continue
                    if t.kind == "fill" and t.holds_from is None and t.node.memory in self.size:
                        t.holds_from = c
                        self.holding.append(t)
                    if t.bits == 0:
                        t.done_at = c
                        self.progress += 1
                        continue
                    if t.issued_at is None:
                        t.issued_at = c
                    if t.dma is not None and t.ports_from is None:
                        channel_wanted.append(t)
                        continue
                    if t.dma is not None and c < t.ports_from:
                        t.states[c] = ("setup", t.dma.name)
                        continue
                if t.left and t.busy_until <= c:
                    requesters.append(t)
            self._grant_channels(channel_wanted, c)
            for t in channel_wanted:
                if t.ports_from is None:
                    continue
                if c < t.ports_from:
                    t.states[c] = ("setup", t.dma.name)
                else:
                    requesters.append(t)
            # 3. the PE array
            if next_step < n_steps and pe_free <= c:
                leaf = nest.leaves[nest.leaf_of[next_step]]
                ready = all(
                    self._done(self.fills[id(ch[-1])][self._run_at(ch[-1], next_step).index], c)
                    for ch in (leaf.chains[x] for x in leaf.tensors)
                    if len(ch) > 1
                )
                if ready:
                    _, cycles, spatial = self.step_reads[next_step]
                    self.steps.append(Step(c, c + cycles, spatial))
                    self.progress += 1
                    self.step_end[next_step] = c + cycles
                    pe_free = c + cycles
                    next_step += 1
                else:
                    self.waits.append((c, next_step))
            # 4. arbitration
            self._arbitrate(requesters, c)
            # 5. states
            for t in pending:
                if t.done_at is not None and t.done_at <= c:
                    continue
                if c in t.states:
                    continue
                if t.busy_until > c:
                    t.states[c] = ("burst", t.burst_named)
                elif t.left:
                    t.states[c] = self._competitor(t, c)
                elif t.done_at is not None:
                    t.states[c] = ("latency",)
            pending = [t for t in pending if t.done_at is None or t.done_at > c]
            if next_step == n_steps and not pending and pe_free <= c + 1:
                ends = [t.done_at for t in self.transfers] + [pe_free]
                self.cycles = max(ends)
                return self.cycles
            c += 1
            if self.progress != seen:
                seen, since = self.progress, c
            if c - since > STUCK_CYCLES or c > limit:
                raise ReferenceDeadlock(f"reference: no progress since cycle {since}")

    def _competitor(self, t: Transfer, c: int) -> tuple:
        for p in (t.src, t.dst):
            holder = self.port_holder.get(p.key)
            if holder is not None and holder is not t and self.port_busy[p.key] > c:
                return ("wait", holder, t.next_burst()[1])
        raise AssertionError(f"{t.label} waits at {c} with both ports free")

    def _arbitrate(self, requesters: list[Transfer], c: int) -> None:
        def free(key) -> bool:
            return self.port_busy.get(key, 0) <= c

        wanting: dict[tuple, list[Transfer]] = {}
        for t in requesters:
            for p in (t.src, t.dst):
                wanting.setdefault(p.key, []).append(t)
        order = sorted(wanting, key=lambda k: (-len(wanting[k]), self.port_rank[k]))
        granted: set[int] = set()
        for key in order:
            if not free(key):
                continue
            last = self.pointer.get(key)
            cands = sorted(wanting[key], key=lambda t: t.rank)
            if last is not None:
                after = [t for t in cands if t.rank > last]
                cands = after + [t for t in cands if t.rank <= last]
            for t in cands:
                if id(t) in granted:
                    continue
                other = t.dst.key if t.src.key == key else t.src.key
                if not free(other):
                    continue
                dur, t.burst_named = t.next_burst()
                for k in (t.src.key, t.dst.key):
                    self.port_busy[k] = c + dur
                    self.port_holder[k] = t
                    self.pointer[k] = t.rank
                t.busy_until = c + dur
                t.left -= 1
                self.progress += 1
                granted.add(id(t))
                if t.left == 0:
                    t.moved_end = c + dur
                    t.done_at = t.moved_end + t.latency
                break
