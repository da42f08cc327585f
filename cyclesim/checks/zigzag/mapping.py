"""ZigZag 3.9.1's mapping bookkeeping (mapping/*.py), reimplemented: tiles, periods and transfer links.

Pure functions from `inputs` to one frozen `MappingQuantities`. Names follow reference/
zigzag.md §3.2-3.3: `S` is the MAC-level stationary period, `C` the cycles per level, `D` the
elements held by one instance of an arch level (index 0 = MAC array, a = memory level + 1).
Float arithmetic is kept where ZigZag uses floats so that rounding matches it bit for bit.
"""

from __future__ import annotations

from math import prod

from cyclesim.checks.zigzag.inputs import (
    Loop,
    TemporalMapping,
    ZigZagAccelerator,
    ZigZagInputs,
    ZigZagLayer,
)
from cyclesim.checks.zigzag.links import link_traffic
from cyclesim.checks.zigzag.quantities import (
    Levels,
    MappingQuantities,
    Relevancy,
    relation_extent,
    relevancy_of,
)


def decouple_pr_loops(levels: Levels, op: str, layer: ZigZagLayer, rel: Relevancy) -> Levels:
    """mapping_assist_funcs.decouple_pr_loop: each pr loop becomes a '<T>_R' size and a '<T>_IR' reuse."""
    if not rel.partially_relevant[op]:
        return [list(level) for level in levels]
    r_ir = set(rel.relevant[op]) | set(rel.irrelevant[op])
    owner = {d: x.target for x in layer.relations for d in (x.first_dim, x.second_dim)}
    cabl = {x.target: {x.first_dim: 1, x.second_dim: 1} for x in layer.relations}
    per_size: dict[str, list[list[float]]] = {t: [[] for _ in levels] for t in cabl}
    per_reuse: dict[str, list[list[float]]] = {t: [[] for _ in levels] for t in cabl}
    previous = {t: (1, 1) for t in cabl}
    for lv, loops in enumerate(levels):
        for dim, factor in loops:
            if dim in r_ir or dim not in owner:
                continue
            t = owner[dim]
            cabl[t][dim] *= factor
            rel_dims = next(x for x in layer.relations if x.target == t)
            to_r = relation_extent(
                layer, t, cabl[t][rel_dims.first_dim], cabl[t][rel_dims.second_dim]
            )
            to_ir = prod(cabl[t].values()) / to_r
            prev_size, prev_reuse = previous[t]
            per_size[t][lv].append(to_r / prev_size)
            per_reuse[t][lv].append(to_ir / prev_reuse)
            previous[t] = (to_r, to_ir)
    result: Levels = []
    for lv, loops in enumerate(levels):
        new = list(loops)
        local = {t: 0 for t in cabl}
        shift = 0
        for idx, (dim, _) in enumerate(loops):
            if dim in r_ir or dim not in owner:
                continue
            t = owner[dim]
            new[idx + shift] = (f"{t}_R", per_size[t][lv][local[t]])
            new.insert(idx + shift + 1, (f"{t}_IR", per_reuse[t][lv][local[t]]))
            local[t] += 1
            shift += 1
        result.append(new)
    return result


def merge_down(tm: TemporalMapping, layer: ZigZagLayer, rel: Relevancy) -> tuple[dict, dict]:
    """TemporalMapping.innermost_stationary_loop_merge_down: bottom ir loops sink one level, to a fixpoint."""
    stationary, mac = {}, {}
    for op in layer.operands:
        previous = [list(level) for level in tm.of(op)]
        while True:
            current = [list(level) for level in previous]
            merged: list[list[Loop]] = [[] for _ in previous]
            mac_cycles = 1
            for lv, loops in enumerate(previous):
                for loop in loops:
                    if loop[0] in rel.irrelevant[op]:
                        if lv == 0:
                            mac_cycles *= loop[1]
                            merged[0].append(loop)
                        else:
                            merged[lv - 1].append(loop)
                        current[lv].remove(loop)
                    else:
                        merged[lv].extend(current[lv])
                        break
            if merged == previous:
                break
            previous = merged
        stationary[op], mac[op] = merged, mac_cycles
    return stationary, mac


def _top_loops(levels: list[list[Loop]], dims: tuple[str, ...]) -> list[int]:
    """Product of the contiguous loops at the top of each level whose dim is in `dims` (arch-indexed)."""
    result = [1] * (len(levels) + 1)
    for lv, loops in enumerate(levels):
        for dim, factor in reversed(loops):
            if dim not in dims:
                break
            result[lv + 1] *= factor
    return result


