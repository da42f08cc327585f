"""Read ZigZag 3.x YAML/JSON files into `zigzag_inputs` dataclasses, refusing what we cannot represent."""

from __future__ import annotations

import math
import re
from collections import Counter
from math import prod
from typing import Any, NoReturn

from cyclesim.checks.zigzag_inputs import (
    DataDirection,
    MemoryOperand,
    PortAllocation,
    PortType,
    TemporalMapping,
    ZigZagAccelerator,
    ZigZagLayer,
    ZigZagMapping,
    ZigZagMemory,
    ZigZagPort,
)
from cyclesim.errors import SpecError
from cyclesim.spec.yamlio import format_path, line_of, read_yaml

MAX_INTEGER = 2**60  # sizes in bits, latencies, loop sizes
MAX_NUMBER = 1e30  # energies and areas
_PORT_NAME = re.compile(r"^[r]?[w]?_port_\d+$")
_ALLOCATION = re.compile(r"^\s*(\w+)\s*,\s*(\w+)\s*$")
_ARRAY_DIM = re.compile(r"^D\d$")
_EQUATION = re.compile(
    r"^\s*(\w+)((?:\[\w*\])+)\s*\+?=\s*(\w+)((?:\[\w*\])+)\s*[*+]\s*(\w+)((?:\[\w*\])+)\s*$"
)
_RELATION = re.compile(
    r"^\s*(\w+)\s*=\s*(?:(\d+)\s*\*\s*)?(\w+)\s*\+\s*(?:(\d+)\s*\*\s*)?(\w+)\s*$"
)
_UNROLLING = re.compile(r"^\s*([A-Za-z]+\d*)\s*,\s*(\d+)\s*$")

_MEMORY_FIELDS = {
    "size", "r_cost", "w_cost", "area", "latency", "operands", "ports", "served_dimensions",
    "mem_type", "auto_cost_extraction", "force_double_buffering",
}  # fmt: skip
_ARRAY_FIELDS = {"dimensions", "sizes", "unit_energy", "unit_area", "systolic_dimensions", "is_imc"}
_LAYER_FIELDS = {
    "id", "name", "operator_type", "equation", "dimension_relations", "loop_dims", "loop_sizes",
    "operand_precision", "operand_source", "pr_loop_dims", "pr_loop_sizes", "padding",
}  # fmt: skip
_MAPPING_FIELDS = {
    "name",
    "spatial_mapping",
    "temporal_ordering",
    "memory_operand_links",
    "spatial_mapping_hint",
}


