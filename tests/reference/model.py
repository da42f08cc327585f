"""The reference model's entry point: replay a schedule one cycle at a time and return the
numbers the differential test compares (cycles, phases, stalls, accesses)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from cyclesim.spec import Architecture, Mapping, Workload

from .blame import stall_table
from .machine import Machine
from .nest import build_nest


@dataclass
class Outcome:
    cycles: int
    phases: dict[str, int]  # onload, ideal_compute, stall, offload
    stalls: Counter  # (phase, cause, memory, tensor, port, competitor) -> cycles
    accesses: Counter  # (einsum, tensor, memory, action) -> (values, bits)
    situations: frozenset = frozenset()  # open difference classes the schedule runs into


def reference(
    arch: Architecture, work: Workload, mapping: Mapping, reuse: str = "retain"
) -> Outcome:
    nest = build_nest(arch, work, mapping, reuse)
    m = Machine(arch, nest, reuse)
    cycles = m.run()
    first, last = m.steps[0].start, m.steps[-1].end
    ideal = len(m.steps)
    phases = {
        "onload": first,
        "ideal_compute": ideal,
        "stall": last - first - ideal,
        "offload": cycles - last,
    }
    acc: Counter = Counter()

    def add(einsum, tensor, memory, action, values, bits):
        if values:
            v, b = acc.get((einsum, tensor, memory, action), (0, 0))
            acc[(einsum, tensor, memory, action)] = (v + values, b + bits)

    for t in m.transfers:
        r, node = t.run, t.node
        if t.kind == "fill" and t.bits:
            width = t.bits // r.fill_values_parent
            add(node.owner, node.tensor, node.parent.memory, "read", r.fill_values_parent, t.bits)
            add(
                node.owner,
                node.tensor,
                node.memory,
                "write",
                r.fill_values_child,
                r.fill_values_child * width,
            )
        elif t.kind == "write-back" and t.bits:
            add(node.owner, node.tensor, node.memory, "read", r.wb_values, t.bits)
            add(node.owner, node.tensor, node.parent.memory, "write", r.wb_values, t.bits)
    for step_acc, _, _ in m.step_reads:
        for (einsum, memory, tensor, action), (v, b) in step_acc.items():
            add(einsum, tensor, memory, action, v, b)
    stalls = stall_table(m)  # (may note open classes the blame walk runs into)
    return Outcome(cycles, phases, stalls, acc, frozenset(m.situations))
