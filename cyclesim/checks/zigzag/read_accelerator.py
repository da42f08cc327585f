"""Read a ZigZag 3.x accelerator YAML into `inputs` dataclasses, refusing what we cannot represent."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

from cyclesim.checks.zigzag.inputs import (
    DataDirection,
    MemoryOperand,
    PortAllocation,
    PortType,
    ZigZagAccelerator,
    ZigZagMemory,
    ZigZagPort,
)
from cyclesim.checks.zigzag.reader import (
    ALLOCATION,
    ARRAY_DIM,
    ARRAY_FIELDS,
    MEMORY_FIELDS,
    PORT_NAME,
    Reader,
)


def parse_accelerator(
    path: str, *, extra_fields: frozenset[str] = frozenset()
) -> ZigZagAccelerator:
    """Read a ZigZag 3.x accelerator YAML; `extra_fields` are top-level keys a wrapping format
    (Stream's core files) adds and checks itself."""
    r = Reader(path)
    top = r.mapping(
        r.data,
        (),
        {"name", "memories", "operational_array", "dataflows"} | extra_fields,
        {"name", "memories", "operational_array"},
    )
    operational = top["operational_array"]
    if isinstance(operational, dict) and (operational.get("is_imc") or "imc_type" in operational):
        r.fail(
            ("operational_array", "is_imc"),
            "IMC arrays are not modelled: an in-memory-computing array (aimc/dimc) has no "
            "separate register files to replay",
            found=operational.get("imc_type", True),
            expected="a digital MAC array (is_imc absent or false)",
        )
    array = r.mapping(operational, ("operational_array",), ARRAY_FIELDS, {"dimensions", "sizes"})
    dims = tuple(
        r.string(d, ("operational_array", "dimensions", i))
        for i, d in enumerate(r.listing(array["dimensions"], ("operational_array", "dimensions")))
    )
    for i, d in enumerate(dims):
        if not ARRAY_DIM.match(d):
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


def _parse_memory(r: Reader, name: str, data: Any, dims: tuple[str, ...]) -> ZigZagMemory:
    """Read one memory: operands, ports with their allocations, served dimensions.

    Over 80 lines: a memory's fields read in the file's order, each refusal naming the file,
    field and line.
    """
    base = ("memories", name)
    m = r.mapping(
        data, base, MEMORY_FIELDS, {"size", "latency", "operands", "ports", "served_dimensions"}
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
        if not PORT_NAME.match(port_name):
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
            match = ALLOCATION.match(text) if isinstance(text, str) else None
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
            if entry in allocation:
                r.fail(abase, f"'{text}' is listed twice on port '{port_name}'", found=text)
            seen[entry] = port_name  # ZigZag's PortAllocation keeps the last port listed
            allocation.append(entry)
        ports.append(ZigZagPort(port_name, port_type, bw_min, bw_max, tuple(allocation)))
    # an (operand, direction) on two ports is served by the last one only, as in ZigZag's
    # AcceleratorFactory.create_port_allocation (generic_array_cacti's 'O, tl' on r_port_1 and 2)
    ports = [
        replace(port, allocation=tuple(a for a in port.allocation if seen[a] == port.name))
        for port in ports
    ]
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
