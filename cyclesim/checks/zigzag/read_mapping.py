"""Read a ZigZag mapping entry and a fixed temporal mapping (tm_*_setting form), with their checks."""

from __future__ import annotations

from collections import defaultdict
from math import prod
from typing import Any

from cyclesim.checks.zigzag.inputs import (
    Loop,
    MemoryOperand,
    TemporalMapping,
    ZigZagAccelerator,
    ZigZagLayer,
    ZigZagMapping,
)
from cyclesim.checks.zigzag.reader import MAPPING_FIELDS, UNROLLING, Reader


def parse_mapping_entry(r: Reader, layer: ZigZagLayer, acc: ZigZagAccelerator) -> ZigZagMapping:
    """Choose the entry for the layer (name, operator type, 'default') and check it."""
    entries = r.listing(r.data, ())
    names = [e.get("name") if isinstance(e, dict) else None for e in entries]
    for wanted in (layer.name, layer.operator_type, "default"):
        if wanted in names:
            index = names.index(wanted)
            break
    else:
        r.fail(
            (),
            f"no mapping entry for layer '{layer.name}' ({layer.operator_type}) and no 'default' entry",
            found=names,
        )
    base = (index,)
    d = r.mapping(entries[index], base, MAPPING_FIELDS, {"name"})
    spatial = _parse_spatial(r, base + ("spatial_mapping",), d.get("spatial_mapping"), layer, acc)
    links = _parse_links(
        r, base + ("memory_operand_links",), d.get("memory_operand_links"), layer, acc
    )
    ordering = None
    if d.get("temporal_ordering"):
        loops = r.listing(d["temporal_ordering"], base + ("temporal_ordering",))
        # an entry over a dim the layer lacks is thrown out, as ZigZag does (LayerTemporalOrdering.
        # remove_invalid_layer_dims): gemm_l1's [D1, "*"] on a convolution
        ordering = tuple(
            _parse_ordering_loop(r, base + ("temporal_ordering", i), loop, layer)
            for i, loop in enumerate(loops)
            if not (isinstance(loop, list) and loop and _is_foreign_dim(loop[0], layer))
        )
    complete = {array_dim for array_dim, _ in spatial} == set(acc.array_dimensions)
    return ZigZagMapping(names[index], spatial, links, ordering, r.file, complete)


def _parse_spatial(
    r: Reader, path: tuple, data: Any, layer: ZigZagLayer, acc: ZigZagAccelerator
) -> tuple:
    """Read the spatial mapping as ZigZag reduces it (check_and_reduce): a dim the layer lacks is
    dropped, a factor above the loop size is cut to it. Array dimensions left out (a hint-only
    entry) are for ZigZag's search to fill; `spatial_complete` tells."""
    if data is None:
        return ()
    if not isinstance(data, dict):
        r.fail(
            path,
            "must map array dimensions to unrollings",
            found=data,
            expected=f"entries for {', '.join(acc.array_dimensions)}",
        )
    result = []
    for array_dim, loops in data.items():
        if array_dim not in acc.array_dimensions:
            r.fail(
                path + (array_dim,),
                "unknown array dimension",
                found=array_dim,
                expected=f"one of {', '.join(acc.array_dimensions)}",
            )
        unrolled: list[Loop] = []
        for i, text in enumerate(r.listing(loops, path + (array_dim,))):
            match = UNROLLING.match(text) if isinstance(text, str) else None
            if match is None:
                r.fail(
                    path + (array_dim, i),
                    "bad unrolling",
                    found=text,
                    expected="'<dim>, <factor>' such as 'K, 4'",
                )
            dim, factor = match.group(1).upper(), int(match.group(2))
            if factor < 1:
                r.fail(path + (array_dim, i), "the factor must be at least 1", found=text)
            if dim not in layer.loop_dims:
                continue  # ZigZag removes it (e.g. 'C, 1' of an Add layer)
            unrolled.append((dim, min(factor, layer.loop_size(dim), acc.array_size(array_dim))))
        size = acc.array_size(array_dim)
        if prod(f for _, f in unrolled) > size:
            r.fail(
                path + (array_dim,), f"unrolls more than the {size} PEs of {array_dim}", found=loops
            )
        result.append((array_dim, tuple(unrolled)))
    return tuple(result)


def _parse_links(
    r: Reader, path: tuple, data: Any, layer: ZigZagLayer, acc: ZigZagAccelerator
) -> tuple:
    """Check memory_operand_links: output -> O, inputs -> distinct I1/I2."""
    if data is None:
        data = {"O": "O", "I": "I1", "W": "I2"}  # ZigZag's default
    if not isinstance(data, dict):
        r.fail(path, "must be a mapping of layer operands to memory operands", found=data)
    links = []
    for layer_op in layer.operands:
        if layer_op not in data:
            r.fail(
                path,
                f"missing link for layer operand '{layer_op}'",
                expected=f"links for {', '.join(layer.operands)}",
            )
    for layer_op, mem_text in data.items():
        if layer_op not in layer.operands:
            r.fail(
                path + (layer_op,),
                f"unknown layer operand '{layer_op}'",
                expected=f"one of {', '.join(layer.operands)}",
            )
        if layer_op == layer.output_operand and mem_text != "O":
            r.fail(
                path + (layer_op,),
                "the output must be linked to memory operand O",
                found=mem_text,
                expected="O",
            )
        if layer_op != layer.output_operand and mem_text not in ("I1", "I2"):
            r.fail(
                path + (layer_op,),
                "an input must be linked to memory operand I1 or I2",
                found=mem_text,
                expected="I1 or I2",
            )
        links.append((layer_op, MemoryOperand(mem_text)))
    if len({m for _, m in links}) != len(links):
        r.fail(path, "two layer operands are linked to the same memory operand", found=data)
    return tuple(links)


