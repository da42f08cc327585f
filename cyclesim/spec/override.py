"""Change one field of a spec by its path, without editing YAML: the spec goes back to its YAML
form, the field is set, and the whole spec is validated again (so a bad value gets the same
SpecError a bad file would).

Paths are dotted; a list of named items (memories, ports, DMA engines) is entered by the item's
name, any list by its index: `memories.sram.ports.r_port_1.width_bits`, `loop_tree[3].bound`,
`loop_tree.3.bound`.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from typing import Any

from cyclesim.errors import SpecError
from cyclesim.spec.arch import Architecture, architecture_from_dict
from cyclesim.spec.energy_units import DEFAULT_ENERGY_UNIT
from cyclesim.spec.mapping import (
    Compute,
    Mapping,
    Node,
    Sequential,
    Spatial,
    Storage,
    Temporal,
    mapping_from_dict,
)
from cyclesim.spec.workload import Workload


def architecture_to_dict(arch: Architecture) -> dict:
    """The architecture in its YAML form; `architecture_from_dict` of it gives `arch` back.

    A port's burst_bits is written only when it differs from its width, so a changed width
    moves a defaulted burst with it (as it would in the YAML).
    """
    pe = arch.pe_array
    out: dict[str, Any] = {"name": arch.name}
    if arch.clock_mhz is not None:
        out["clock_mhz"] = arch.clock_mhz
    if arch.energy_unit != DEFAULT_ENERGY_UNIT:
        out["energy_unit"] = arch.energy_unit
    out["pe_array"] = {
        "dims": dict(pe.dims),
        "macs_per_pe_per_cycle": pe.macs_per_pe_per_cycle,
        "pipeline_depth_cycles": pe.pipeline_depth_cycles,
    }
    if pe.no_multicast:
        out["pe_array"]["no_multicast"] = {d: list(ts) for d, ts in pe.no_multicast}
    if pe.energy is not None:
        out["pe_array"]["energy"] = dataclasses.asdict(pe.energy)
    if pe.systolic is not None:
        out["pe_array"]["systolic"] = {
            "dataflow": pe.systolic.dataflow.value,
            "overlap_folds": pe.systolic.overlap_folds,
        }
    out["memories"] = [_memory_dict(m) for m in arch.memories]
    if arch.dma_engines:
        out["dma_engines"] = [
            {
                "name": d.name,
                "links": [{"parent": p, "child": c} for p, c in d.links],
                "channels": d.channels,
                "setup_cycles": d.setup_cycles,
            }
            for d in arch.dma_engines
        ]
    return out


def _memory_dict(mem: Any) -> dict:
    out: dict[str, Any] = {
        "name": mem.name,
        "size_bits": mem.size_bits,
        "shared_across": list(mem.shared_across),
    }
    if mem.tensors is not None:
        out["tensors"] = list(mem.tensors)
    db = mem.double_buffered
    out["double_buffered"] = db if isinstance(db, bool) else list(db)
    ports = []
    for p in mem.ports:
        port: dict[str, Any] = {
            "name": p.name,
            "kind": p.kind.value,
            "width_bits": p.width_bits,
            "latency_cycles": p.latency_cycles,
        }
        if p.burst_bits != p.width_bits:
            port["burst_bits"] = p.burst_bits
        if p.serves is not None:
            port["serves"] = [{"tensor": t, "direction": d.value} for t, d in p.serves]
        ports.append(port)
    out["ports"] = ports
    if mem.allocator is not None:
        out["allocator"] = copy.deepcopy(mem.allocator)
    if mem.energy is not None:
        out["energy"] = dataclasses.asdict(mem.energy)
    if mem.dram is not None and mem.dram.block is not None:
        out["dram"] = copy.deepcopy(mem.dram.block)
    return out


def mapping_to_dict(mapping: Mapping) -> dict:
    """The mapping in its YAML form; `mapping_from_dict` of it gives the same loop tree."""
    return {"name": mapping.name, "loop_tree": [_node_dict(n) for n in mapping.loop_tree]}


def _node_dict(node: Node) -> dict:
    if isinstance(node, Storage):
        return {"type": "storage", "memory": node.memory, "tensors": list(node.tensors)}
    if isinstance(node, Temporal):
        return {"type": "temporal", "rank": node.rank, "bound": node.bound}
    if isinstance(node, Spatial):
        return {"type": "spatial", "rank": node.rank, "bound": node.bound, "dim": node.dim}
    if isinstance(node, Compute):
        return {"type": "compute", "einsum": node.einsum}
    assert isinstance(node, Sequential)
    return {"type": "sequential", "branches": [[_node_dict(n) for n in b] for b in node.branches]}


def split_path(path: str) -> list[str | int]:
    """'memories.sram.ports[0].width_bits' -> ['memories', 'sram', 'ports', 0, 'width_bits']."""
    parts: list[str | int] = []
    for piece in re.split(r"\.|\[|\]", path):
        if piece == "":
            continue
        parts.append(int(piece) if piece.isdigit() else piece)
    if not parts:
        raise SpecError("an empty field path", field=path, expected="e.g. memories.sram.size_bits")
    return parts


def set_field(data: Any, path: str, value: Any, *, source: str = "<spec>") -> Any:
    """A deep copy of YAML-shaped data with the field at `path` set to `value`.

    Raise SpecError naming the path and what exists there when a step does not resolve.
    """
    out = copy.deepcopy(data)
    parts = split_path(path)
    value = _plain(value)
    node = out
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        where = _join(parts[: depth + 1])
        if isinstance(node, list):
            index = _list_index(node, part, where, source)
            if last:
                node[index] = value
            else:
                node = node[index]
        elif isinstance(node, dict):
            if part not in node and not (last or _optional_container(parts, depth)):
                raise SpecError(
                    "no such field to change",
                    file=source,
                    field=where,
                    expected=f"one of {sorted(map(str, node))}",
                )
            if last:
                node[part] = value
            else:
                node = node.setdefault(part, {})
        else:
            raise SpecError(
                "this field holds a value, not a mapping or list",
                file=source,
                field=_join(parts[:depth]),
                found=node,
            )
    return out


def _plain(value: Any) -> Any:
    """numpy and pandas scalars (a notebook's usual numbers) as the Python values YAML gives."""
    if hasattr(value, "item") and type(value).__module__ == "numpy":
        return value.item()
    return value


def _optional_container(parts: list, depth: int) -> bool:
    """A missing mapping on the way may be created (e.g. pe_array.no_multicast.X)."""
    return depth == len(parts) - 2 and isinstance(parts[depth], str)


def _list_index(items: list, part: str | int, where: str, source: str) -> int:
    if isinstance(part, int):
        if 0 <= part < len(items):
            return part
        raise SpecError(
            "list index out of range",
            file=source,
            field=where,
            found=part,
            expected=f"0 to {len(items) - 1}",
        )
    names = [item.get("name") for item in items if isinstance(item, dict)]
    for index, item in enumerate(items):
        if isinstance(item, dict) and item.get("name") == part:
            return index
    raise SpecError(
        "no item of this name", file=source, field=where, expected=f"one of {names or 'indices'}"
    )


def _join(parts: list) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else ("." if out else "") + str(p)
    return out


def architecture_with_field(arch: Architecture, path: str, value: Any) -> Architecture:
    """`arch` with one field changed (path as in the YAML, memories and ports by name), re-validated."""
    data = set_field(architecture_to_dict(arch), path, value, source=arch.source)
    return architecture_from_dict(data, f"{arch.source} with {path}={_plain(value)!r}")


def mapping_with_field(
    mapping: Mapping, path: str, value: Any, architecture: Architecture, workload: Workload
) -> Mapping:
    """`mapping` with one field changed (e.g. 'loop_tree[3].bound'), re-validated against both."""
    data = set_field(mapping_to_dict(mapping), path, value, source=mapping.source)
    return mapping_from_dict(
        data, architecture, workload, f"{mapping.source} with {path}={value!r}"
    )
