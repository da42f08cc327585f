"""Hardware variants of a ZigZag accelerator, set by the field paths `cyclesim sweep` uses.

The import keeps ZigZag's memory and port names (to_spec), so a sweep axis written for the
imported architecture names the ZigZag field it came from:

    architecture.memories.M.size_bits                -> memories.M.size
    architecture.memories.M.ports.P.width_bits       -> memories.M.ports[P].bandwidth_min and _max
    architecture.memories.M.ports.P.latency          -> memories.M.latency (ZigZag has one per memory)
    architecture.pe_array.dims.D (the array size)    -> operational_array.sizes[D]

Anything else is refused with the field's name, as a sweep refuses an unknown field.
"""

from __future__ import annotations

import copy
from typing import Any

from cyclesim.errors import SpecError


def apply_settings(accelerator: dict, settings: tuple[tuple[str, Any], ...], file: str) -> dict:
    """A copy of a ZigZag accelerator (as read from YAML) with each (field path, value) set."""
    out = copy.deepcopy(accelerator)
    for field, value in settings:
        _set(out, field, value, file)
    return out


def _set(acc: dict, field: str, value: Any, file: str) -> None:
    parts = field.split(".")
    if parts[:2] == ["architecture", "memories"] and len(parts) >= 4:
        memory = acc.get("memories", {}).get(parts[2])
        if memory is None:
            raise SpecError(
                f"no memory {parts[2]!r} in the ZigZag accelerator", file=file, field=field
            )
        if parts[3:] == ["size_bits"]:
            memory["size"] = int(value)
            return
        if len(parts) == 6 and parts[3] == "ports":
            port = next((p for p in memory.get("ports", ()) if p.get("name") == parts[4]), None)
            if port is None:
                raise SpecError(
                    f"no port {parts[4]!r} in memory {parts[2]!r}", file=file, field=field
                )
            if parts[5] == "width_bits":
                port["bandwidth_min"] = port["bandwidth_max"] = int(value)
                return
            if parts[5] == "latency":
                memory["latency"] = int(value)
                return
    if parts[:3] == ["architecture", "pe_array", "dims"] and len(parts) == 4:
        array = acc.get("operational_array", {})
        dims = list(array.get("dimensions", ()))
        if parts[3] in dims:
            array["sizes"][dims.index(parts[3])] = int(value)
            return
    raise SpecError(
        "a field a ZigZag accelerator has no counterpart for",
        file=file,
        field=field,
        expected="architecture.memories.M.size_bits, architecture.memories.M.ports.P.width_bits "
        "or .latency, architecture.pe_array.dims.D",
    )
