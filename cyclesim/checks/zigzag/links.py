"""ZigZag's periodic transfer of each (operand, memory level, direction): Mapping.calc_data_access and
calc_req_mem_bw_and_data_transfer_rate, reimplemented (docs/reference/zigzag.md §3.3)."""

from __future__ import annotations

from math import prod
from typing import TYPE_CHECKING

from cyclesim.checks.zigzag.inputs import DataDirection
from cyclesim.checks.zigzag.quantities import Levels, LinkTraffic, relation_extent

if TYPE_CHECKING:
    from cyclesim.checks.zigzag.inputs import ZigZagInputs
    from cyclesim.checks.zigzag.quantities import MappingQuantities

_NONE = LinkTraffic(0, 0, 0, 0, 0, 0)


def _output_size_elements(inputs: ZigZagInputs, q: MappingQuantities) -> int:
    """LayerNode.operand_size_elem of the output."""
    layer = inputs.layer
    out = layer.output_operand
    size = prod(layer.loop_size(d) for d in q.relevancy.relevant[out])
    if q.relevancy.partially_relevant[out]:
        for rel in layer.relations:
            size *= relation_extent(
                layer, rel.target, layer.loop_size(rel.first_dim), layer.loop_size(rel.second_dim)
            )
    return size


def link_traffic(
    inputs: ZigZagInputs,
    q: MappingQuantities,
    one_s_one_t: dict[str, Levels],
    one_s_two_t: dict[str, Levels],
    precision: dict[str, list[int]],
) -> dict[tuple[str, int, DataDirection], LinkTraffic]:
    """Per (operand, memory level, direction): precision, amount, period, count, bandwidth, window."""
    layer = inputs.layer
    total = q.total_cycles
    out = layer.output_operand
    cyc = {
        op: [q.mac_stationary_cycles[op]] + q.cycles_per_level[op] for op in layer.input_operands
    }
    cyc[out] = [1] + q.cycles_per_level[out]
    links: dict[tuple[str, int, DataDirection], LinkTraffic] = {}
    for op in layer.operands:
        arch = len(one_s_one_t[op])
        levels = arch - 1
        elements = q.elements_per_instance[op]
        boost = q.bandwidth_boost[op] + [1]
        low = [elements[lv] * precision[op][lv] / cyc[op][lv] for lv in range(arch)]
        high = [low[lv] * boost[lv] for lv in range(arch)]
        top_ir = q.top_irrelevant[op]
        for m in range(levels):
            below = dict(
                bw=int(high[m]),
                period=int(cyc[op][m]),
                count=int(total // cyc[op][m]),
                amount=elements[m] * boost[m],
            )
            above = dict(
                bw=int(low[m + 1]),
                period=int(cyc[op][m + 1]),
                count=int(total // cyc[op][m + 1]),
                amount=elements[m + 1],
            )
            if op == out:
                below["amount"] = int(below["amount"])
                entries = _output_entries(inputs, q, one_s_one_t, m, below, above)
            else:
                prec = layer.precision(op)
                entries = {
                    DataDirection.READ_TO_BELOW: (prec, below),
                    DataDirection.WRITTEN_FROM_ABOVE: (prec, above),
                }
            curr, nxt = int(top_ir[m]), int(top_ir[m + 1])
            for direction in (
                DataDirection.READ_TO_ABOVE,
                DataDirection.WRITTEN_FROM_ABOVE,
                DataDirection.READ_TO_BELOW,
                DataDirection.WRITTEN_FROM_BELOW,
            ):
                prec, values = entries.get(direction, (0, None))
                if values is None or (
                    m == levels - 1
                    and direction in (DataDirection.READ_TO_ABOVE, DataDirection.WRITTEN_FROM_ABOVE)
                ):
                    links[(op, m, direction)] = _NONE  # also: nothing moves beyond the top level
                    continue
                factor = (
                    nxt
                    if direction in (DataDirection.READ_TO_ABOVE, DataDirection.WRITTEN_FROM_ABOVE)
                    else curr
                )
                links[(op, m, direction)] = LinkTraffic(
                    precision_bits=prec,
                    elements_per_period=values["amount"],
                    period_cycles=values["period"],
                    period_count=values["count"],
                    required_bandwidth_bits_per_cycle=values["bw"],
                    instant_window_cycles=int(values["period"] / factor),
                )
    return links


def _output_entries(
    inputs: ZigZagInputs,
    q: MappingQuantities,
    one_s_one_t: dict[str, Levels],
    m: int,
    below: dict,
    above: dict,
) -> dict:
    """The output's four directions at memory level m; partial sums travel down only while reductions remain."""
    layer = inputs.layer
    out = layer.output_operand
    ir_per_level = [
        prod(f for d, f in level if d in q.relevancy.irrelevant_decoupled[out])
        for level in one_s_one_t[out]
    ]
    arch = len(ir_per_level)
    caal = [prod(ir_per_level[lv:arch]) for lv in range(arch)] + [1, 1]
    size = _output_size_elements(inputs, q)
    psum_down = int(size * (caal[m + 1] - 1)) != 0  # rd_out_to_low count
    psum_up = int(size * (caal[m + 2] - 1)) != 0  # wr_in_by_high count
    partial, final = layer.precision(out), layer.final_output_precision_bits
    flags = q.partial_sum_levels
    entries = {
        DataDirection.WRITTEN_FROM_BELOW: (partial if psum_down else final, below),
        DataDirection.READ_TO_ABOVE: (partial if psum_up else final, above),
    }
    if flags[m]:
        entries[DataDirection.READ_TO_BELOW] = (partial if psum_down else 0, below)
    if flags[m + 1]:
        entries[DataDirection.WRITTEN_FROM_ABOVE] = (partial if psum_up else 0, above)
    return entries
