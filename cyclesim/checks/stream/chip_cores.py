"""The chip's cores and interconnect from Stream's accelerator: each compute core's ZigZag
architecture with its tensors renamed to the ONNX names and merged over the layers it runs, the
off-chip core as the DRAM port, and Stream's links and buses (chip_dict)."""

from __future__ import annotations

import dataclasses
from typing import Any

from cyclesim.checks.stream.model import CoreKind, StreamAccelerator
from cyclesim.errors import SpecError

OFFCHIP = "dram"


def core_name(core_id: int) -> str:
    return f"c{core_id}"


def renamed_architecture(arch: Any, names: dict[str, str]) -> Any:
    memories = []
    for m in arch.memories:
        ports = tuple(
            dataclasses.replace(p, serves=tuple((names.get(t, t), d) for t, d in p.serves))
            if p.serves is not None
            else p
            for p in m.ports
        )
        doubled = (
            tuple(names.get(t, t) for t in m.double_buffered)
            if not isinstance(m.double_buffered, bool)
            else m.double_buffered
        )
        tensors = None if m.tensors is None else tuple(names.get(t, t) for t in m.tensors)
        memories.append(
            dataclasses.replace(m, tensors=tensors, double_buffered=doubled, ports=ports)
        )
    return dataclasses.replace(arch, memories=tuple(memories))


def merged(old: Any, new: Any) -> Any:
    """One core running several layers: its memories hold and its ports serve all their tensors."""
    if old is None:
        return new
    if [m.name for m in old.memories] != [m.name for m in new.memories]:
        raise SpecError(f"core '{new.name}': two layers use different memories of it")

    def union(a: tuple, b: tuple) -> tuple:
        return a + tuple(x for x in b if x not in a)

    memories = []
    for a, b in zip(old.memories, new.memories, strict=True):
        ports = tuple(
            dataclasses.replace(p, serves=union(p.serves, q.serves))
            if p.serves is not None and q.serves is not None
            else p
            for p, q in zip(a.ports, b.ports, strict=True)
        )
        doubled = (
            _doubled(a, b)
            if not isinstance(a.double_buffered, bool) and not isinstance(b.double_buffered, bool)
            else a.double_buffered
        )
        memories.append(
            dataclasses.replace(
                a,
                tensors=union(a.tensors or (), b.tensors or ()),
                double_buffered=doubled,
                ports=ports,
            )
        )
    return dataclasses.replace(old, memories=tuple(memories))


def _doubled(a: Any, b: Any) -> tuple[str, ...]:
    """Two slots for a tensor only where every layer that keeps it in this memory gives it two
    (a layer's output may be too large to double where its reader's input tile is not)."""
    held_a, held_b = set(a.tensors or ()), set(b.tensors or ())
    out = [t for t in a.double_buffered if t not in held_b or t in b.double_buffered]
    out += [t for t in b.double_buffered if t not in held_a and t not in out]
    return tuple(out)


def renamed_tree(nodes: list[dict], names: dict[str, str]) -> list[dict]:
    out = []
    for n in nodes:
        n = dict(n)
        if n["type"] == "storage":
            n["tensors"] = [names.get(t, t) for t in n["tensors"]]
        elif n["type"] == "sequential":
            n["branches"] = [renamed_tree(b, names) for b in n["branches"]]
        out.append(n)
    return out


def chip_dict(accelerator: StreamAccelerator, architectures: dict, to_dict: Any) -> dict:
    used = set(architectures)
    offchip = accelerator.core(accelerator.offchip_core_id)
    present = {c: core_name(c) for c in used} | {accelerator.offchip_core_id: OFFCHIP}
    links, buses = [], []
    alive = {index for _, _, index in accelerator.channels}
    for c in accelerator.connections:
        if c.index not in alive:
            continue
        members = [present[x] for x in c.cores if x in present]
        if len(members) < 2:
            continue
        width = int(c.bandwidth)
        if c.kind.value == "link":
            links.append({"name": f"link{c.index}", "cores": members, "width_bits": width,
                          "latency_cycles": 0, "bidirectional": True})  # fmt: skip
        else:
            buses.append(
                {
                    "name": f"bus{c.index}",
                    "cores": members,
                    "width_bits": width,
                    "latency_cycles": 0,
                }
            )
    if offchip.kind is not CoreKind.OFFCHIP:  # pragma: no cover - the reader checks it
        raise SpecError("the off-chip core is not an off-chip core")
    return {
        "name": accelerator.name,
        "cores": [
            {"name": core_name(c), "architecture": to_dict(architectures[c])} for c in sorted(used)
        ],
        "offchip": {
            "name": OFFCHIP,
            "ports": [
                {
                    "name": "rw",
                    "kind": "read_write",
                    "width_bits": offchip.top_port_bits,
                    "latency_cycles": 0,
                    "burst_bits": offchip.top_port_bits,
                }
            ],  # fmt: skip
        },
        "interconnect": {"links": links, "buses": buses},
    }
