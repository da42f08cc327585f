"""A component's `enabled:` over the Einsum's tensor sets (tpu_v4i: `len(All) == 3`).

AccelForge evaluates `enabled` per Einsum; tpu_v4i uses it to pick its ScalarUnit for
two-tensor Einsums and its MAC array for three-tensor ones. This reader evaluates booleans
built from `len(SET)` and numbers with comparisons, `and`, `or`, `not` (walking the parsed
expression, never executing it). The replay has one architecture for the whole workload, so a
component must be enabled for every Einsum or for none; a disabled one is dropped.
"""

from __future__ import annotations

import ast
import operator
from typing import Any

from cyclesim.checks.accelforge.read_fields import Where
from cyclesim.checks.accelforge.read_workload import tensor_set_names
from cyclesim.checks.accelforge.read_yaml import evaluate_tensor_set
from cyclesim.checks.accelforge.spec import AfWorkload

_COMPARE = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}


def is_enabled(value: Any, workload: AfWorkload, where: Where) -> bool:
    """Whether the component exists for this workload. Raise SpecError if Einsums disagree or
    the expression is not one this reader evaluates."""
    if isinstance(value, bool):
        return value
    try:
        tree = ast.parse(str(value), mode="eval")
    except SyntaxError:
        raise where.error("enabled: is not an expression", found=value) from None
    answers = {
        einsum.name: bool(_walk(tree.body, workload, einsum, where, value))
        for einsum in workload.einsums
    }
    if len(set(answers.values())) > 1:
        raise where.error(
            "enabled: differs between Einsums, and the replay has one architecture for the "
            "whole workload",
            found=answers,
            expected="a component enabled for every Einsum or for none",
        )
    return next(iter(answers.values()), True)


def _walk(node: ast.AST, workload: AfWorkload, einsum, where: Where, source: Any) -> Any:
    def walk(child: ast.AST) -> Any:
        return _walk(child, workload, einsum, where, source)

    if isinstance(node, ast.Constant) and isinstance(node.value, bool | int | float):
        return node.value
    if isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
        left = walk(node.left)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = walk(right_node)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.BoolOp):
        values = [bool(walk(value)) for value in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return not walk(node.operand)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "len"
        and len(node.args) == 1
        and not node.keywords
    ):
        tensors = evaluate_tensor_set(
            ast.unparse(node.args[0]),
            tensor_set_names(workload, einsum),
            frozenset(einsum.tensor_names),
            file=where.file,
            field=where.field,
            line=where.line,
        )
        return len(tensors)
    raise where.error(
        "enabled: uses a construct this reader does not evaluate",
        found=source,
        expected="True, False, or comparisons of len(SET) and numbers with and/or/not",
    )
