"""ZigZag 3.9.1's latency model and word-access counts, reimplemented as pure functions.

`evaluate(inputs)` follows docs/reference/zigzag.md §3 term by term and returns one frozen
`ZigZagLatency`. ZigZag's attribute names map to ours as follows:

* `latency_total2` -> `latency_total_cycles` (what ZigZag reports),
  `latency_total0` -> `latency_with_stall_cycles`, `latency_total1` -> `latency_with_onloading_cycles`;
* `ideal_cycle` -> `ideal_cycles`, `ideal_temporal_cycle` -> `ideal_temporal_cycles`;
  `ideal_temporal_cycle - ideal_cycle` -> `spatial_stall_cycles` (PEs left idle by the spatial mapping);
* `stall_slack_comb` (SS_comb) -> `temporal_stall_cycles`; `stall_slack_comb_collect` -> `port_stalls`;
* `data_onloading_cycle` / `data_offloading_cycle` / `systolic_drain_cycle` -> `onloading_cycles` /
  `offloading_cycles` / `systolic_drain_cycles`;
* `loading_offloading_cycles_borrowed_from_computation` -> `borrowed_cycles`;
* `double_buffer_true` -> `double_buffers`; `memory_word_access` -> `word_accesses`.
"""

from __future__ import annotations

from math import ceil, prod

import numpy as np

from cyclesim.checks.zigzag.inputs import DataDirection, ZigZagInputs, served_transfers
from cyclesim.checks.zigzag.latency import (
    DIRECTIONS,
    DoubleBuffer,
    PortStall,
    Transfer,
    WordAccess,
    ZigZagLatency,
)
from cyclesim.checks.zigzag.loading import loading_latency
from cyclesim.checks.zigzag.mapping import MappingQuantities, mapping_quantities
from cyclesim.errors import SpecError


def evaluate(inputs: ZigZagInputs, *, cycles_per_op: float = 1.0) -> ZigZagLatency:
    """ZigZag 3.9.1's CostModelEvaluation for a fixed temporal mapping. Raise SpecError if there is none."""
    if inputs.temporal_mapping is None:
        raise SpecError(
            "ZigZag's latency model needs a fixed temporal mapping: give one (--temporal-mapping) "
            "or let the installed zigzag-dse choose it",
            file=inputs.mapping.file,
            field="temporal_ordering",
        )
    q = mapping_quantities(inputs)
    q_int = mapping_quantities(inputs, integer=True) if _fractional(inputs) else q
    double = double_buffer_flags(inputs, q)
    windows = {
        key: _allowed_and_real(inputs, q_int, double, key, cycles_per_op) for key in q_int.links
    }
    ports = port_stalls(inputs, q_int, windows, cycles_per_op)
    stall = max([0] + [p.stall_cycles for p in ports])
    loading = loading_latency(inputs, q_int, windows, stall, cycles_per_op)
    layer = inputs.layer
    ideal = ceil(ceil(layer.mac_count / inputs.accelerator.pe_count) * cycles_per_op)
    ideal_temporal = q.total_cycles * cycles_per_op
    # CostModelEvaluation.calc_overall_latency: the layer's spatial mapping in user form (whole
    # unrollings, e.g. C 2 x FX 3 x FY 3 = 18 on conv1's C 3 / FX 7 / FY 7), not the fractional
    # one (1.5 x 7/3 x 7/3 rounds up to 9): the last results cross every unit it unrolls
    drain = sum(
        max(prod(f for _, f in loops) - 1, 0)
        for dim, loops in inputs.mapping.spatial
        if dim in inputs.accelerator.systolic_dimensions
    )
    return ZigZagLatency(
        latency_total_cycles=ideal_temporal
        + stall
        + loading.onloading
        + loading.offloading
        + drain,
        ideal_cycles=ideal,
        ideal_temporal_cycles=ideal_temporal,
        temporal_stall_cycles=stall,
        onloading_cycles=loading.onloading,
        offloading_cycles=loading.offloading,
        systolic_drain_cycles=drain,
        borrowed_cycles=loading.borrowed,
        double_buffers=tuple(
            DoubleBuffer(op, memory.name, m, double[op][m + 1])
            for op in layer.operands
            for m, memory in enumerate(inputs.accelerator.levels(inputs.mapping.memory_operand(op)))
        ),
        port_stalls=ports,
        onloading_entries=loading.onloading_entries,
        offloading_entries=loading.offloading_entries,
        onloading_links=loading.onloading_links,
        offloading_links=loading.offloading_links,
        onloading_parts=loading.parts,
        word_accesses=word_accesses(inputs, q),
    )


def _fractional(inputs: ZigZagInputs) -> bool:
    """True if some spatial unrolling does not divide its loop (ZigZag's two mappings differ)."""
    layer = inputs.layer
    return any(layer.loop_size(d) % f for _, loops in inputs.mapping.spatial for d, f in loops)


