"""Read Stream's own input files (accelerator YAML, its core YAMLs, mapping YAML, ONNX nodes).

Every fault is a SpecError naming file, field and line (exit 2 at the CLI). The YAML reading is
the ZigZag adapter's `Reader` (PyYAML semantics, as Stream reads them); compute cores are
ZigZag core files checked by the ZigZag adapter's own reader.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from cyclesim.checks.stream.model import (
    Connection,
    ConnectionKind,
    CoreKind,
    FusedGroup,
    LayerMapping,
    OnnxNode,
    StreamAccelerator,
    StreamCore,
    StreamMapping,
)
from cyclesim.checks.zigzag.read_accelerator import parse_accelerator
from cyclesim.checks.zigzag.reader import Reader
from cyclesim.errors import SpecError

ACCELERATOR_FIELDS = {
    "name", "kernel_library", "cores", "offchip_core_id", "bandwidth", "reconfiguration",
    "unit_energy_cost", "core_connectivity", "core_memory_sharing", "core_coordinates",
    "technology_node", "memory_aliases",
}  # fmt: skip
# read and kept, but with no counterpart in the replay: the importer refuses them by name
UNMODELLED_FIELDS = (
    "bandwidth",
    "core_memory_sharing",
    "memory_aliases",
    "reconfiguration",
    "kernel_library",
)
CORE_FIELDS = frozenset({"type", "operator_types", "operand_precision", "banks", "utilization"})
CORE_TYPES = {
    "zigzag.compute": CoreKind.COMPUTE, "compute": CoreKind.COMPUTE,
    "zigzag.offchip": CoreKind.OFFCHIP, "offchip": CoreKind.OFFCHIP,
    "zigzag.memory": CoreKind.MEMORY, "memory": CoreKind.MEMORY,
}  # fmt: skip
DIM = re.compile(r"^D\d+$")
GROUP_DIM = re.compile(r"^(.+)\.(D\d+)$")


def read_accelerator(path: str | Path) -> StreamAccelerator:
    """Read a Stream accelerator YAML and its core files; connections resolved last-listed-wins."""
    r = Reader(str(path))
    top = r.mapping(r.data, (), ACCELERATOR_FIELDS, {"name", "cores", "offchip_core_id"})
    name = r.string(top["name"], ("name",))
    cores_data = top["cores"]
    if not isinstance(cores_data, dict) or not cores_data:
        r.fail(("cores",), "must map core ids to core files", found=cores_data)
    offchip = r.integer(top["offchip_core_id"], ("offchip_core_id",), 0)
    if offchip not in cores_data:
        r.fail(
            ("offchip_core_id",),
            "names no core",
            found=offchip,
            expected=f"one of {', '.join(map(str, cores_data))}",
        )
    cores = tuple(
        _read_core(r, Path(path), r.integer(core_id, ("cores", core_id), 0), entry)
        for core_id, entry in cores_data.items()
    )
    if cores[[c.id for c in cores].index(offchip)].kind is not CoreKind.OFFCHIP:
        r.fail(
            ("offchip_core_id",), "names a core whose type is not an off-chip core", found=offchip
        )
    default_energy = top.get("unit_energy_cost", 0)
    connections = tuple(
        _read_connection(r, i, entry, set(cores_data), default_energy)
        for i, entry in enumerate(
            r.listing(top.get("core_connectivity") or [], ("core_connectivity",))
        )
    )
    unmodelled = tuple(k for k in UNMODELLED_FIELDS if top.get(k))
    return StreamAccelerator(
        name, str(path), cores, offchip, connections, resolve_channels(connections), unmodelled
    )


def resolve_channels(connections: tuple[Connection, ...]) -> tuple[tuple[int, int, int], ...]:
    """Per ordered core pair, the connection Stream's DiGraph keeps: a later edge between the
    same two cores replaces an earlier one, so the entry listed last wins."""
    winner: dict[tuple[int, int], int] = {}
    for c in connections:
        pairs = (
            [(c.cores[0], c.cores[1]), (c.cores[1], c.cores[0])]
            if c.kind is ConnectionKind.LINK
            else [(a, b) for a in c.cores for b in c.cores if a != b]
        )
        for pair in pairs:
            winner[pair] = c.index
    return tuple((a, b, index) for (a, b), index in sorted(winner.items()))


def _core_file(r: Reader, accelerator: Path, core_id: int, entry: Any) -> Path:
    """Where Stream finds a core file: `<accelerator dir>/cores/<file>`, then next to the
    accelerator. (Stream's third place, anywhere under stream/inputs/ relative to the working
    directory, depends on where it is run from and is not followed.)"""
    if isinstance(entry, dict):
        r.fail(("cores", core_id), "an inline core definition is not read: put the core in a file")
    text = r.string(entry, ("cores", core_id))
    folder = accelerator.parent
    for candidate in (folder / "cores" / text, folder / text):
        if candidate.is_file():
            return candidate
    r.fail(
        ("cores", core_id),
        "core file not found",
        found=text,
        expected=f"a file in {folder / 'cores'} or {folder}",
    )


def _read_core(r: Reader, accelerator: Path, core_id: int, entry: Any) -> StreamCore:
    file = _core_file(r, accelerator, core_id, entry)
    core = Reader(str(file))
    data = core.data
    if not isinstance(data, dict):
        core.fail((), "a core file is a mapping", found=type(data).__name__)
    kind_text = core.string(data.get("type", "zigzag.compute"), ("type",))
    if kind_text not in CORE_TYPES:
        core.fail(
            ("type",),
            "core type not replayed (AIE cores and shim tiles have no ZigZag model)",
            found=kind_text,
            expected=", ".join(CORE_TYPES),
        )
    kind = CORE_TYPES[kind_text]
    operators = None
    if data.get("operator_types") is not None:
        operators = tuple(
            core.string(x, ("operator_types", i))
            for i, x in enumerate(core.listing(data["operator_types"], ("operator_types",)))
        )
    memories = data.get("memories")
    if not isinstance(memories, dict) or not memories:
        core.fail(("memories",), "must map memory names to memories", found=memories)
    zigzag = (
        parse_accelerator(str(file), extra_fields=CORE_FIELDS) if kind is CoreKind.COMPUTE else None
    )
    top_memory, top_bits = _top_memory(core, memories)
    name = core.string(data.get("name", file.stem), ("name",))
    return StreamCore(
        core_id, str(file), name, kind, kind_text, operators, zigzag, top_memory, top_bits
    )


def _top_memory(core: Reader, memories: dict) -> tuple[str, int]:
    """The last-listed memory that serves the most operands (ZigZag's top level), and its widest port."""
    best, served = None, -1
    for name, memory in memories.items():
        operands = memory.get("operands") if isinstance(memory, dict) else None
        if not isinstance(operands, list):
            core.fail(
                ("memories", name, "operands"), "must be a list of memory operands", found=operands
            )
        if len(operands) >= served:
            best, served = name, len(operands)
    ports = memories[best].get("ports") or []
    widths = [
        core.integer(p.get("bandwidth_max", 0), ("memories", best, "ports", i, "bandwidth_max"), 0)
        for i, p in enumerate(core.listing(ports, ("memories", best, "ports")))
        if isinstance(p, dict)
    ]
    return str(best), max(widths, default=0)


def _read_connection(
    r: Reader, index: int, entry: Any, core_ids: set, default_energy: Any
) -> Connection:
    path = ("core_connectivity", index)
    data = r.mapping(
        entry,
        path,
        {"type", "cores", "bandwidth", "unit_energy_cost"},
        {"type", "cores", "bandwidth"},
    )
    kind_text = r.string(data["type"], path + ("type",))
    if kind_text not in ("link", "bus"):
        r.fail(path + ("type",), "unknown connection type", found=kind_text, expected="link or bus")
    kind = ConnectionKind(kind_text)
    cores = tuple(
        r.integer(c, path + ("cores", i), 0)
        for i, c in enumerate(r.listing(data["cores"], path + ("cores",)))
    )
    for i, c in enumerate(cores):
        if c not in core_ids:
            r.fail(
                path + ("cores", i), "names no core", found=c, expected=f"one of {sorted(core_ids)}"
            )
    if kind is ConnectionKind.LINK and len(cores) != 2:
        r.fail(path + ("cores",), "a link joins exactly two cores", found=list(cores))
    if kind is ConnectionKind.BUS and len(set(cores)) < 2:
        r.fail(path + ("cores",), "a bus joins at least two cores", found=list(cores))
    bandwidth = r.number(data["bandwidth"], path + ("bandwidth",))
    if bandwidth <= 0:
        r.fail(path + ("bandwidth",), "must be positive (bits per cycle)", found=data["bandwidth"])
    energy = r.number(data.get("unit_energy_cost", default_energy), path + ("unit_energy_cost",))
    return Connection(index, kind, cores, bandwidth, energy)


def read_mapping(path: str | Path) -> StreamMapping:
    """Read a Stream mapping YAML (layers, fused_groups, runtime_args)."""
    r = Reader(str(path))
    top = r.mapping(r.data, (), {"layers", "fused_groups", "runtime_args"}, {"layers"})
    layers = []
    for i, entry in enumerate(r.listing(top["layers"], ("layers",))):
        base = ("layers", i)
        d = r.mapping(
            entry, base, {"name", "core_allocation", "inter_core_tiling", "kernel"}, {"name"}
        )
        allocation = tuple(
            tuple(
                r.integer(c, base + ("core_allocation", j, k), 0)
                for k, c in enumerate(r.listing(group, base + ("core_allocation", j)))
            )
            for j, group in enumerate(
                r.listing(d.get("core_allocation") or [], base + ("core_allocation",))
            )
        )
        tilings = []
        for j, group in enumerate(
            r.listing(d.get("inter_core_tiling") or [], base + ("inter_core_tiling",))
        ):
            splits = []
            for k, split in enumerate(r.listing(group, base + ("inter_core_tiling", j))):
                p = base + ("inter_core_tiling", j, k)
                s = r.mapping(split, p, {"dim", "split"}, {"dim", "split"})
                dim = r.string(s["dim"], p + ("dim",))
                if not DIM.match(dim):
                    r.fail(
                        p + ("dim",),
                        "a dim is D<n>, numbered per node",
                        found=dim,
                        expected="D0, D1, ...",
                    )
                splits.append((dim, r.integer(s["split"], p + ("split",), 1)))
            tilings.append(tuple(splits))
        layers.append(
            LayerMapping(r.string(d["name"], base + ("name",)), allocation, tuple(tilings))
        )
    groups = []
    for i, entry in enumerate(r.listing(top.get("fused_groups") or [], ("fused_groups",))):
        base = ("fused_groups", i)
        d = r.mapping(entry, base, {"name", "layers", "intra_core_tiling"}, {"name", "layers"})
        names = tuple(
            r.string(x, base + ("layers", j))
            for j, x in enumerate(r.listing(d["layers"], base + ("layers",)))
        )
        tiles = []
        for j, tile in enumerate(
            r.listing(d.get("intra_core_tiling") or [], base + ("intra_core_tiling",))
        ):
            p = base + ("intra_core_tiling", j)
            t = r.mapping(tile, p, {"dim", "tile"}, {"dim", "tile"})
            text = r.string(t["dim"], p + ("dim",))
            match = GROUP_DIM.match(text)
            if not match:
                r.fail(
                    p + ("dim",),
                    "names a layer's dim",
                    found=text,
                    expected="<layer>.D<n>, e.g. Conv1.D2",
                )
            if match.group(1) not in names:
                r.fail(
                    p + ("dim",),
                    f"layer '{match.group(1)}' is not in this group",
                    found=text,
                    expected=", ".join(names),
                )
            tiles.append((match.group(1), match.group(2), r.integer(t["tile"], p + ("tile",), 1)))
        groups.append(FusedGroup(r.string(d["name"], base + ("name",)), names, tuple(tiles)))
    return StreamMapping(str(path), tuple(layers), tuple(groups))


def read_onnx_nodes(path: str | Path) -> tuple[OnnxNode, ...]:
    """The nodes of an ONNX workload (names, operator types, tensors); shapes are Stream's business."""
    try:
        import onnx
    except ImportError:  # pragma: no cover - onnx comes with zigzag-dse
        raise SpecError(
            "reading an ONNX workload needs the onnx package: `make peers` installs it "
            "(with zigzag-dse), or pip install onnx",
            file=str(path),
        ) from None
    try:
        model = onnx.load(str(path), load_external_data=False)
    except FileNotFoundError:
        raise SpecError("workload file not found", file=str(path)) from None
    except Exception as exc:  # noqa: BLE001 -- onnx raises DecodeError and friends
        raise SpecError(f"not an ONNX model ({type(exc).__name__})", file=str(path)) from None
    nodes = tuple(
        OnnxNode(n.name or f"{n.op_type}_{i}", n.op_type, tuple(n.input), tuple(n.output))
        for i, n in enumerate(model.graph.node)
    )
    if not nodes:
        raise SpecError("the ONNX graph has no nodes", file=str(path), field="graph.node")
    return nodes


def check_mapping(
    mapping: StreamMapping, accelerator: StreamAccelerator, nodes: tuple[OnnxNode, ...]
) -> None:
    """Cross-check a mapping against the accelerator and the workload, as Stream would fail on it."""
    r = Reader(mapping.file)
    names = {n.name for n in nodes} | {n.op_type for n in nodes} | {"default"}
    compute = {c.id for c in accelerator.cores if c.kind is CoreKind.COMPUTE}
    for i, layer in enumerate(mapping.layers):
        if layer.name not in names:
            r.fail(
                ("layers", i, "name"),
                "matches no node name or operator type of the workload",
                found=layer.name,
            )
        for j, group in enumerate(layer.core_allocation):
            for k, core in enumerate(group):
                if core not in compute:
                    r.fail(
                        ("layers", i, "core_allocation", j, k),
                        "is not a compute core of the accelerator",
                        found=core,
                        expected=f"one of {sorted(compute)}",
                    )
        for j, (group, splits) in enumerate(
            zip(layer.core_allocation, layer.inter_core_tiling, strict=False)
        ):
            product = 1
            for _, split in splits:
                product *= split
            if product != len(group):
                r.fail(
                    ("layers", i, "inter_core_tiling", j),
                    f"splits multiply to {product} but the allocation lists {len(group)} cores",
                    found=[f"{d}: {s}" for d, s in splits],
                )
    node_names = {n.name for n in nodes}
    for i, group in enumerate(mapping.groups):
        for j, layer in enumerate(group.layers):
            if layer not in node_names:
                r.fail(
                    ("fused_groups", i, "layers", j), "names no node of the workload", found=layer
                )
