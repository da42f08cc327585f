"""The version of every JSON document cyclesim writes, and the one name of each quantity.

Bump SCHEMA_VERSION when a key is renamed or removed or changes meaning (adding keys does not).
The README's "Machine-readable output" table lists the names.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

SCHEMA_VERSION = 1


def as_is(value: Any) -> Any:
    """A JSON field written as the row holds it (a name, or None)."""
    return value


def json_rows(rows: Iterable[Any], fields: dict[str, Callable[[Any], Any]]) -> list[dict]:
    """Rows (named tuples) as JSON objects: each named field, in order, through its converter
    (`int`, `float`, `as_is`), so numpy numbers become plain JSON numbers."""
    return [{name: convert(getattr(row, name)) for name, convert in fields.items()} for row in rows]


def versioned(document: dict) -> dict:
    """The document with `schema_version` as its first key."""
    return {"schema_version": SCHEMA_VERSION, **document}


def print_json(document: dict) -> None:
    """Print a `--json` document on stdout: `schema_version` first, indented one space."""
    print(json.dumps(versioned(document), indent=1))
