"""ZigZag 3.9.1's onloading and offloading (calc_data_loading_latency), reimplemented (§3.7-3.8).

Per port, transfers that happen once per layer (N == 1) borrow spare port bandwidth during
computation and shrink towards one innermost per-instance tile (`reduce_ordered`, since 3.7.0);
the others cost one period. Links of one operand then add in series, the two inputs in parallel.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

from cyclesim.checks.zigzag.inputs import (
    DataDirection,
    MemoryOperand,
    ZigZagInputs,
    served_transfers,
)
from cyclesim.checks.zigzag.latency import LinkLoad, LinkSharing, LoadingEntry, OnloadingParts
from cyclesim.checks.zigzag.quantities import MappingQuantities
from cyclesim.errors import CyclesimError


class ZigZagModelError(CyclesimError):
    """The inputs drive ZigZag 3.9.1 into one of its own failures (named in the message)."""


@dataclass(frozen=True, slots=True)
class Loading:
    """Onloading and offloading with the entries and links they were combined from."""

    onloading: float
    offloading: float
    borrowed: float
    onloading_entries: tuple[LoadingEntry, ...]
    offloading_entries: tuple[LoadingEntry, ...]
    onloading_links: tuple[LinkLoad, ...]
    offloading_links: tuple[LinkLoad, ...]
    parts: tuple[OnloadingParts, ...]


def reduce_ordered(
    totals: list[float], minima: list[float], surplus: float
) -> tuple[list[float], list[float]]:
    """CostModelEvaluation.reduce_ordered: shrink the largest totals first towards their minima."""
    if surplus <= 0 or not totals:
        return totals, [0.0] * len(totals)
    order = sorted(range(len(totals)), key=lambda i: totals[i], reverse=True)
    result = list(totals)
    reductions = [0.0] * len(totals)
    for i in order:
        if surplus <= 0:
            break
        reduction = min(max(0.0, result[i] - minima[i]), surplus)
        result[i] -= reduction
        reductions[i] += reduction
        surplus -= reduction
    for i, value in enumerate(result):
        if value < minima[i]:
            raise ZigZagModelError(
                f"ZigZag 3.9.1 fails here: a once-per-layer transfer needs {totals[i]} cycles, fewer than "
                f"one innermost tile ({minima[i]}); its reduce_ordered assertion would stop the evaluation"
            )
    return result, reductions


def loading_latency(
    inputs: ZigZagInputs, q: MappingQuantities, windows: dict, stall: float, cpo: float
) -> Loading:
    """Onloading, offloading and cycles borrowed from computation."""
    layer, mapping = inputs.layer, inputs.mapping
    output_mem = mapping.memory_operand(layer.output_operand)
    entries: dict[tuple, LoadingEntry] = {}
    borrowed_per_port: list[float] = []
    computation = ceil(q.total_cycles * cpo) + stall
    for memory in inputs.accelerator.memories:
        for port in memory.used_ports:
            once, periodic = [], []
            for key in served_transfers(inputs, memory, port):
                op, _, direction = key
                if mapping.memory_operand(op) == output_mem and direction in (
                    DataDirection.READ_TO_BELOW,
                    DataDirection.WRITTEN_FROM_ABOVE,
                ):
                    continue  # partial sums flowing down are not part of on/offloading
                count = q.links[key].period_count
                if count == 1:
                    once.append(key)
                elif count > 1:
                    periodic.append(key)
            demand = sum(
                ceil(q.links[key].required_bandwidth_bits_per_cycle / cpo) for key in periodic
            )
            bw = port.bandwidth_max_bits
            totals = [windows[key][1] for key in once]
            minima = [ceil(q.bits_per_instance[key[0]][1] / bw) for key in once]
            surplus = max(0, ((bw - demand) / bw) * computation)
            remaining, reductions = reduce_ordered(totals, minima, surplus)
            per_operand: dict[MemoryOperand, float] = {}
            for key, cycles, reduction in zip(once, remaining, reductions, strict=True):
                entries[key] = _entry(inputs, memory, port, key, cycles, windows[key][1])
                per_operand[mapping.memory_operand(key[0])] = reduction
            for key in periodic:
                entries[key] = _entry(inputs, memory, port, key, windows[key][1], windows[key][1])
            borrowed_per_port.append(sum(per_operand.values()))
    onloading, on_links, parts = _onloading(inputs, entries)
    off_links = []
    out = layer.output_operand
    out_levels = inputs.accelerator.levels(output_mem)
    for m in range(len(out_levels) - 1):
        cycles = max(
            entries[(out, m, DataDirection.READ_TO_ABOVE)].cycles,
            entries[(out, m + 1, DataDirection.WRITTEN_FROM_BELOW)].cycles,
        )
        off_links.append(
            LinkLoad(out, out_levels[m].name, out_levels[m + 1].name, cycles, LinkSharing.SEPARATE)
        )
    input_keys = [k for k in entries if k[0] in layer.input_operands]
    return Loading(
        onloading=onloading,
        offloading=sum(link.cycles for link in off_links),
        borrowed=max(borrowed_per_port, default=0),
        onloading_entries=tuple(entries[k] for k in input_keys),
        offloading_entries=tuple(entries[k] for k in entries if k[0] == out),
        onloading_links=tuple(on_links),
        offloading_links=tuple(off_links),
        parts=parts,
    )


def _entry(inputs: ZigZagInputs, memory, port, key: tuple, cycles: float, raw: int) -> LoadingEntry:
    """One begin/end activity of a port."""
    return LoadingEntry(
        key[0], memory.name, key[1], key[2], port.name, cycles, raw, port.shared_by_both_inputs
    )


def _onloading(
    inputs: ZigZagInputs, entries: dict
) -> tuple[float, list[LinkLoad], tuple[OnloadingParts, ...]]:
    """calc_onloading_combined: links in series per input, the two inputs in parallel except shared parts."""
    layer = inputs.layer
    individual = {op: 0 for op in layer.input_operands}
    half = {op: 0 for op in layer.input_operands}
    shared = {op: 0 for op in layer.input_operands}
    links = []
    for op in layer.input_operands:
        levels = inputs.accelerator.levels(inputs.mapping.memory_operand(op))
        for m in range(len(levels) - 1):
            lower, upper = (
                entries[(op, m, DataDirection.WRITTEN_FROM_ABOVE)],
                entries[(op, m + 1, DataDirection.READ_TO_BELOW)],
            )
            cycles = max(lower.cycles, upper.cycles)
            if not lower.port_shared_by_both_inputs and not upper.port_shared_by_both_inputs:
                individual[op] += cycles
                sharing = LinkSharing.SEPARATE
            elif lower.port_shared_by_both_inputs and upper.port_shared_by_both_inputs:
                shared[op] += cycles
                sharing = LinkSharing.SHARED
            else:
                half[op] = cycles  # ZigZag assigns: only the last half-shared link counts
                sharing = LinkSharing.HALF_SHARED
            links.append(LinkLoad(op, levels[m].name, levels[m + 1].name, cycles, sharing))
    ops = layer.input_operands
    if len(ops) == 1:
        total = individual[ops[0]]
    else:
        a, b = ops[0], ops[1]
        first = shared[a] + max(shared[b] + half[b] + individual[b], half[a] + individual[a])
        second = shared[b] + max(shared[a] + half[a] + individual[a], half[b] + individual[b])
        total = min(first, second)
    parts = tuple(OnloadingParts(op, individual[op], half[op], shared[op]) for op in ops)
    return total, links, parts
