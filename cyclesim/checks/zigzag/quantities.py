"""The quantities ZigZag 3.9.1 derives from a mapping, as frozen dataclasses, and loop relevancy.

`mapping.mapping_quantities` computes them; `links` adds the periodic transfer of each link.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd

from cyclesim.checks.zigzag.inputs import DataDirection, Loop, ZigZagLayer

Levels = list[list[tuple[str, float]]]


@dataclass(frozen=True, slots=True)
class Relevancy:
    """Which loop dims index an operand (r), do not (ir), or enter through a relation (pr)."""

    relevant: dict[str, tuple[str, ...]]
    irrelevant: dict[str, tuple[str, ...]]
    partially_relevant: dict[str, bool]
    relevant_decoupled: dict[str, tuple[str, ...]]  # pr loops split into '<target>_R' parts
    irrelevant_decoupled: dict[str, tuple[str, ...]]  # ... and '<target>_IR' parts


@dataclass(frozen=True, slots=True)
class LinkTraffic:
    """One periodic transfer (operand, memory level, direction), per unit memory (ZigZag's umdm)."""

    precision_bits: int
    elements_per_period: float
    period_cycles: int
    period_count: int
    required_bandwidth_bits_per_cycle: int
    instant_window_cycles: int


@dataclass(frozen=True, slots=True)
class MappingQuantities:
    """Everything the latency model reads from the mapping, per operand (lists are arch-indexed)."""

    relevancy: Relevancy
    stationary: dict[str, list[list[Loop]]]  # temporal loops after the stationary merge-down
    mac_stationary_cycles: dict[str, int]  # S[op]
    cycles_per_level: dict[str, list[int]]  # C[op][m]
    total_cycles: int  # T
    top_relevant: dict[str, list[int]]  # topR, arch-indexed
    top_irrelevant: dict[str, list[int]]  # topIR, arch-indexed
    unit_count: dict[str, list[int]]
    bandwidth_boost: dict[str, list[int]]
    elements_per_instance: dict[str, list[int]]  # D
    bits_per_instance: dict[str, list[int]]  # D x precision
    effective_bits: dict[str, list[int]]  # D bits // topR
    partial_sum_levels: list[bool]  # psum_flag, arch-indexed, output only
    links: dict[tuple[str, int, DataDirection], LinkTraffic]


def relevancy_of(layer: ZigZagLayer) -> Relevancy:
    """LoopRelevancyInfo.extract_relevancy_info and its pr-decoupled version."""
    targets = {rel.target: rel for rel in layer.relations}
    pr_dims = set(targets) | {d for rel in layer.relations for d in (rel.first_dim, rel.second_dim)}
    size = dict(zip(layer.loop_dims, layer.loop_sizes, strict=True))
    r, ir, pr = {}, {}, {}
    for op in layer.operands:
        r_list = layer.dims_of(op)
        ir_list = [d for d in layer.loop_dims if d not in r_list]
        if any(d in targets for d in r_list):
            r[op] = tuple(d for d in r_list if d not in pr_dims)
            ir[op] = tuple(d for d in ir_list if d not in pr_dims and size[d] != 1)
            pr[op] = True
        else:
            r[op] = tuple(d for d in r_list if size[d] != 1)
            ir[op] = tuple(d for d in ir_list if size[d] != 1)
            pr[op] = False
    r_dec = {op: r[op] + tuple(f"{t}_R" for t in targets) for op in layer.operands}
    ir_dec = {op: ir[op] + tuple(f"{t}_IR" for t in targets) for op in layer.operands}
    return Relevancy(r, ir, pr, r_dec, ir_dec)


def relation_extent(layer: ZigZagLayer, target: str, first: float, second: float) -> int:
    """LayerNode.calc_tensor_dim for a relation target, clipped to the layer's extent."""
    rel = next(rel for rel in layer.relations if rel.target == target)

    def extent(a: int, b: int) -> int:
        g = gcd(rel.first_coefficient, rel.second_coefficient)
        return a * b - max(0, b - rel.first_coefficient // g) * (a - rel.second_coefficient // g)

    total = extent(layer.loop_size(rel.first_dim), layer.loop_size(rel.second_dim))
    total = layer.extent_limit(target, total)
    return min(total, extent(int(first), int(second)))