def _is_foreign_dim(dim: Any, layer: ZigZagLayer) -> bool:
    """A named loop dim (not '*') the layer does not have."""
    return isinstance(dim, str) and dim != "*" and dim.upper() not in layer.loop_dims


def _parse_ordering_loop(
    r: Reader, path: tuple, loop: Any, layer: ZigZagLayer
) -> tuple[str, int | None]:
    """One [dim, factor] of temporal_ordering ('*' allowed for either)."""
    if not isinstance(loop, list) or len(loop) != 2:
        r.fail(path, "a loop is [dim, factor]", found=loop)
    dim, factor = str(loop[0]).upper(), loop[1]
    if dim != "*" and dim not in layer.loop_dims:
        r.fail(
            path,
            f"unknown dim '{loop[0]}'",
            found=loop,
            expected=f"one of {', '.join(layer.loop_dims)}",
        )
    if factor == "*":
        return dim, None
    return dim, r.integer(factor, path + (1,), 1)


def parse_temporal_levels(
    r: Reader, acc: ZigZagAccelerator, layer: ZigZagLayer, mapping: ZigZagMapping
) -> TemporalMapping:
    """Check a tm_*_setting mapping: one list per memory level, factors multiplying to the layer."""
    data = r.data
    if not isinstance(data, dict):
        r.fail(
            (),
            "a temporal mapping is a mapping of layer operands to per-level loop lists",
            found=type(data).__name__,
        )
    for key in data:
        if key not in layer.operands:
            r.fail(
                (key,),
                f"unknown layer operand '{key}'",
                expected=f"one of {', '.join(layer.operands)}",
            )
    levels = []
    for op in layer.operands:
        if op not in data:
            r.fail(
                (), f"missing layer operand '{op}'", expected=f"keys {', '.join(layer.operands)}"
            )
        memories = acc.levels(mapping.memory_operand(op))
        per_level = r.listing(data[op], (op,))
        if len(per_level) != len(memories):
            r.fail(
                (op,),
                f"needs one loop list per memory level of {op} ({', '.join(m.name for m in memories)})",
                found=len(per_level),
                expected=str(len(memories)),
            )
        parsed_levels = []
        for lv, loops in enumerate(per_level):
            parsed: list[Loop] = []
            for i, loop in enumerate(r.listing(loops, (op, lv))):
                path = (op, lv, i)
                if not isinstance(loop, list) or len(loop) != 2:
                    r.fail(path, "a loop is [dim, factor]", found=loop)
                dim = str(loop[0]).upper()
                if dim not in layer.loop_dims:
                    r.fail(
                        path,
                        f"unknown dim '{loop[0]}'",
                        found=loop,
                        expected=f"one of {', '.join(layer.loop_dims)}",
                    )
                parsed.append((dim, r.integer(loop[1], path + (1,), 1)))
            parsed_levels.append(tuple(parsed))
        _check_factors(r, op, parsed_levels, layer, mapping)
        levels.append((op, tuple(parsed_levels)))
    tm = TemporalMapping(tuple(levels), r.file)
    reference_op = layer.operands[0]
    reference = tm.flat_order(reference_op)
    for op in layer.operands[1:]:
        order = tm.flat_order(op)
        if order != reference:
            position = next(
                (i for i, (a, b) in enumerate(zip(order, reference, strict=False)) if a != b),
                min(len(order), len(reference)),
            )
            r.fail(
                (op,),
                f"the loops of {op}, read innermost first, differ from those of {reference_op} at position {position}: one loop nest is needed",
                found=list(order),
                expected=str(list(reference)),
            )
    return tm


def _check_factors(
    r: Reader, op: str, levels: list, layer: ZigZagLayer, mapping: ZigZagMapping
) -> None:
    """Temporal factors x spatial unrolling must equal each loop size."""
    totals: dict[str, int] = defaultdict(lambda: 1)
    for loops in levels:
        for dim, factor in loops:
            totals[dim] *= factor
    for dim, size in zip(layer.loop_dims, layer.loop_sizes, strict=True):
        spatial = mapping.spatial_unrolling(dim)
        if totals[dim] != mapping.temporal_size(layer, dim):
            r.fail(
                (op,),
                f"temporal factors of '{dim}' multiply to {totals[dim]}; with spatial unrolling "
                f"{spatial} the layer size {size} needs ceil({size} / {spatial})",
                found=totals[dim],
                expected=str(mapping.temporal_size(layer, dim)),
            )
