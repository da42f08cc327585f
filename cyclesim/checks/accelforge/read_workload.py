"""Read an AccelForge `workload:` section: Einsums, projections, rank sizes, bits per value."""

from __future__ import annotations

import re
from typing import Any

from cyclesim.checks.accelforge.read_access import parse_einsum_string, read_access
from cyclesim.checks.accelforge.read_fields import (
    Where,
    check_fields,
    checked_mapping,
    refuse_unless_default,
    require_list,
    require_mapping,
)
from cyclesim.checks.accelforge.read_yaml import evaluate_tensor_set
from cyclesim.checks.accelforge.spec import (
    AfEinsum,
    AfTensorAccess,
    AfWorkload,
)

_BOUND = re.compile(
    r"^\s*(?:(?P<low>[^<]+?)\s*<=\s*)?(?P<var>[a-z_][A-Za-z0-9_]*)\s*(?P<op><=|<)\s*(?P<high>.+?)\s*$"
)


def read_workload(section: Any, where: Where, variables: dict[str, Any]) -> AfWorkload:
    """Build the AfWorkload. Raise SpecError for every fault or unsupported feature."""
    fields = checked_mapping(
        section,
        where,
        "workload",
        required=("einsums",),
        allowed=(
            "iteration_space_shape",
            "rank_sizes",
            "bits_per_value",
            "n_instances",
            "persistent_tensors",
        ),
    )
    refuse_unless_default(fields, "n_instances", (1,), where, "workload n_instances")
    refuse_unless_default(fields, "persistent_tensors", (None,), where, "persistent tensors")
    shape = _bounds(fields, where, variables)
    rank_sizes = _rank_sizes(fields, where, variables)
    raw_einsums = require_list(fields["einsums"], where.child("einsums"), "einsums")
    partial = [
        _read_einsum(raw, where.child("einsums").child(i, raw), shape, rank_sizes, variables)
        for i, raw in enumerate(raw_einsums)
    ]
    names = [einsum.name for einsum, _ in partial]
    for name in names:
        if names.count(name) > 1:
            raise where.child("einsums").error(f"two Einsums are named '{name}'")
    ranks_of: dict[str, tuple[str, ...]] = {}
    for einsum, _ in partial:
        for access in einsum.tensor_accesses:
            ranks = tuple(sorted(r.rank for r in access.ranks))
            if ranks_of.setdefault(access.tensor, ranks) != ranks:
                raise where.child("einsums").error(
                    f"tensor '{access.tensor}' has inconsistent ranks across Einsums",
                    found=ranks,
                    expected=str(ranks_of[access.tensor]),
                )
    workload = AfWorkload(einsums=tuple(einsum for einsum, _ in partial))
    bits = fields.get("bits_per_value") or {}
    bits_where = where.child("bits_per_value", bits)
    einsums = []
    for (einsum, einsum_where), _raw in zip(partial, raw_einsums, strict=True):
        einsums.append(
            _with_bits_per_value(workload, einsum, bits, bits_where, einsum_where, variables)
        )
    return AfWorkload(einsums=tuple(einsums))


def tensor_set_names(workload: AfWorkload, einsum: AfEinsum) -> dict[str, frozenset[str]]:
    """Names usable in a set expression for `einsum`: keywords, tensors, renames."""
    tensors = frozenset(einsum.tensor_names)
    names: dict[str, frozenset[str]] = {t: frozenset() for t in workload.tensor_names}
    names.update({t: frozenset({t}) for t in tensors})
    names.update(
        All=tensors,
        Tensors=tensors,
        Nothing=frozenset(),
        Inputs=frozenset(einsum.input_tensor_names),
        Outputs=frozenset(einsum.output_tensor_names),
        Intermediates=tensors & workload.intermediates,
        Shared=tensors & workload.shared,
        Persistent=frozenset(),
    )
    for name, expression in einsum.renames:
        names[name] = evaluate_tensor_set(
            expression,
            names,
            tensors,
            file=None,
            field=f"einsum {einsum.name} renames.{name}",
            line=None,
        )
    return names


def _bounds(fields: dict[str, Any], where: Where, variables: dict[str, Any]) -> dict[str, int]:
    """`iteration_space_shape` of a workload or an Einsum: each rank variable's size."""
    raw = fields.get("iteration_space_shape")
    if raw is None:
        return {}
    shape_where = where.child("iteration_space_shape", raw)
    items = (
        [(shape_where.child(key), item) for key, item in raw.items()]
        if isinstance(raw, dict)
        else [
            (shape_where, item) for item in require_list(raw, shape_where, "iteration_space_shape")
        ]
    )
    bounds: dict[str, int] = {}
    for at, item in items:
        for part in str(item).split(" and "):
            match = _BOUND.match(part)
            if match is None:
                raise at.error(
                    "unsupported iteration_space_shape entry", found=item, expected="'0 <= m < 64'"
                )
            low = match["low"]
            if low is not None and at.number(low, variables) != 0:
                raise at.error("only lower bounds of 0 are supported", found=item)
            high = at.number(match["high"], variables)
            size = int(high) + (1 if match["op"] == "<=" else 0)
            name = match["var"]
            bounds[name] = min(bounds.get(name, size), size)
    return bounds


