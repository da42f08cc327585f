"""Field checks shared by the AccelForge readers: unknown fields, unsupported values, lines."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cyclesim.checks.accelforge.read_yaml import LineDict, TaggedNode, evaluate_number
from cyclesim.errors import SpecError

RANGE_CHECKED_IGNORED = frozenset({"leak_power", "area", "area_scale", "leak_power_scale"})


@dataclass(frozen=True, slots=True)
class Where:
    """A place in an input file: file, dotted field path, line; when the place holds a mapping,
    the lines of its keys, so that a sub-field's error names the sub-field's own line."""

    file: str | None
    field: str
    line: int | None
    key_lines: Mapping[Any, int] | None = dataclasses.field(default=None, compare=False, repr=False)

    def child(self, name: str | int, value: Any = None) -> Where:
        """The place of a sub-field: its key's line, else the line its value (a mapping or a
        tagged node) starts on, else this place's line. Pass the value to reach its fields."""
        path = f"{self.field}[{name}]" if isinstance(name, int) else f"{self.field}.{name}"
        key_line = self.key_lines.get(name) if self.key_lines and isinstance(name, str) else None
        return Where(self.file, path, key_line or line_of(value) or self.line, key_lines_of(value))

    def named(self, name: str) -> Where:
        """The same place, its field shown with the node's name: `arch.nodes[2](GLB)`."""
        return Where(self.file, f"{self.field}({name})", self.line, self.key_lines)

    def number(self, value: Any, variables: Mapping[str, Any]) -> int | float:
        """`value` (a number or an expression such as `1024*8`) evaluated at this place."""
        return evaluate_number(value, variables, file=self.file, field=self.field, line=self.line)

    def error(self, message: str, *, found: Any = None, expected: str | None = None) -> SpecError:
        """A SpecError at this place."""
        return SpecError(
            message,
            file=self.file,
            field=self.field,
            line=self.line,
            found=found,
            expected=expected,
        )


def line_of(value: Any) -> int | None:
    """The line a YAML mapping or tagged node starts on, if known."""
    if isinstance(value, TaggedNode):
        return value.line
    if isinstance(value, LineDict):
        return value.line
    return None


def key_lines_of(value: Any) -> Mapping[Any, int] | None:
    """Each key's line of a YAML mapping (or of a tagged node's mapping), if known."""
    if isinstance(value, TaggedNode):
        value = value.value
    return value.key_lines if isinstance(value, LineDict) else None


def field_number(
    fields: Mapping[str, Any],
    key: str,
    variables: Mapping[str, Any],
    where: Where,
    default: Any = None,
) -> int | float:
    """`fields[key]` (else `default`) evaluated as a number, errors naming that field's line."""
    return where.child(key).number(fields.get(key, default), variables)


def require_mapping(value: Any, where: Where, what: str) -> dict[str, Any]:
    """Return `value` if it is a mapping. Raise SpecError otherwise."""
    if isinstance(value, TaggedNode):
        value = value.value
    if not isinstance(value, dict):
        raise where.error(f"{what} must be a mapping", found=value)
    return value


def require_list(value: Any, where: Where, what: str) -> list[Any]:
    """Return `value` if it is a list. Raise SpecError otherwise."""
    if not isinstance(value, list):
        raise where.error(f"{what} must be a list", found=value)
    return value


def check_fields(
    fields: dict[str, Any],
    where: Where,
    what: str,
    *,
    required: Iterable[str] = (),
    allowed: Iterable[str] = (),
    ignored: Iterable[str] = (),
) -> None:
    """Refuse unknown fields (listing the supported ones) and missing required ones.

    `ignored` fields are accepted and have no effect on counts or latency (area, leak power,
    mapper-only constraints).
    """
    required, allowed, ignored = tuple(required), tuple(allowed), tuple(ignored)
    known = set(required) | set(allowed) | set(ignored)
    for key in fields:
        if key not in known:
            raise where.child(key).error(
                f"unknown or unsupported field '{key}' of {what}",
                expected="one of " + ", ".join(sorted(known)),
            )
    for key in required:
        if key not in fields:
            raise where.error(f"{what} has no '{key}' field", expected=f"a '{key}:' entry")
    for key in set(ignored) & set(fields) & RANGE_CHECKED_IGNORED:  # unused, still in range
        value = fields[key]
        if isinstance(value, int | float) and not (math.isfinite(value) and value >= 0):
            raise where.child(key).error(
                f"{key} must be a finite number >= 0 (cyclesim ignores it, AccelForge does not)",
                found=value,
            )


def checked_mapping(
    value: Any,
    where: Where,
    what: str,
    *,
    required: Iterable[str] = (),
    allowed: Iterable[str] = (),
    ignored: Iterable[str] = (),
) -> dict[str, Any]:
    """`value` as a mapping whose fields `check_fields` accepts. Raise SpecError otherwise."""
    fields = require_mapping(value, where, what)
    check_fields(fields, where, what, required=required, allowed=allowed, ignored=ignored)
    return fields


def checked_entries(
    value: Any, where: Where, what: str, **rules: Iterable[str]
) -> list[tuple[dict[str, Any], Where]]:
    """Each entry of the list `value` (at `where`) as a `checked_mapping`, with its place."""
    checked = []
    for index, entry in enumerate(require_list(value, where, where.field.rsplit(".", 1)[-1])):
        at = where.child(index, entry)
        checked.append((checked_mapping(entry, at, what, **rules), at))
    return checked


def refuse_unless_default(
    fields: dict[str, Any], key: str, defaults: tuple[Any, ...], where: Where, feature: str
) -> None:
    """Refuse `key` when present with a value other than its default (an unsupported feature)."""
    if key in fields and fields[key] not in defaults:
        raise where.child(key).error(
            f"{feature} is not supported by cyclesim's AccelForge reader",
            found=fields[key],
            expected=f"the default ({defaults[0]!r}) or no '{key}' field",
        )
