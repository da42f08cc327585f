"""Read one layer of a ZigZag 3.x workload YAML (equation, loop dims, relations, precisions)."""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING, Any

from cyclesim.checks.zigzag_inputs import DimensionRelation, ZigZagLayer
from cyclesim.checks.zigzag_parse import _EQUATION, _LAYER_FIELDS, _RELATION

if TYPE_CHECKING:
    from cyclesim.checks.zigzag_parse import _Reader


def parse_layer(r: _Reader, layer_name: str | None) -> ZigZagLayer:
    """Read one layer of a ZigZag 3.x workload YAML (the only one, or the one named)."""
    layers = r.listing(r.data, ())
    if not layers:
        r.fail((), "the workload has no layers")
    names = [(entry.get("name") if isinstance(entry, dict) else None) for entry in layers]
    if layer_name is None:
        if len(layers) > 1:
            r.fail((), "the workload has several layers; name one (--layer)", found=names)
        index = 0
    elif layer_name in names:
        index = names.index(layer_name)
    else:
        r.fail((), f"no layer named '{layer_name}'", found=names)
    base = (index,)
    d = r.mapping(
        layers[index],
        base,
        _LAYER_FIELDS,
        {"id", "operator_type", "equation", "loop_dims", "loop_sizes", "operand_precision"},
    )
    for key in ("padding", "pr_loop_sizes", "pr_loop_dims"):
        if d.get(key) is not None:
            r.fail(
                base + (key,),
                f"'{key}' (padding of convolution windows) cannot be replayed",
                found=d[key],
                expected="no padding",
            )
    layer_id = r.integer(d["id"], base + ("id",))
    loop_dims = tuple(
        r.string(x, base + ("loop_dims", i)).upper()
        for i, x in enumerate(r.listing(d["loop_dims"], base + ("loop_dims",)))
    )
    loop_sizes = tuple(
        r.integer(x, base + ("loop_sizes", i), 1)
        for i, x in enumerate(r.listing(d["loop_sizes"], base + ("loop_sizes",)))
    )
    if len(loop_sizes) != len(loop_dims):
        r.fail(
            base + ("loop_sizes",),
            "needs one size per loop dim",
            found=len(loop_sizes),
            expected=str(len(loop_dims)),
        )
    for dim, count in Counter(loop_dims).items():
        if count > 1:
            r.fail(base + ("loop_dims",), "duplicate loop dim", found=dim)
    relations = tuple(
        _parse_relation(r, base + ("dimension_relations", i), text, loop_dims)
        for i, text in enumerate(
            r.listing(d.get("dimension_relations") or [], base + ("dimension_relations",))
        )
    )
    used = Counter(dim for rel in relations for dim in (rel.first_dim, rel.second_dim))
    for dim, count in used.items():
        if count > 1:
            r.fail(
                base + ("dimension_relations",),
                f"loop dim '{dim}' appears in two relations",
                found=dim,
            )
    eq_text = r.string(d["equation"], base + ("equation",))
    match = _EQUATION.match(eq_text)
    if match is None:
        r.fail(
            base + ("equation",),
            "cannot read the equation",
            found=eq_text,
            expected="e.g. O[b][k]+=W[k][c]*I[c][b]",
        )
    operands = (match.group(1), match.group(3), match.group(5))
    if len(set(operands)) != 3:
        r.fail(base + ("equation",), "the three operands need distinct names", found=eq_text)
    known = set(loop_dims) | {rel.target for rel in relations}
    operand_dims = []
    for op, index_text in zip(
        operands, (match.group(2), match.group(4), match.group(6)), strict=True
    ):
        op_dims = tuple(x.upper() for x in re.findall(r"\[(\w*)\]", index_text) if x)
        for dim in op_dims:
            if dim not in known:
                r.fail(
                    base + ("equation",),
                    f"unknown dim '{dim}' of operand {op}",
                    found=eq_text,
                    expected=f"loop dims {', '.join(loop_dims)} or relation targets",
                )
        operand_dims.append(op_dims)
    prec = r.mapping(
        d["operand_precision"],
        base + ("operand_precision",),
        set(operands) | {"O_final"},
        set(operands) | {"O_final"},
    )
    precision = tuple(
        (op, r.integer(prec[op], base + ("operand_precision", op), 1)) for op in operands
    )
    return ZigZagLayer(
        name=str(d.get("name") or f"Layer{layer_id}"),
        layer_id=layer_id,
        operator_type=r.string(d["operator_type"], base + ("operator_type",)),
        equation=eq_text,
        operands=operands,
        operand_dims=tuple(operand_dims),
        loop_dims=loop_dims,
        loop_sizes=loop_sizes,
        relations=relations,
        precision_bits=precision,
        final_output_precision_bits=r.integer(
            prec["O_final"], base + ("operand_precision", "O_final"), 1
        ),
        file=r.file,
    )


def _parse_relation(
    r: _Reader, path: tuple, text: Any, loop_dims: tuple[str, ...]
) -> DimensionRelation:
    """Read 'ix=2*ox+1*fx'."""
    match = _RELATION.match(text) if isinstance(text, str) else None
    if match is None:
        r.fail(path, "cannot read the dimension relation", found=text, expected="e.g. ix=2*ox+1*fx")
    target, c1, d1, c2, d2 = match.groups()
    for dim in (d1, d2):
        if dim.upper() not in loop_dims:
            r.fail(
                path,
                f"unknown loop dim '{dim}' in relation",
                found=text,
                expected=f"one of {', '.join(loop_dims)}",
            )
    if target.upper() in loop_dims:
        r.fail(path, f"'{target}' is a loop dim; a relation defines an operand index", found=text)
    return DimensionRelation(target.upper(), d1.upper(), int(c1 or 1), d2.upper(), int(c2 or 1))