def _rank_sizes(fields: dict[str, Any], where: Where, variables: dict[str, Any]) -> dict[str, int]:
    """`rank_sizes` of a workload or an Einsum: each rank's size."""
    raw = fields.get("rank_sizes") or {}
    where = where.child("rank_sizes", raw)
    result = {}
    for rank, value in require_mapping(raw, where, "rank_sizes").items():
        rank_where = where.child(rank)
        if not str(rank)[:1].isupper():
            raise rank_where.error(
                "rank names in rank_sizes start with an upper-case letter", found=rank
            )
        size = rank_where.number(value, variables)
        if not isinstance(size, int) or size < 1:
            raise rank_where.error("a rank size must be a positive integer", found=value)
        result[str(rank)] = size
    return result


def _read_einsum(
    raw: Any,
    where: Where,
    workload_shape: dict[str, int],
    workload_rank_sizes: dict[str, int],
    variables: dict[str, Any],
) -> tuple[AfEinsum, Where]:
    """One Einsum of an AccelForge workload: its accesses, projections and rank sizes, refused
    with the file and field where cyclesim cannot replay it.

    Over 80 lines: the Einsum's fields read in the order AccelForge defines them, each check a
    few lines naming the file and field.
    """
    if isinstance(raw, str):
        raw = parse_einsum_string(raw, where)
    fields = require_mapping(raw, where, "an Einsum")
    if isinstance(fields.get("einsum"), str):
        fields = {
            **parse_einsum_string(fields["einsum"], where),
            **{k: v for k, v in fields.items() if k != "einsum"},
        }
    check_fields(
        fields,
        where,
        "an Einsum",
        required=("name", "tensor_accesses"),
        allowed=(
            "iteration_space_shape",
            "rank_sizes",
            "is_copy_operation",
            "renames",
            "n_instances",
        ),
    )
    name = str(fields["name"])
    where = where.named(name)
    refuse_unless_default(fields, "n_instances", (1,), where, "Einsum n_instances")
    accesses = [
        read_access(entry, where.child("tensor_accesses").child(i, entry))
        for i, entry in enumerate(
            require_list(
                fields["tensor_accesses"], where.child("tensor_accesses"), "tensor_accesses"
            )
        )
    ]
    tensors = [a["tensor"] for a in accesses]
    for tensor in tensors:
        if tensors.count(tensor) > 1:
            raise where.child("tensor_accesses").error(f"tensor '{tensor}' is accessed twice")
    shape = {**workload_shape, **_bounds(fields, where, variables)}
    rank_sizes = {**workload_rank_sizes, **_rank_sizes(fields, where, variables)}
    rank_variables = list(
        dict.fromkeys(t.rank_variable for a in accesses for r in a["ranks"] for t in r.terms)
    )
    sizes = []
    for rank_variable in rank_variables:
        candidates = [shape[rank_variable]] if rank_variable in shape else []
        for access in accesses:
            for rank in access["ranks"]:
                if rank.expression.strip() == rank_variable and rank.rank in rank_sizes:
                    candidates.append(rank_sizes[rank.rank])
        if not candidates:
            raise where.error(
                f"cannot tell the size of rank variable '{rank_variable}'",
                expected=f"'{rank_variable}: 0 <= {rank_variable} < N' in iteration_space_shape or a rank_sizes entry for the rank it indexes",
            )
        sizes.append((rank_variable, min(candidates)))
    renames = fields.get("renames") or {}
    renames = require_mapping(renames, where.child("renames", renames), "renames")
    is_copy = bool(fields.get("is_copy_operation", False))
    outputs = [a for a in accesses if a["is_output"]]
    if not outputs:
        raise where.error(
            "an Einsum needs an output tensor", expected="one tensor access with output: True"
        )
    if is_copy and len(accesses) - len(outputs) != 1:
        raise where.error("a copy Einsum needs exactly one input tensor", found=tensors)
    partial = AfEinsum(
        name=name,
        tensor_accesses=tuple(
            AfTensorAccess(
                tensor=a["tensor"],
                ranks=a["ranks"],
                is_output=a["is_output"],
                bits_per_value=a["bits_per_value"] or 0,
            )
            for a in accesses
        ),
        rank_variable_sizes=tuple(sizes),
        is_copy_operation=is_copy,
        renames=tuple((str(k), str(v)) for k, v in renames.items()),
    )
    return partial, where


def _with_bits_per_value(
    workload: AfWorkload,
    einsum: AfEinsum,
    bits: Any,
    bits_where: Where,
    einsum_where: Where,
    variables: dict[str, Any],
) -> AfEinsum:
    names = tensor_set_names(workload, einsum)
    universe = frozenset(einsum.tensor_names)
    resolved: dict[str, int] = {}
    for key, value in require_mapping(bits, bits_where, "bits_per_value").items():
        at = bits_where.child(str(key))
        matched = evaluate_tensor_set(
            str(key), names, universe, file=at.file, field=at.field, line=at.line
        )
        number = at.number(value, variables)
        for tensor in matched:
            if tensor in resolved:
                raise bits_where.error(
                    f"tensor '{tensor}' matches more than one bits_per_value entry"
                )
            resolved[tensor] = int(number)
    accesses = []
    for access in einsum.tensor_accesses:
        value = access.bits_per_value or resolved.get(access.tensor)
        if not value:
            raise einsum_where.error(
                f"tensor '{access.tensor}' has no bits per value",
                expected="an entry in workload.bits_per_value (e.g. {All: 8}) or bits_per_value on the access",
            )
        accesses.append(
            AfTensorAccess(
                tensor=access.tensor,
                ranks=access.ranks,
                is_output=access.is_output,
                bits_per_value=value,
            )
        )
    return AfEinsum(
        name=einsum.name,
        tensor_accesses=tuple(accesses),
        rank_variable_sizes=einsum.rank_variable_sizes,
        is_copy_operation=einsum.is_copy_operation,
        renames=einsum.renames,
    )
