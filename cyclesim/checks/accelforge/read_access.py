"""Read an Einsum's tensor accesses: each tensor's projection (a list of rank variables, or an
affine expression per rank such as `2*p + r`), output flag and bits per value; and the Einsum
string shorthand `Z[m, n] = A[m, k] * B[k, n]`."""

from __future__ import annotations

import ast
import re
from typing import Any

from cyclesim.checks.accelforge.read_fields import (
    Where,
    checked_mapping,
    field_number,
    refuse_unless_default,
    require_mapping,
)
from cyclesim.checks.accelforge.spec import (
    AfProjectionTerm,
    AfRankProjection,
)
from cyclesim.spec.limits import MAX_VALUE_BITS

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_EINSUM_STRING = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\[([^\]]*)\]")


def parse_einsum_string(text: str, where: Where) -> dict[str, Any]:
    """`[name:] Z[m, n] = A[m, k] * B[k, n]` as an Einsum's `name` and `tensor_accesses`
    (the output last). Raise SpecError if it has no `=`, not one output, or no input."""
    name_part, _, body = text.partition(":") if ":" in text.split("=")[0] else ("", "", text)
    lhs, equals, rhs = body.partition("=")
    outputs, inputs = _EINSUM_STRING.findall(lhs), _EINSUM_STRING.findall(rhs)
    if not equals or len(outputs) != 1 or not inputs:
        raise where.error(
            "cannot read the Einsum string", found=text, expected="'Z[m, n] = A[m, k] * B[k, n]'"
        )
    accesses = [
        {"name": n, "projection": [x.strip() for x in idx.split(",") if x.strip()]}
        for n, idx in inputs
    ]
    out_name, out_idx = outputs[0]
    accesses.append(
        {
            "name": out_name,
            "projection": [x.strip() for x in out_idx.split(",") if x.strip()],
            "output": True,
        }
    )
    return {"name": name_part.strip() or out_name, "tensor_accesses": accesses}


def read_access(raw: Any, where: Where) -> dict[str, Any]:
    """One tensor access: `tensor`, its `ranks` (affine projections), `is_output` and
    `bits_per_value` (None when the workload's bits_per_value gives it). Raise SpecError for a
    fault or an unsupported feature (persistent tensors, a backing-storage scale)."""
    fields = checked_mapping(
        raw,
        where,
        "a tensor access",
        required=("name", "projection"),
        allowed=("output", "persistent", "bits_per_value", "backing_storage_size_scale"),
    )
    refuse_unless_default(fields, "persistent", (False,), where, "persistent tensors")
    refuse_unless_default(
        fields, "backing_storage_size_scale", (1, 1.0), where, "backing_storage_size_scale"
    )
    projection = fields["projection"]
    if isinstance(projection, list):
        for variable in projection:
            if (
                not isinstance(variable, str)
                or not _IDENTIFIER.match(variable)
                or variable[0].isupper()
            ):
                raise where.child("projection").error(
                    "a projection list holds lower-case rank variables",
                    found=variable,
                    expected="[m, k] (use a mapping {H: p + r} for expressions)",
                )
        projection = {variable.upper(): variable for variable in projection}
    projection_where = where.child("projection", projection)
    projection = require_mapping(projection, projection_where, "projection")
    ranks = tuple(
        _affine(str(rank), str(expr), projection_where.child(str(rank)))
        for rank, expr in projection.items()
    )
    bits = fields.get("bits_per_value")
    if not isinstance(fields.get("output", False), bool):
        raise where.child("output").error("expected true or false", found=fields["output"])
    if bits is not None:
        bits = field_number(fields, "bits_per_value", {}, where)
        if not isinstance(bits, int) or not 0 < bits <= MAX_VALUE_BITS:
            raise where.child("bits_per_value").error(
                "bits_per_value out of range", found=bits, expected=f"1 to {MAX_VALUE_BITS}"
            )
    return {
        "tensor": str(fields["name"]),
        "ranks": ranks,
        "is_output": fields.get("output", False),
        "bits_per_value": bits,
    }


def _affine(rank: str, expression: str, where: Where) -> AfRankProjection:
    terms: dict[str, int] = {}
    constant = 0

    def walk(node: ast.AST, sign: int) -> None:
        nonlocal constant
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            walk(node.left, sign)
            walk(node.right, sign)
        elif isinstance(node, ast.Name):
            terms[node.id] = terms.get(node.id, 0) + sign
        elif isinstance(node, ast.Constant) and isinstance(node.value, int):
            constant += sign * node.value
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            pair = (
                (node.left, node.right)
                if isinstance(node.left, ast.Constant)
                else (node.right, node.left)
            )
            if (
                isinstance(pair[0], ast.Constant)
                and isinstance(pair[0].value, int)
                and isinstance(pair[1], ast.Name)
            ):
                terms[pair[1].id] = terms.get(pair[1].id, 0) + sign * pair[0].value
            else:
                raise ValueError
        else:
            raise ValueError

    try:
        walk(ast.parse(expression, mode="eval").body, 1)
    except (SyntaxError, ValueError):
        raise where.error(
            f"unsupported projection for rank {rank}",
            found=expression,
            expected="a sum of rank variables with positive integer coefficients, e.g. 2*p + r",
        ) from None
    if not terms or any(c <= 0 for c in terms.values()) or constant < 0:
        raise where.error(f"unsupported projection for rank {rank}", found=expression)
    return AfRankProjection(
        rank=rank,
        expression=expression,
        terms=tuple(AfProjectionTerm(v, c) for v, c in terms.items()),
        constant=constant,
    )