def double_buffer_flags(inputs: ZigZagInputs, q: MappingQuantities) -> dict[str, list[bool]]:
    """calc_double_buffer_flag: per operand, [MAC level] + one flag per memory level (§3.4)."""
    layer, acc, mapping = inputs.layer, inputs.accelerator, inputs.mapping
    individual: dict[str, list[float]] = {}
    for op in layer.operands:
        memories = acc.levels(mapping.memory_operand(op))
        individual[op] = [
            q.effective_bits[op][m + 1] / memory.size_bits for m, memory in enumerate(memories)
        ]
    shared = {op: list(values) for op, values in individual.items()}
    groups = [memory for memory in acc.memories if len(memory.operands) > 1]
    for memory in groups:
        members = [(mapping.layer_operand(o), acc.level_of(memory, o)) for o in memory.operands]
        members = [(op, lv) for op, lv in members if op is not None]
        total = sum(individual[op][lv] for op, lv in members)
        for op, lv in members:
            shared[op][lv] = total
    flags: dict[str, list[bool]] = {}
    for op in layer.operands:
        mem_op = mapping.memory_operand(op)
        flags[op] = [False]
        for m, memory in enumerate(acc.levels(mem_op)):
            if shared[op][m] <= 0.5:
                flags[op].append(True)
            elif individual[op][m] <= 1 - shared[op][m]:
                flags[op].append(True)
                if len(memory.operands) > 1:
                    for other in memory.operands:
                        other_op = mapping.layer_operand(other)
                        if other_op is not None:
                            shared[other_op][acc.level_of(memory, other)] += individual[op][m]
            else:
                flags[op].append(False)
    return flags


def _allowed_and_real(
    inputs: ZigZagInputs,
    q: MappingQuantities,
    double: dict[str, list[bool]],
    key: tuple,
    cpo: float,
) -> tuple[int, int]:
    """(allowed, real) cycles per period of one transfer (§3.5)."""
    op, m, direction = key
    link = q.links[key]
    upward = direction in (DataDirection.READ_TO_ABOVE, DataDirection.WRITTEN_FROM_ABOVE)
    lower_double = double[op][m + 1] if upward else double[op][m]
    allowed = ceil((link.period_cycles if lower_double else link.instant_window_cycles) * cpo)
    mem_op = inputs.mapping.memory_operand(op)
    port = inputs.accelerator.levels(mem_op)[m].port_for(mem_op, direction)
    bandwidth = port.bandwidth_max_bits if port is not None else 0
    real = ceil(link.elements_per_period * link.precision_bits / bandwidth) if bandwidth else 0
    return allowed, real


def port_stalls(
    inputs: ZigZagInputs, q: MappingQuantities, windows: dict, cpo: float
) -> tuple[PortStall, ...]:
    """combine_data_transfer_rate_per_physical_port: SScomb per port with the MUW-union rule (§3.6)."""
    result = []
    for memory in inputs.accelerator.memories:
        for port in memory.used_ports:
            transfers = []
            for key in served_transfers(inputs, memory, port):
                link = q.links[key]
                if link.period_count == 0:
                    continue
                allowed, real = windows[key]
                transfers.append(
                    Transfer(
                        key[0],
                        memory.name,
                        key[1],
                        key[2],
                        real,
                        allowed,
                        ceil(link.period_cycles * cpo),
                        link.period_count,
                    )
                )
            if not transfers:
                continue
            if len(transfers) == 1:
                union, stall = transfers[0].allowed_cycles, transfers[0].stall_cycles
            else:
                union = window_union(transfers)
                positive = sum(t.stall_cycles for t in transfers if t.stall_cycles > 0)
                negative = sum(t.stall_cycles for t in transfers if t.stall_cycles <= 0)
                windows_sum = sum(t.updating_window_cycles for t in transfers)
                stall = positive + max(0, negative + windows_sum - union)
            result.append(PortStall(memory.name, port.name, tuple(transfers), union, stall))
    return tuple(result)


def window_union(transfers: list[Transfer]) -> int:
    """The MUW union: windows [kP, kP + allowed) aligned to period starts, over the largest period."""
    for t in transfers:
        if t.period_cycles == t.allowed_cycles:
            return t.period_cycles * t.period_count
    longest = transfers[0]
    for t in transfers:
        if t.period_cycles > longest.period_cycles:
            longest = t
    occupied = np.zeros(longest.period_cycles, dtype=bool)
    for t in transfers:
        occupied.reshape(-1, t.period_cycles)[:, : t.allowed_cycles] = True
    return int(occupied.sum()) * longest.period_count


def word_accesses(inputs: ZigZagInputs, q: MappingQuantities) -> tuple[WordAccess, ...]:
    """calc_memory_word_access: port-width words per operand, level and direction (§3.10)."""
    result = []
    for op in inputs.layer.operands:
        mem_op = inputs.mapping.memory_operand(op)
        for m, memory in enumerate(inputs.accelerator.levels(mem_op)):
            for direction in DIRECTIONS:
                link = q.links[(op, m, direction)]
                port = memory.port_for(mem_op, direction)
                if link.elements_per_period == 0 or link.precision_bits == 0:
                    words = 0
                elif port is None:
                    raise SpecError(
                        f"no port of memory '{memory.name}' serves '{mem_op.value}, {direction.code}' "
                        f"({direction.words}), but this mapping moves {op} that way",
                        file=inputs.accelerator.file,
                        field=f"memories.{memory.name}.ports",
                    )
                else:
                    bw_min, bw_max = port.bandwidth_min_bits, port.bandwidth_max_bits
                    words = int(
                        ceil(link.elements_per_period * link.precision_bits / bw_min)
                        * (bw_min / bw_max)
                        * link.period_count
                        * q.unit_count[op][m + 1]
                    )
                result.append(WordAccess(op, memory.name, m, direction, words))
    return tuple(result)