class _Reader:
    """One parsed file: its data, its lines, and errors that point into it."""

    def __init__(self, path: str) -> None:
        self.data, self.lines, self.file = read_yaml(path)

    def fail(
        self, path: tuple, message: str, found: Any = None, expected: str | None = None
    ) -> NoReturn:
        """Raise a SpecError at a field path of this file."""
        raise SpecError(
            message,
            file=self.file,
            field=format_path(path) or None,
            line=line_of(self.lines, path),
            found=found,
            expected=expected,
        )

    def mapping(self, value: Any, path: tuple, allowed: set[str], required: set[str]) -> dict:
        """Check a YAML mapping: no unknown keys (listing the allowed ones), no missing keys."""
        if not isinstance(value, dict):
            self.fail(path, "must be a mapping", found=value, expected="a mapping")
        for key in value:
            if key not in allowed:
                self.fail(
                    path + (key,), f"unknown field '{key}' (allowed: {', '.join(sorted(allowed))})"
                )
        for key in sorted(required):
            if key not in value:
                self.fail(path, f"missing field '{key}'")
        return value

    def listing(self, value: Any, path: tuple) -> list:
        """Check a YAML list."""
        if not isinstance(value, list):
            self.fail(path, "must be a list", found=value, expected="a list")
        return value

    def integer(self, value: Any, path: tuple, minimum: int | None = None) -> int:
        """Check an integer, optionally at least `minimum`."""
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(path, "must be an integer", found=value, expected="an integer")
        if minimum is not None and value < minimum:
            self.fail(path, f"must be at least {minimum}", found=value)
        if value > MAX_INTEGER:
            self.fail(path, "out of range", found=value, expected="at most 2**60")
        return value

    def number(self, value: Any, path: tuple) -> float:
        """Check a number (energy, area): finite and not negative."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.fail(path, "must be a number", found=value, expected="a number")
        if not (math.isfinite(value) and 0 <= value <= MAX_NUMBER):
            self.fail(path, "out of range", found=value, expected=f"0 to {MAX_NUMBER:g}")
        return float(value)

    def string(self, value: Any, path: tuple) -> str:
        """Check a string."""
        if not isinstance(value, str):
            self.fail(path, "must be a string", found=value, expected="a string")
        return value


def parse_accelerator(path: str) -> ZigZagAccelerator:
    """Read a ZigZag 3.x accelerator YAML."""
    r = _Reader(path)
    top = r.mapping(
        r.data,
        (),
        {"name", "memories", "operational_array", "dataflows"},
        {"name", "memories", "operational_array"},
    )
    array = r.mapping(
        top["operational_array"], ("operational_array",), _ARRAY_FIELDS, {"dimensions", "sizes"}
    )
    if array.get("is_imc"):
        r.fail(
            ("operational_array", "is_imc"),
            "in-memory-compute arrays cannot be replayed",
            found=True,
        )
    dims = tuple(
        r.string(d, ("operational_array", "dimensions", i))
        for i, d in enumerate(r.listing(array["dimensions"], ("operational_array", "dimensions")))
    )
    for i, d in enumerate(dims):
        if not _ARRAY_DIM.match(d):
            r.fail(
                ("operational_array", "dimensions", i),
                "bad array dimension name",
                found=d,
                expected="D1, D2, ...",
            )
    sizes = tuple(
        r.integer(s, ("operational_array", "sizes", i), 1)
        for i, s in enumerate(r.listing(array["sizes"], ("operational_array", "sizes")))
    )
    if len(sizes) != len(dims):
        r.fail(
            ("operational_array", "sizes"),
            "needs one size per dimension",
            found=len(sizes),
            expected=str(len(dims)),
        )
    systolic = tuple(
        r.listing(
            array.get("systolic_dimensions") or [], ("operational_array", "systolic_dimensions")
        )
    )
    for i, d in enumerate(systolic):
        if d not in dims:
            r.fail(
                ("operational_array", "systolic_dimensions", i),
                "unknown array dimension",
                found=d,
                expected=f"one of {', '.join(dims)}",
            )
    memories_data = top["memories"]
    if not isinstance(memories_data, dict) or not memories_data:
        r.fail(("memories",), "must be a non-empty mapping of memory names", found=memories_data)
    memories = tuple(_parse_memory(r, name, data, dims) for name, data in memories_data.items())
    return ZigZagAccelerator(
        name=r.string(top["name"], ("name",)),
        memories=memories,
        array_dimensions=dims,
        array_sizes=sizes,
        systolic_dimensions=systolic,
        mac_energy=r.number(array.get("unit_energy", 0.0), ("operational_array", "unit_energy")),
        file=r.file,
    )


def _parse_memory(r: _Reader, name: str, data: Any, dims: tuple[str, ...]) -> ZigZagMemory:
    """Read one memory: operands, ports with their allocations, served dimensions."""
    base = ("memories", name)
    m = r.mapping(
        data, base, _MEMORY_FIELDS, {"size", "latency", "operands", "ports", "served_dimensions"}
    )
    operands: list[MemoryOperand] = []
    for i, op in enumerate(r.listing(m["operands"], base + ("operands",))):
        if op not in ("I1", "I2", "O"):
            r.fail(
                base + ("operands", i), "unknown memory operand", found=op, expected="I1, I2 or O"
            )
        operands.append(MemoryOperand(op))
    served = tuple(r.listing(m["served_dimensions"], base + ("served_dimensions",)))
    for i, d in enumerate(served):
        if d not in dims:
            r.fail(
                base + ("served_dimensions", i),
                "unknown array dimension",
                found=d,
                expected=f"one of {', '.join(dims)}",
            )
    ports: list[ZigZagPort] = []
    seen: dict[PortAllocation, str] = {}
    for p, port_data in enumerate(r.listing(m["ports"], base + ("ports",))):
        pbase = base + ("ports", p)
        pd = r.mapping(
            port_data,
            pbase,
            {"name", "type", "bandwidth_min", "bandwidth_max", "allocation"},
            {"name", "type", "bandwidth_min", "bandwidth_max", "allocation"},
        )
        port_name = r.string(pd["name"], pbase + ("name",))
        if not _PORT_NAME.match(port_name):
            r.fail(
                pbase + ("name",),
                "bad port name",
                found=port_name,
                expected="r_port_N, w_port_N or rw_port_N",
            )
        if pd["type"] not in ("read", "write", "read_write"):
            r.fail(
                pbase + ("type",),
                "unknown port type",
                found=pd["type"],
                expected="read, write or read_write",
            )
        port_type = PortType(pd["type"])
        bw_min = r.integer(pd["bandwidth_min"], pbase + ("bandwidth_min",), 1)
        bw_max = r.integer(pd["bandwidth_max"], pbase + ("bandwidth_max",), 1)
        if bw_min > bw_max:
            r.fail(
                pbase + ("bandwidth_min",),
                "is larger than bandwidth_max",
                found=bw_min,
                expected=f"at most {bw_max}",
            )
        allocation: list[PortAllocation] = []
        for a, text in enumerate(r.listing(pd["allocation"], pbase + ("allocation",))):
            abase = pbase + ("allocation", a)
            match = _ALLOCATION.match(text) if isinstance(text, str) else None
            if match is None or match.group(2) not in {"fh", "tl", "fl", "th"}:
                r.fail(
                    abase,
                    "bad port allocation",
                    found=text,
                    expected="'<operand>, <fh|tl|fl|th>' such as 'I1, tl'",
                )
            op_text, code = match.groups()
            if op_text not in {o.value for o in operands}:
                r.fail(
                    abase,
                    f"unknown operand '{op_text}' in allocation: memory '{name}' holds only {', '.join(o.value for o in operands)}",
                    found=text,
                )
            direction = DataDirection.from_code(code)
            reads = direction in (DataDirection.READ_TO_ABOVE, DataDirection.READ_TO_BELOW)
            if (reads and port_type == PortType.WRITE) or (
                not reads and port_type == PortType.READ
            ):
                r.fail(
                    abase,
                    f"a {port_type.value} port cannot serve '{direction.words}' ({code})",
                    found=text,
                )
            entry = PortAllocation(MemoryOperand(op_text), direction)
            if entry in seen:
                r.fail(
                    abase,
                    f"'{text}' is already allocated to port '{seen[entry]}': each operand and direction needs exactly one port",
                    found=text,
                )
            seen[entry] = port_name
            allocation.append(entry)
        ports.append(ZigZagPort(port_name, port_type, bw_min, bw_max, tuple(allocation)))
    names = Counter(p.name for p in ports)
    for p, port in enumerate(ports):
        if names[port.name] > 1:
            r.fail(base + ("ports", p, "name"), "duplicate port name", found=port.name)
    r.number(m.get("area", 0), base + ("area",))  # unused by the replay, still range-checked
    return ZigZagMemory(
        name=name,
        size_bits=r.integer(m["size"], base + ("size",), 1),
        latency_cycles=r.integer(m["latency"], base + ("latency",), 0),
        operands=tuple(operands),
        ports=tuple(ports),
        served_dimensions=served,
        read_energy=r.number(m.get("r_cost") or 0.0, base + ("r_cost",)),
        write_energy=r.number(m.get("w_cost") or 0.0, base + ("w_cost",)),
    )


def parse_workload(path: str, layer_name: str | None = None) -> ZigZagLayer:
    """Read one layer of a ZigZag 3.x workload YAML (the only one, or the one named)."""
    from cyclesim.checks.zigzag_parse_workload import parse_layer

    return parse_layer(_Reader(path), layer_name)


def parse_mapping(path: str, layer: ZigZagLayer, acc: ZigZagAccelerator) -> ZigZagMapping:
    """Read the mapping entry of a layer (by name, else operator type, else 'default')."""
    from cyclesim.checks.zigzag_parse_mapping import parse_mapping_entry

    return parse_mapping_entry(_Reader(path), layer, acc)


def parse_temporal_mapping(
    path: str, acc: ZigZagAccelerator, layer: ZigZagLayer, mapping: ZigZagMapping
) -> TemporalMapping:
    """Read a fixed temporal mapping (tm_*_setting JSON or YAML) and check it against the layer."""
    from cyclesim.checks.zigzag_parse_mapping import parse_temporal_levels

    return parse_temporal_levels(_Reader(path), acc, layer, mapping)


def check_allocations(acc: ZigZagAccelerator, layer: ZigZagLayer, mapping: ZigZagMapping) -> None:
    """Every level of a linked operand needs ports for the transfers ZigZag always times."""
    for layer_op, mem_op in mapping.memory_operand_links:
        levels = acc.levels(mem_op)
        if not levels:
            raise SpecError(
                f"no memory holds memory operand {mem_op.value} (linked to {layer_op})",
                file=acc.file,
                field="memories",
            )
        is_output = layer_op == layer.output_operand
        for level, memory in enumerate(levels):
            needed = (
                [DataDirection.WRITTEN_FROM_BELOW, DataDirection.READ_TO_ABOVE]
                if is_output
                else [DataDirection.READ_TO_BELOW, DataDirection.WRITTEN_FROM_ABOVE]
            )
            if level == len(levels) - 1:
                needed = needed[:1]  # nothing moves beyond the top level
            for direction in needed:
                if memory.port_for(mem_op, direction) is None:
                    raise SpecError(
                        f"no port of memory '{memory.name}' serves '{mem_op.value}, {direction.code}' ({direction.words})",
                        file=acc.file,
                        field=f"memories.{memory.name}.ports",
                        expected=f"an allocation '{mem_op.value}, {direction.code}' on one port",
                    )


def total_unrolling(mapping: ZigZagMapping, dim: str) -> int:
    """Product of the spatial factors of one loop dim."""
    return prod(f for _, loops in mapping.spatial for d, f in loops if d == dim)
