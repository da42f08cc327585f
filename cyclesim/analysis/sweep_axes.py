"""One axis of a sweep (or of `rank hardware`'s candidates): the fields it sets and its values,
read from its YAML entry (a list, a range or a geometric series) with every value checked
before any point is built. sweep_spec.py reads the rest of a sweep file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator, Field

from cyclesim.spec.yamlio import StrictModel

WHOLE_INPUTS = ("architecture", "workload", "mapping")
POLICIES = ("reuse", "isolate_einsums")
Scalar = int | float | str | bool


MAX_POINTS = 100_000  # points of one sweep (product of its axes), checked before building any
MAX_AXIS_VALUE = 2**62  # a number an axis sets: inside a 64-bit column of the table


def _finite(value: int | float) -> int | float:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{value} is not a finite number")
    if abs(value) > MAX_AXIS_VALUE:
        raise ValueError("the magnitude is above 2**62")
    return value


Number = Annotated[int | float, AfterValidator(_finite)]


class _Range(StrictModel):
    start: Number
    stop: Number = Field(description="included when a whole number of steps away")
    step: Number = Field(gt=0)


class _Geometric(StrictModel):
    start: Number | list[Number]
    stop: Number | list[Number]
    points: int = Field(ge=2, le=MAX_POINTS)
    multiple_of: int | None = Field(
        None, gt=0, description="round every value to a multiple of this (at least one multiple)"
    )


class AxisEntry(StrictModel):
    """An axis as its YAML entry gives it (read_axis checks and expands it)."""

    name: str | None = None
    field: str | None = None
    fields: list[str] | None = Field(None, min_length=1)
    values: list[Any] | None = Field(None, min_length=1)
    range: _Range | None = None
    geometric: _Geometric | None = None


@dataclass(frozen=True, slots=True)
class Axis:
    """One axis: the fields it sets (by path) and its values (one tuple per step, one per field)."""

    name: str
    fields: tuple[str, ...]
    columns: tuple[str, ...]  # table column of each field
    values: tuple[tuple[Scalar, ...], ...]


def read_axis(raw: AxisEntry, index: int, err: Any) -> Axis:
    """The axis of entry `index` of a file's axes, its values expanded; err(message, where,
    ...) makes the SpecError naming the file, field and line."""
    loc = ("axes", index)
    if (raw.field is None) == (raw.fields is None):
        raise err("an axis needs exactly one of 'field' or 'fields'", loc)
    fields = tuple(raw.fields or [raw.field])  # type: ignore[list-item]
    for fi, field in enumerate(fields):
        _check_field(field, loc + (("fields", fi) if raw.fields else ("field",)), err)
    given = [k for k in ("values", "range", "geometric") if getattr(raw, k) is not None]
    if len(given) != 1:
        raise err(
            "an axis needs exactly one of 'values', 'range' or 'geometric'",
            loc,
            found=given or None,
        )
    if raw.fields is not None and raw.name is None:
        raise err("an axis with several fields needs a 'name'", loc)
    columns = (
        tuple(column_name(f) for f in fields) if raw.fields or raw.name is None else (raw.name,)
    )
    name = raw.name or columns[0]
    if raw.values is not None:
        values = []
        for vi, value in enumerate(raw.values):
            row = tuple(value) if len(fields) > 1 and isinstance(value, list) else (value,)
            if len(row) != len(fields):
                raise err(
                    f"each value of this axis must list one entry per field ({len(fields)})",
                    loc + ("values", vi),
                    found=value,
                )
            for entry in row:
                if not isinstance(entry, (int, float, str, bool)):
                    raise err(
                        "axis values must be numbers, strings or booleans",
                        loc + ("values", vi),
                        found=entry,
                    )
                if isinstance(entry, (int, float)) and not isinstance(entry, bool):
                    if not math.isfinite(entry) or abs(entry) > MAX_AXIS_VALUE:
                        raise err(
                            "an axis value out of range",
                            loc + ("values", vi),
                            found=entry,
                            expected="a finite number of magnitude at most 2**62",
                        )
            values.append(row)
    elif raw.range is not None:
        values = [(v,) * len(fields) for v in _arange(raw.range, loc + ("range",), err)]
    else:
        values = _geometric(raw.geometric, len(fields), loc + ("geometric",), err)  # type: ignore[arg-type]
    for field, vi in zip(fields, range(len(fields)), strict=True):
        if field in POLICIES or field in WHOLE_INPUTS:
            kinds = {type(v[vi]) for v in values}
            want = bool if field == "isolate_einsums" else str
            if kinds != {want}:
                raise err(
                    f"'{field}' takes {'booleans' if want is bool else 'strings'}",
                    loc + ("values",),
                    found=sorted(k.__name__ for k in kinds),
                )
            if field == "reuse" and not {v[vi] for v in values} <= {"retain", "strict"}:
                raise err("reuse is 'retain' or 'strict'", loc + ("values",))
    return Axis(name, fields, columns, tuple(values))


def _check_field(field: str, loc: tuple, err: Any) -> None:
    if field in WHOLE_INPUTS or field in POLICIES:
        return
    head, _, rest = field.partition(".")
    if head not in ("architecture", "mapping") or not rest:
        raise err(
            "unknown field to sweep",
            loc,
            found=field,
            expected="architecture.PATH, mapping.PATH, architecture, workload, mapping, reuse or isolate_einsums",
        )


def column_name(field: str) -> str:
    """The table column of a swept field: its path without 'architecture.memories.' and 'ports.'.

    'architecture.memories.sram.ports.r_port_1.width_bits' -> 'sram.r_port_1.width_bits';
    'mapping.loop_tree[3].bound' -> 'loop_tree[3].bound'; 'workload' -> 'workload'.
    """
    head, _, rest = field.partition(".")
    if not rest:
        return field
    parts = rest.split(".")
    if head == "architecture" and parts[0] == "memories":
        parts = parts[1:]
    return ".".join(p for i, p in enumerate(parts) if not (p == "ports" and i > 0))


def _arange(r: _Range, loc: tuple, err: Any) -> list[Scalar]:
    if r.stop < r.start:
        raise err("range stop is below its start", loc, found=(r.start, r.stop))
    for key in ("start", "stop", "step"):
        value = getattr(r, key)
        if abs(value) > MAX_AXIS_VALUE:
            raise err("out of range", loc + (key,), found=value,
                      expected="a number of magnitude at most 2**62")  # fmt: skip
    n = int((r.stop - r.start) / r.step + 1e-9) + 1
    if n > MAX_POINTS:
        raise err("the range has too many values", loc, found=n, expected=f"at most {MAX_POINTS:,}")
    whole = all(isinstance(v, int) for v in (r.start, r.stop, r.step))
    return [r.start + k * r.step if whole else round(r.start + k * r.step, 12) for k in range(n)]


def _geometric(g: _Geometric, n_fields: int, loc: tuple, err: Any) -> list[tuple[Scalar, ...]]:
    starts = g.start if isinstance(g.start, list) else [g.start] * n_fields
    stops = g.stop if isinstance(g.stop, list) else [g.stop] * n_fields
    if len(starts) != n_fields or len(stops) != n_fields:
        raise err(f"start and stop need one entry per field ({n_fields})", loc)
    for s, e in zip(starts, stops, strict=True):
        if s <= 0 or e <= 0:
            raise err("a geometric axis needs positive start and stop", loc, found=(s, e))
        if max(s, e) > MAX_AXIS_VALUE or (g.multiple_of or 0) > MAX_AXIS_VALUE:
            raise err("out of range", loc, found=(s, e), expected="values of at most 2**62")
    out = []
    for k in range(g.points):
        t = k / (g.points - 1)
        row = []
        for s, e in zip(starts, stops, strict=True):
            v = s * (e / s) ** t
            if g.multiple_of:
                row.append(max(g.multiple_of, round(v / g.multiple_of) * g.multiple_of))
            else:
                row.append(v if not all(isinstance(x, int) for x in (s, e)) else round(v))
        out.append(tuple(row))
    return out
