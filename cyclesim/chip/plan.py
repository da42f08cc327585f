"""The chip plan (pure, no SimPy): every layer's steps on their cores with their iteration
boxes, each core's program order, and the transfers that bring each step the parts it reads
(their sources, targets, routes as hops, what they wait for).

Boxes and the order of steps: chip/steps.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cyclesim.chip.arch import Chip, Medium, MediumKind
from cyclesim.chip.mapping_types import ChipMapping, Via
from cyclesim.chip.routes import route_tree
from cyclesim.chip.steps import (
    Box,
    intersect,
    layer_steps,
    program_order,
    remainder,
    tensor_box,
    volume,
)
from cyclesim.spec.arch_types import Port
from cyclesim.spec.workload import Workload


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
    reads_dram: bool = False  # the hop leaves the off-chip memory (else it may arrive there)

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
        return d > m or (d == m and self.reads_dram)


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
    placements: dict = field(default_factory=dict)  # tensor -> its DRAM Placement (dram: only)

    def path_to(self, transfer: int, target: str) -> list[Hop]:
        """The hops that bring a transfer to one target, source first."""
        t = self.transfers[transfer]
        hop = next(self.hops[h] for h in t.hops if target in self.hops[h].dsts)
        path = [hop]
        while hop.after is not None:
            hop = self.hops[hop.after]
            path.append(hop)
        return path[::-1]


def build_chip_plan(chip: Chip, workload: Workload, mapping: ChipMapping) -> ChipPlan:
    """Steps, program order, transfers and routes; SpecError for a transfer with no route or a
    `kept` tensor read on a core that did not produce it."""
    boxes = {lm.einsum: layer_steps(lm, workload.einsum(lm.einsum)) for lm in mapping.layers}
    steps: list[Step] = []
    programs: dict[str, list[int]] = {c: [] for c in chip.core_names}
    for key in program_order(workload, mapping, boxes):
        e, core, si = key
        st = Step(len(steps), e, core, si, len(programs[core]), boxes[e][core][si])
        steps.append(st)
        programs[core].append(st.id)
    b = _Builder(chip, workload, mapping, steps)
    order = {c: i for i, c in enumerate(chip.core_names)}
    for st in sorted(steps, key=lambda s: (s.position, order[s.core])):  # the arbitration rank
        b.add_needs(st)
    b.route_all()
    placements = {}
    if chip.offchip.dram is not None:
        from cyclesim.chip.dram import dram_placements

        placements = dram_placements(chip, workload)
    keys = [m.name for m in chip.media]
    widths = {m.name: m.width_bits for m in chip.media}
    for p in chip.offchip.ports:
        key = f"{chip.offchip.name}.{p.name}"
        keys.append(key)
        widths[key] = p.width_bits
    return ChipPlan(chip, workload, mapping, tuple(steps),
                    {c: tuple(p) for c, p in programs.items()}, tuple(b.transfers),
                    tuple(b.hops), {s.id: tuple(b.needs.get(s.id, ())) for s in steps},
                    {k: tuple(v) for k, v in b.writes.items()}, tuple(keys), widths,
                    placements)  # fmt: skip


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
        self.multicast: dict[tuple, int] = {}  # (part, source, after, step) -> transfer
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
            if prev is not None:  # what the previous step held stays: only the rest moves
                box = remainder(box, tensor_box(acc, prev.box, ranks))
                if box is None:
                    continue
            if volume(box) == 0:  # the step reads only beyond the tensor's edge
                continue
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
        # one multicast serves the cores that need the same part for the same step: grouping
        # steps far apart would hold the part until the latest of them has a slot
        key = (tensor, box, source, after_step, after_transfer, st.layer, st.index)
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
                                 t.bits, a == self.dram))  # fmt: skip
            for d in dsts:
                arrive[d] = hid
            ids.append(hid)
        return tuple(ids)


def _with(t: Transfer, **kw) -> Transfer:
    from dataclasses import replace

    return replace(t, **kw)
