"""The chip plan (pure, no SimPy): every layer's steps on their cores with their iteration
boxes, each core's program order, and the transfers that bring each step the parts it reads
(their sources, targets, routes as hops, what they wait for).

A box is a tuple of half-open (lo, hi) ranges: over an Einsum's ranks (a step's iterations) or
over a tensor's dimensions (the values a step reads or writes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from cyclesim.chip.arch import Chip, Medium, MediumKind
from cyclesim.chip.mapping import ChipMapping, LayerMapping, Via
from cyclesim.chip.routes import route_tree
from cyclesim.spec.arch_types import Port
from cyclesim.spec.workload import Einsum, TensorAccess, Workload

Box = tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a layer on one core: `index` counts the layer's steps on that core,
    `position` the core's program order."""

    id: int
    layer: str
    core: str
    index: int
    position: int
    box: Box  # over the Einsum's ranks, in their order

    @property
    def name(self) -> str:
        return f"{self.layer}#{self.index}@{self.core}"


@dataclass(frozen=True, slots=True)
class Hop:
    """One hop of a transfer's route: `src` sends the whole part over `medium` to `dsts` (one
    end for a link; every target on it for a bus), holding the DRAM port too when one end is
    the off-chip memory. `after` is the hop that brings the data to `src` (None at the source)."""

    id: int
    transfer: int
    src: str
    dsts: tuple[str, ...]
    medium: Medium
    dram_port: Port | None
    port_key: str | None  # the arbiter's key of the DRAM port
    after: int | None
    bits: int

    @property
    def keys(self) -> tuple[str, ...]:
        return (self.medium.name,) + ((self.port_key,) if self.port_key else ())

    @property
    def burst_bits(self) -> int:
        b = self.medium.burst_bits
        return min(b, self.dram_port.burst_bits) if self.dram_port else b

    @property
    def latency(self) -> int:
        lat = self.medium.latency_cycles
        return max(lat, self.dram_port.latency_cycles) if self.dram_port else lat

    def burst_cycles(self, bits: int) -> int:
        c = -(-bits // self.medium.width_bits)
        return max(c, -(-bits // self.dram_port.width_bits)) if self.dram_port else c

    def slower_is_dram(self) -> bool:
        """Does the DRAM port bind a burst (DESIGN's naming rule: on a tie, the side the data
        leaves)?"""
        if self.dram_port is None:
            return False
        b = self.burst_bits
        m, d = -(-b // self.medium.width_bits), -(-b // self.dram_port.width_bits)
        return d > m or (d == m and self.src == self.port_key.split(".")[0])


@dataclass(frozen=True, slots=True)
class Transfer:
    """A part of a tensor moving from `source` to `targets` (cores, or the off-chip memory).

    It starts once `after_step` ended (its producer) or `after_transfer` landed (a part written
    to DRAM first), and once every target step in `for_steps` has its landing slot."""

    id: int
    tensor: str
    box: Box
    bits: int
    source: str
    targets: tuple[str, ...]
    for_steps: tuple[int, ...]  # the consumer steps (one per target core); () for a write
    after_step: int | None
    after_transfer: int | None
    hops: tuple[int, ...]

    def name(self, plan: ChipPlan) -> str:
        return f"{self.tensor}:{self.source}>{'+'.join(self.targets)}#{self.id}"


@dataclass(frozen=True, slots=True)
class Need:
    """What a step waits for: a transfer landing on its core, or (nothing moving) a producer
    step having ended on it. `operand` orders ties (the Einsum's inputs)."""

    step: int
    tensor: str
    operand: int
    transfer: int | None
    producer: int | None


@dataclass(frozen=True)
class ChipPlan:
    chip: Chip
    workload: Workload
    mapping: ChipMapping
    steps: tuple[Step, ...]
    programs: dict[str, tuple[int, ...]]  # core -> step ids in program order
    transfers: tuple[Transfer, ...]
    hops: tuple[Hop, ...]
    needs: dict[int, tuple[Need, ...]]  # step -> its needs
    writes: dict[int, tuple[int, ...]] = field(default_factory=dict)  # step -> transfers it sends
    port_keys: tuple[str, ...] = ()  # media then DRAM ports: the arbiter's ports, in order
    widths: dict[str, int] = field(default_factory=dict)

    def path_to(self, transfer: int, target: str) -> list[Hop]:
        """The hops that bring a transfer to one target, source first."""
        t = self.transfers[transfer]
        hop = next(self.hops[h] for h in t.hops if target in self.hops[h].dsts)
        path = [hop]
        while hop.after is not None:
            hop = self.hops[hop.after]
            path.append(hop)
        return path[::-1]


def tensor_box(access: TensorAccess, box: Box, ranks: tuple[str, ...]) -> Box:
    """The values of a tensor an iteration box touches (a dense span per dimension)."""
    at = dict(zip(ranks, box, strict=True))
    out = []
    for proj in access.projection:
        lo = sum(c * at[r][0] for c, r in proj.terms)
        hi = sum(c * (at[r][1] - 1) for c, r in proj.terms) + 1
        out.append((lo, hi))
    return tuple(out)


def intersect(a: Box, b: Box) -> Box | None:
    out = tuple((max(x0, y0), min(x1, y1)) for (x0, x1), (y0, y1) in zip(a, b, strict=True))
    return None if any(lo >= hi for lo, hi in out) else out


def volume(box: Box) -> int:
    return math.prod(hi - lo for lo, hi in box)


def _multi_index(n: int, sizes: list[int]) -> list[int]:
    out = []
    for s in reversed(sizes):
        out.append(n % s)
        n //= s
    return out[::-1]


def layer_steps(lm: LayerMapping, einsum: Einsum) -> dict[str, list[Box]]:
    """Per core of the layer, its steps' iteration boxes in step order."""
    ranks = [r for r, _ in einsum.ranks]
    size = einsum.rank_sizes
    part = dict(size)
    for r, p in lm.split:
        part[r] //= p
    step = dict(part)
    for r, s in lm.tile:
        step[r] = s
    out = {}
    for ci, core in enumerate(lm.cores):
        origin = dict.fromkeys(ranks, 0)
        for (r, _), i in zip(lm.split, _multi_index(ci, [p for _, p in lm.split]), strict=True):
            origin[r] += i * part[r]
        counts = [part[r] // s for r, s in lm.tile]
        boxes = []
        for si in range(math.prod(counts)):
            lo = dict(origin)
            for (r, s), i in zip(lm.tile, _multi_index(si, counts), strict=True):
                lo[r] += i * s
            boxes.append(tuple((lo[r], lo[r] + step[r]) for r in ranks))
        out[core] = boxes
    return out


def build_chip_plan(chip: Chip, workload: Workload, mapping: ChipMapping) -> ChipPlan:
    """Steps, program order, transfers and routes; SpecError for a transfer with no route or a
    `kept` tensor read on a core that did not produce it."""
    boxes = {lm.einsum: layer_steps(lm, workload.einsum(lm.einsum)) for lm in mapping.layers}
    steps: list[Step] = []
    programs: dict[str, list[int]] = {c: [] for c in chip.core_names}
    for key in _program_order(workload, mapping, boxes):
        e, core, si = key
        st = Step(len(steps), e, core, si, len(programs[core]), boxes[e][core][si])
        steps.append(st)
        programs[core].append(st.id)
    b = _Builder(chip, workload, mapping, steps)
    for st in sorted(steps, key=lambda s: (s.position, s.core)):  # deterministic id order
        b.add_needs(st)
    b.route_all()
    keys = [m.name for m in chip.media]
    widths = {m.name: m.width_bits for m in chip.media}
    for p in chip.offchip.ports:
        key = f"{chip.offchip.name}.{p.name}"
        keys.append(key)
        widths[key] = p.width_bits
    return ChipPlan(chip, workload, mapping, tuple(steps),
                    {c: tuple(p) for c, p in programs.items()}, tuple(b.transfers),
                    tuple(b.hops), {s.id: tuple(b.needs.get(s.id, ())) for s in steps},
                    {k: tuple(v) for k, v in b.writes.items()}, tuple(keys), widths)  # fmt: skip


def _program_order(workload: Workload, mapping: ChipMapping, boxes: dict) -> list[tuple]:
    """Steps (layer, core, index) in the order cores run them: groups in mapping order; inside
    a group, rounds in which each layer (workload order) puts the next step of each of its
    cores, once every step it reads from has been put (so a consumer whose tile spans
    several producer steps comes after them all)."""
    ranks = {e.name: tuple(r for r, _ in e.ranks) for e in workload.einsums}
    out_box = {}
    for e in workload.einsums:
        for core, bs in boxes[e.name].items():
            for i, box in enumerate(bs):
                out_box[(e.name, core, i)] = tensor_box(e.output, box, ranks[e.name])

    def reads(key: tuple) -> list[tuple]:
        e = workload.einsum(key[0])
        box = boxes[key[0]][key[1]][key[2]]
        deps = []
        for acc in e.inputs:
            producer = workload.producer(acc.tensor)
            if producer is None:
                continue
            need = tensor_box(acc, box, ranks[e.name])
            deps += [k for k, ob in out_box.items()
                     if k[0] == producer.name and intersect(ob, need) is not None]  # fmt: skip
        return deps

    order: list[tuple] = []
    put: set[tuple] = set()
    for group in mapping.groups:
        nxt = {(e, core): 0 for e in group for core in boxes[e]}
        while any(i < len(boxes[e][c]) for (e, c), i in nxt.items()):
            progress = False
            for e in group:
                for core in boxes[e]:
                    i = nxt[(e, core)]
                    if i < len(boxes[e][core]) and all(d in put for d in reads((e, core, i))):
                        order.append((e, core, i))
                        put.add((e, core, i))
                        nxt[(e, core)] = i + 1
                        progress = True
            if not progress:  # a layer reads a later group's output: the groups are out of order
                raise mapping.error(f"the layers of group {list(group)} read a tensor a later group "
                                    "produces", "groups", expected="groups in dependency order")  # fmt: skip
    return order


class _Builder:
    def __init__(self, chip: Chip, workload: Workload, mapping: ChipMapping, steps: list[Step]):
        self.chip, self.workload, self.mapping, self.steps = chip, workload, mapping, steps
        self.transfers: list[Transfer] = []
        self.hops: list[Hop] = []
        self.needs: dict[int, list[Need]] = {}
        self.writes: dict[int, list[int]] = {}
        self.by_layer = {}
        for s in steps:
            self.by_layer.setdefault(s.layer, []).append(s)
        self.multicast: dict[tuple, int] = {}  # (tensor, box, source, after) -> transfer
        self.written: dict[int, int] = {}  # producer step -> its write to DRAM
        self.dram = chip.offchip.name

    def ranks(self, layer: str) -> tuple[str, ...]:
        return tuple(r for r, _ in self.workload.einsum(layer).ranks)

    def out_box(self, st: Step) -> Box:
        e = self.workload.einsum(st.layer)
        return tensor_box(e.output, st.box, self.ranks(st.layer))

    def bits(self, tensor: str, box: Box) -> int:
        return volume(box) * self.workload.tensor(tensor).bits_per_value

    def previous(self, st: Step) -> Step | None:
        if st.index == 0:
            return None
        return next(
            s for s in self.by_layer[st.layer] if s.core == st.core and s.index == st.index - 1
        )

    def add_needs(self, st: Step) -> None:
        e = self.workload.einsum(st.layer)
        ranks = self.ranks(st.layer)
        prev = self.previous(st)
        for oi, acc in enumerate(e.inputs):
            box = tensor_box(acc, st.box, ranks)
            if prev is not None and tensor_box(acc, prev.box, ranks) == box:
                continue  # the previous step's tile stays
            placement = self.mapping.placement(acc.tensor)
            producer = self.workload.producer(acc.tensor)
            if producer is None:
                if placement.home not in (st.core, "local"):
                    t = self.transfer(acc.tensor, box, placement.home, st, None, None)
                    self.need(st, acc.tensor, oi, t, None)
                continue
            for ps in self.by_layer[producer.name]:
                part = intersect(self.out_box(ps), box)
                if part is None:
                    continue
                if placement.via is Via.KEPT or (
                    placement.via is Via.NETWORK and ps.core == st.core
                ):
                    if ps.core != st.core:
                        raise self.mapping.error(
                            f"tensor {acc.tensor} is kept on its producer's core, but "
                            f"{st.name} reads a part {ps.name} produced on {ps.core}",
                            placement.path, expected="via: network or via: dram",
                        )  # fmt: skip
                    self.need(st, acc.tensor, oi, None, ps.id)
                elif placement.via is Via.NETWORK:
                    t = self.transfer(acc.tensor, part, ps.core, st, ps.id, None)
                    self.need(st, acc.tensor, oi, t, ps.id)
                else:
                    w = self.write(ps)
                    t = self.transfer(acc.tensor, part, self.dram, st, None, w)
                    self.need(st, acc.tensor, oi, t, ps.id)
        out = e.output.tensor
        placement = self.mapping.placement(out)
        consumed = any(acc.tensor == out for x in self.workload.einsums for acc in x.inputs)
        if not consumed and placement.home == self.dram:
            self.write(st)

    def need(self, st: Step, tensor: str, operand: int, transfer: int | None, producer: int | None):
        self.needs.setdefault(st.id, []).append(Need(st.id, tensor, operand, transfer, producer))

    def write(self, st: Step) -> int:
        """The producer step's output tile written to DRAM (once)."""
        if st.id not in self.written:
            tensor = self.workload.einsum(st.layer).output.tensor
            t = self._new(tensor, self.out_box(st), st.core, (self.dram,), (), st.id, None)
            self.written[st.id] = t
            self.writes.setdefault(st.id, []).append(t)
        return self.written[st.id]

    def transfer(
        self, tensor: str, box: Box, source: str, st: Step, after_step, after_transfer
    ) -> int:
        placement = self.mapping.placement(tensor)
        key = (tensor, box, source, after_step, after_transfer)
        if placement.multicast and key in self.multicast:
            tid = self.multicast[key]
            t = self.transfers[tid]
            if st.core not in t.targets and source != st.core:
                self._retarget(tid, t.targets + (st.core,), t.for_steps + (st.id,))
                return tid
        tid = self._new(tensor, box, source, (st.core,), (st.id,), after_step, after_transfer)
        self.multicast[key] = tid
        return tid

    def _new(self, tensor, box, source, targets, for_steps, after_step, after_transfer) -> int:
        tid = len(self.transfers)
        self.transfers.append(Transfer(tid, tensor, box, self.bits(tensor, box), source, (), (),
                                       after_step, after_transfer, ()))  # fmt: skip
        self._retarget(tid, targets, for_steps)
        if after_step is not None and source != self.dram and self.dram not in targets:
            self.writes.setdefault(after_step, []).append(tid)
        return tid

    def _retarget(self, tid: int, targets: tuple[str, ...], for_steps: tuple[int, ...]) -> None:
        self.transfers[tid] = _with(self.transfers[tid], targets=targets, for_steps=for_steps)

    def route_all(self) -> None:
        """Every transfer's hops, in transfer order (a hop's id is its arbitration rank)."""
        for t in self.transfers:
            self.transfers[t.id] = _with(t, hops=self.route(t))

    def route(self, t: Transfer) -> tuple[int, ...]:
        placement = self.mapping.placement(t.tensor)
        tree = route_tree(self.chip, t.source, t.targets, placement.route)
        if tree is None:
            raise self.mapping.error(
                f"tensor {t.tensor} has no route from {t.source} to {' and '.join(t.targets)}"
                + (f" over {list(placement.route)}" if placement.route else ""),
                placement.path, expected="links or a bus joining them, or another route",
            )  # fmt: skip
        merged: dict[tuple, list[str]] = {}
        for a, bend, m in tree:  # a bus reaches every target on it in one hop
            key = (a, m.name) if m.kind is MediumKind.BUS else (a, m.name, bend)
            merged.setdefault(key, []).append(bend)
        arrive: dict[str, int] = {}
        ids = []
        for key, dsts in merged.items():
            a, m = key[0], self.chip.medium(key[1])
            port = port_key = None
            if a == self.dram or self.dram in dsts:
                port = self.chip.offchip.port(read=a == self.dram)
                port_key = f"{self.dram}.{port.name}"
            hid = len(self.hops)
            self.hops.append(Hop(hid, t.id, a, tuple(dsts), m, port, port_key, arrive.get(a),
                                 t.bits))  # fmt: skip
            for d in dsts:
                arrive[d] = hid
            ids.append(hid)
        return tuple(ids)


def _with(t: Transfer, **kw) -> Transfer:
    from dataclasses import replace

    return replace(t, **kw)
