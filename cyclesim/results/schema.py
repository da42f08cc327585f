"""The version of every JSON document cyclesim writes, and the one name of each quantity.

Bump SCHEMA_VERSION when a key is renamed or removed or changes meaning (adding keys does not).
The README's "Machine-readable output" table lists the names.
"""

from __future__ import annotations

SCHEMA_VERSION = 1


def versioned(document: dict) -> dict:
    """The document with `schema_version` as its first key."""
    return {"schema_version": SCHEMA_VERSION, **document}
