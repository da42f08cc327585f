"""Read one layer of a ZigZag 3.x workload YAML (equation, loop dims, relations, precisions)."""

from __future__ import annotations

import difflib
import re
from collections import Counter
from typing import Any

from cyclesim.checks.zigzag.inputs import DimensionRelation, ZigZagLayer
from cyclesim.checks.zigzag.reader import EQUATION, LAYER_FIELDS, RELATION, Reader


def layers_found(names: list[str], wanted: str) -> tuple[str, str]:
    """For the error naming a layer a workload lacks: ('; did you mean X?' or '', every name).
    A user picks --layer from this list; eight names and '...' hid resnet18's later layers."""
    near = difflib.get_close_matches(wanted, names, n=1)
    hint = f"; did you mean {near[0]!r}?" if near else ""
    return hint, f"{len(names)} layers: {', '.join(names)}"


def parse_layer(r: Reader, layer_name: str | None) -> ZigZagLayer:
    """Read one layer of a ZigZag 3.x workload YAML (the only one, or the one named).

    Over 80 lines: a layer's fields read in the file's order, each refusal naming the file,
    field and line.
    """
    layers = r.listing(r.data, ())
    if not layers:
        r.fail((), "the workload has no layers")
    names = [layer_name_of(entry) for entry in layers]
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
        LAYER_FIELDS,
        {"id", "operator_type", "equation", "loop_dims", "loop_sizes", "operand_precision"},
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
    match = EQUATION.match(eq_text)
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
    # an input of 0 bits is one ZigZag moves nothing of: a pooling layer's constant W
    precision = tuple(
        (op, r.integer(prec[op], base + ("operand_precision", op), 0 if op != operands[0] else 1))
        for op in operands
    )
    if d.get("operand_source") is not None:  # which layer feeds an input: inputs only, by id
        sources = r.mapping(
            d["operand_source"], base + ("operand_source",), set(operands[1:]), set()
        )
        for op, source in sources.items():
            r.integer(source, base + ("operand_source", op), 0)
    targets = {rel.target for rel in relations}
    padding = _parse_padding(r, base, d, targets)
    extents = _parse_extents(r, base, d, targets)
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
        padding=padding,
        input_extents=extents,
    )


def layer_name_of(entry: Any) -> str | None:
    """A workload entry's name as ZigZag gives it: its `name`, else `Layer{id}`."""
    if not isinstance(entry, dict):
        return None
    if entry.get("name"):
        return str(entry["name"])
    return f"Layer{entry['id']}" if "id" in entry else None


def layer_names(r: Reader) -> list[str]:
    """Every layer's name, in file order (ZigZag's `Layer{id}` for unnamed ones)."""
    layers = r.listing(r.data, ())
    return [layer_name_of(entry) or f"#{i}" for i, entry in enumerate(layers)]


def _pr_dims(r: Reader, base: tuple, d: dict, targets: set[str]) -> list[str]:
    """`pr_loop_dims`: relation targets that padding and pr_loop_sizes refer to, in order."""
    dims = r.listing(d.get("pr_loop_dims"), base + ("pr_loop_dims",))
    names = []
    for i, dim in enumerate(dims):
        name = r.string(dim, base + ("pr_loop_dims", i)).upper()
        if name not in targets:
            r.fail(
                base + ("pr_loop_dims", i),
                "must be a dimension_relations target",
                found=dim,
                expected=", ".join(sorted(targets)) or "a relation target",
            )
        names.append(name)
    return names


def _parse_extents(r: Reader, base: tuple, d: dict, targets: set[str]) -> tuple:
    """`pr_loop_sizes: [224, 224]`: the input's extent per pr_loop_dims entry (ONNX gives it)."""
    if d.get("pr_loop_sizes") is None:
        return ()
    dims = _pr_dims(r, base, d, targets)
    sizes = r.listing(d["pr_loop_sizes"], base + ("pr_loop_sizes",))
    if len(sizes) != len(dims):
        r.fail(
            base + ("pr_loop_sizes",),
            "needs one size per entry of pr_loop_dims",
            found=len(sizes),
            expected=str(len(dims)),
        )
    return tuple(
        (dim, r.integer(size, base + ("pr_loop_sizes", i), 1))
        for i, (dim, size) in enumerate(zip(dims, sizes, strict=True))
    )


def _parse_padding(r: Reader, base: tuple, d: dict, targets: set[str]) -> tuple:
    """`pr_loop_dims: [IX, IY]` with `padding: [[before, after], ...]`, one pair per dim."""
    if d.get("padding") is None:
        return ()
    dims = _pr_dims(r, base, d, targets)
    pads = r.listing(d["padding"], base + ("padding",))
    if len(dims) != len(pads):
        r.fail(
            base + ("padding",),
            "needs one [before, after] pair per entry of pr_loop_dims",
            found=len(pads),
            expected=str(len(dims)),
        )
    result = []
    for i, (name, pad) in enumerate(zip(dims, pads, strict=True)):
        pair = r.listing(pad, base + ("padding", i))
        if len(pair) != 2:
            r.fail(base + ("padding", i), "must be [before, after]", found=pad)
        before = r.integer(pair[0], base + ("padding", i, 0), 0)
        after = r.integer(pair[1], base + ("padding", i, 1), 0)
        result.append((name, before, after))
    return tuple(result)


def _parse_relation(
    r: Reader, path: tuple, text: Any, loop_dims: tuple[str, ...]
) -> DimensionRelation:
    """Read 'ix=2*ox+1*fx'."""
    match = RELATION.match(text) if isinstance(text, str) else None
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