def spatial_per_level(
    acc: ZigZagAccelerator, inputs: ZigZagInputs, op: str, integer: bool = False
) -> Levels:
    """SpatialMappingConversionStage.generate_mapping_per_mem_lvl: unrollings each memory level fans
    out; fractional (ZigZag's `mapping`) or as unrolled on the array (`mapping_int`)."""
    spatial = inputs.mapping.fractional_spatial(inputs.layer)
    if integer:  # ZigZag's mapping_int truncates: K 1000 over 32 PEs is 31.25 -> 31
        spatial = tuple((a, tuple((d, int(f)) for d, f in loops)) for a, loops in spatial)
    remaining = list(spatial)
    levels: Levels = []
    for memory in acc.levels(inputs.mapping.memory_operand(op)):
        level: dict[str, float] = {}
        for _array_dim, loops in [x for x in remaining if x[0] in memory.served_dimensions]:
            for dim, factor in loops:
                level[dim] = level.get(dim, 1) * factor
        remaining = [x for x in remaining if x[0] not in memory.served_dimensions]
        levels.append(list(level.items()))
    top: dict[str, float] = {}
    for _, loops in remaining:
        for dim, factor in loops:
            top[dim] = top.get(dim, 1) * factor
    levels.append(list(top.items()))
    return levels


def _products(levels: Levels, dims: tuple[str, ...]) -> list[float]:
    """Per level, the product of the loop sizes whose dim is in `dims`."""
    return [prod(f for d, f in level if d in dims) for level in levels]


def mapping_quantities(inputs: ZigZagInputs, *, integer: bool = False) -> MappingQuantities:
    """Mapping(...) of ZigZag: all per-operand, per-level quantities the latency model reads.

    ZigZag builds two: `mapping` on the fractional spatial unrolling (double buffering, word
    counts) and `mapping_int` on that unrolling truncated to an integer (transfer windows,
    loading); they differ only where an unrolling does not divide its loop (`integer` picks
    the second).
    """
    layer, acc, tm = inputs.layer, inputs.accelerator, inputs.temporal_mapping
    assert tm is not None
    rel = relevancy_of(layer)
    stationary, mac = merge_down(tm, layer, rel)
    cycles = {
        op: [prod(f for lv in levels[: i + 1] for _, f in lv) for i in range(len(levels))]
        for op, levels in stationary.items()
    }
    total = cycles[layer.operands[0]][-1]
    top_r = {op: _top_loops(stationary[op], rel.relevant[op]) for op in layer.operands}
    top_ir = {op: _top_loops(stationary[op], rel.irrelevant[op]) for op in layer.operands}
    unit_count, boost, unique = {}, {}, {}
    one_s_one_t, one_s_two_t = {}, {}
    for op in layer.operands:
        su = spatial_per_level(acc, inputs, op, integer)
        arch = len(su)
        su_dec = decouple_pr_loops(su, op, layer, rel)
        total_u = [prod(f for _, f in level) for level in su_dec]
        r_u = _products(su_dec, rel.relevant_decoupled[op])
        unit_count[op] = [round(round(prod(total_u[lv:]), 3)) for lv in range(arch)]
        unique[op] = [prod(r_u[lv:]) for lv in range(arch)]
        boost[op] = [round(unique[op][lv] / unique[op][lv + 1]) for lv in range(arch - 1)]
        seed = [[]] + [list(level) for level in stationary[op]] + [[]]
        one_s_one_t[op] = decouple_pr_loops(
            [seed[lv] + su[lv] for lv in range(arch)], op, layer, rel
        )
        one_s_two_t[op] = decouple_pr_loops(
            [[]] + [seed[lv + 1] + su[lv] for lv in range(arch)], op, layer, rel
        )
    out = layer.output_operand
    ir_flags = [
        any(d in rel.irrelevant_decoupled[out] and f > 1 for d, f in level)
        for level in one_s_one_t[out]
    ]
    psum = [any(ir_flags[lv:]) for lv in range(len(ir_flags))][1:] + [False]
    precision = {op: [layer.precision(op)] * len(one_s_one_t[op]) for op in layer.input_operands}
    precision[out] = [
        layer.precision(out) if flag else layer.final_output_precision_bits for flag in psum
    ]
    elements, bits, effective = {}, {}, {}
    for op in layer.operands:
        arch = len(one_s_one_t[op])
        r2 = _products(one_s_two_t[op], rel.relevant_decoupled[op])
        cabl2 = [round(prod(r2[: lv + 1])) for lv in range(arch)]
        elements[op] = [round(x) for x in cabl2]
        bits[op] = [round(x) * precision[op][lv] for lv, x in enumerate(cabl2)]
        effective[op] = [b // top_r[op][lv] for lv, b in enumerate(bits[op])]
    quantities = MappingQuantities(
        relevancy=rel,
        stationary=stationary,
        mac_stationary_cycles=mac,
        cycles_per_level=cycles,
        total_cycles=total,
        top_relevant=top_r,
        top_irrelevant=top_ir,
        unit_count=unit_count,
        bandwidth_boost=boost,
        elements_per_instance=elements,
        bits_per_instance=bits,
        effective_bits=effective,
        partial_sum_levels=psum,
        links={},
    )
    links = link_traffic(inputs, quantities, one_s_one_t, one_s_two_t, precision)
    return MappingQuantities(
        **{**{f: getattr(quantities, f) for f in MappingQuantities.__slots__}, "links": links}
    )
