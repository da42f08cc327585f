"""AccelForge LoopTree mappings: read and validate `mapping:`, split per Einsum, write back YAML."""

from __future__ import annotations

from typing import Any

from cyclesim.checks.accelforge.read_fields import (
    Where,
    checked_mapping,
    field_number,
    require_list,
)
from cyclesim.checks.accelforge.read_yaml import TaggedNode
from cyclesim.checks.accelforge.spec import (
    SPATIAL_OF_COMPONENT,
    AfArch,
    AfComputeNode,
    AfContainer,
    AfEinsumPath,
    AfLoopNode,
    AfMappingNode,
    AfMemory,
    AfSplitNode,
    AfStorageNode,
    AfWorkload,
    LoopKind,
    SplitKind,
)

_SPLIT_KINDS = {"Sequential": SplitKind.SEQUENTIAL, "Pipeline": SplitKind.PIPELINE}


def read_mapping(
    section: Any, where: Where, arch: AfArch, workload: AfWorkload
) -> tuple[tuple[AfMappingNode, ...], tuple[AfEinsumPath, ...]]:
    """Read `mapping: {nodes: [...]}` and split it into one partial mapping per Einsum.

    Raise SpecError for unknown components or tensors, rank variables an Einsum does not have,
    tile shapes that do not divide, unsupported node kinds (named), and missing nodes.
    """
    fields = checked_mapping(section, where, "mapping", required=("nodes",))
    nodes = _read_nodes(fields["nodes"], where.child("nodes"), arch, workload)
    paths = []
    seen: set[str] = set()
    for path_nodes in _split(nodes):
        last = path_nodes[-1] if path_nodes else None
        if not isinstance(last, AfComputeNode):
            raise where.error("a branch of the mapping does not end with a !Compute node")
        if last.einsum in seen:
            raise Where(where.file, "mapping", last.line).error(
                f"Einsum '{last.einsum}' has two !Compute nodes"
            )
        seen.add(last.einsum)
        paths.append(_einsum_path(path_nodes, where, arch, workload))
    for einsum in workload.einsums:
        if einsum.name not in seen:
            raise where.error(f"Einsum '{einsum.name}' has no !Compute node in the mapping")
    order = {einsum.name: i for i, einsum in enumerate(workload.einsums)}
    return nodes, tuple(sorted(paths, key=lambda p: order[p.einsum]))


def _read_nodes(
    raw: Any, where: Where, arch: AfArch, workload: AfWorkload
) -> tuple[AfMappingNode, ...]:
    nodes: list[AfMappingNode] = []
    entries = require_list(raw, where, "mapping nodes")
    for index, entry in enumerate(entries):
        node_where = where.child(index, entry)
        if not isinstance(entry, TaggedNode):
            raise node_where.error(
                "a mapping node needs a tag", found=entry, expected="!Storage, !Temporal, ..."
            )
        node = _read_node(entry, node_where, arch, workload)
        if isinstance(node, AfSplitNode) and index != len(entries) - 1:
            raise node_where.error(f"!{entry.tag} must be the last node of its list")
        nodes.append(node)
    return tuple(nodes)


def _read_node(raw: TaggedNode, where: Where, arch: AfArch, workload: AfWorkload) -> AfMappingNode:
    tag = raw.tag
    if tag in _SPLIT_KINDS:
        fields = checked_mapping(raw, where, f"!{tag}", required=("nodes",))
        branches = []
        for index, branch in enumerate(
            require_list(fields["nodes"], where.child("nodes"), f"!{tag} nodes")
        ):
            branch_where = where.child("nodes").child(index, branch)
            if not isinstance(branch, TaggedNode) or branch.tag != "Nested":
                raise branch_where.error(
                    f"each branch of !{tag} must be a !Nested node", found=branch
                )
            nested = checked_mapping(branch, branch_where, "!Nested", required=("nodes",))
            branches.append(
                _read_nodes(nested["nodes"], branch_where.child("nodes"), arch, workload)
            )
        return AfSplitNode(kind=_SPLIT_KINDS[tag], branches=tuple(branches), line=raw.line)
    if tag == "Storage":
        return _read_storage(raw, where, arch, workload)
    if tag in ("Temporal", "Spatial"):
        return _read_loop(raw, where, arch)
    if tag == "Compute":
        fields = checked_mapping(raw, where, "!Compute", required=("einsum", "component"))
        einsum, component = str(fields["einsum"]), str(fields["component"])
        try:
            workload.einsum(einsum)
        except KeyError:
            raise where.child("einsum").error(
                f"unknown Einsum '{einsum}'", expected=", ".join(e.name for e in workload.einsums)
            ) from None
        if component != arch.compute.name:
            raise where.child("component").error(
                f"unknown compute component '{component}'", expected=arch.compute.name
            )
        return AfComputeNode(einsum=einsum, component=component, line=raw.line)
    raise where.error(
        f"mapping node kind !{tag} is not supported",
        found=f"!{tag}",
        expected="!Storage, !Temporal, !Spatial, !Compute, !Sequential, !Pipeline, !Nested",
    )


def _component(name: str, arch: AfArch, where: Where, kind: type, what: str):
    try:
        node = arch.node(name)
    except KeyError:
        raise where.child("component").error(
            f"unknown component '{name}'",
            expected=f"{what}: " + ", ".join(n.name for n in arch.nodes if isinstance(n, kind)),
        ) from None
    if not isinstance(node, kind):
        raise where.child("component").error(
            f"component '{name}' is not {what}", found=type(node).__name__[2:]
        )
    return node


def _read_storage(
    raw: TaggedNode, where: Where, arch: AfArch, workload: AfWorkload
) -> AfStorageNode:
    fields = checked_mapping(
        raw, where, "!Storage", required=("tensors", "component"), allowed=("persistent",)
    )
    if fields.get("persistent", False):
        raise where.child("persistent").error("persistent storage nodes are not supported")
    _component(str(fields["component"]), arch, where, AfMemory, "a !Memory")
    tensors = fields["tensors"]
    tensors = (
        [tensors]
        if isinstance(tensors, str)
        else require_list(tensors, where.child("tensors"), "tensors")
    )
    known = workload.tensor_names
    for tensor in tensors:
        if tensor not in known:
            raise where.child("tensors").error(
                f"!Storage of unknown tensor '{tensor}'",
                expected="a workload tensor: " + ", ".join(known),
            )
    if not tensors:
        raise where.child("tensors").error("a !Storage node keeps no tensor")
    return AfStorageNode(
        tensors=tuple(str(t) for t in tensors), component=str(fields["component"]), line=raw.line
    )


def _read_loop(raw: TaggedNode, where: Where, arch: AfArch) -> AfLoopNode:
    spatial = raw.tag == "Spatial"
    fields = checked_mapping(
        raw,
        where,
        f"!{raw.tag}",
        required=("rank_variable", "tile_shape") + (("name", "component") if spatial else ()),
        allowed=("initial_tile_shape",),
    )
    if fields.get("initial_tile_shape") is not None:
        raise where.child("initial_tile_shape").error(
            "initial_tile_shape (imperfect tiling) is not supported"
        )
    rank_variable = fields["rank_variable"]
    if not isinstance(rank_variable, str):
        raise where.child("rank_variable").error(
            "a loop runs over one rank variable", found=rank_variable
        )
    tile_shape = field_number(fields, "tile_shape", {}, where)
    if not isinstance(tile_shape, int) or tile_shape < 1:
        raise where.child("tile_shape").error(
            "a tile shape must be a positive integer", found=fields["tile_shape"]
        )
    component = dimension = None
    if spatial:
        container = arch.spatial_container(str(fields["component"]))
        if container is None:
            container = _component(
                str(fields["component"]), arch, where, AfContainer, "a !Container"
            )
        dimension = str(fields["name"])
        try:
            container.dimension(dimension)
        except KeyError:
            raise where.child("name").error(
                f"container '{container.name}' has no spatial dimension '{dimension}'",
                expected=", ".join(d.name for d in container.dimensions),
            ) from None
        component = container.name
    return AfLoopNode(
        kind=LoopKind.SPATIAL if spatial else LoopKind.TEMPORAL,
        rank_variable=rank_variable,
        tile_shape=tile_shape,
        component=component,
        dimension=dimension,
        line=raw.line,
    )


def _split(nodes: tuple[AfMappingNode, ...]):
    """Yield the node list from the root to each `!Compute` (AccelForge's DFS split)."""
    if nodes and isinstance(nodes[-1], AfSplitNode):
        for branch in nodes[-1].branches:
            for tail in _split(branch):
                yield nodes[:-1] + tail
        return
    yield nodes


def _einsum_path(nodes: tuple, where: Where, arch: AfArch, workload: AfWorkload) -> AfEinsumPath:
    compute = nodes[-1]
    einsum = workload.einsum(compute.einsum)
    relevant = set(einsum.tensor_names)
    kept: list = []
    for node in nodes[:-1]:
        if isinstance(node, AfComputeNode):
            raise Where(where.file, "mapping", node.line).error(
                "a !Compute node must be the last node of its branch"
            )
        if isinstance(node, AfStorageNode):
            tensors = tuple(t for t in node.tensors if t in relevant)
            if tensors:
                kept.append(
                    AfStorageNode(tensors=tensors, component=node.component, line=node.line)
                )
        else:
            kept.append(node)
    extents = dict(einsum.rank_variable_sizes)
    iterations = []
    stepped_by_one: set[str] = set()
    fanout_used: dict[tuple[str, str], int] = {}
    for node in kept:
        if not isinstance(node, AfLoopNode):
            continue
        node_where = Where(where.file, f"mapping (Einsum {einsum.name})", node.line)
        if node.rank_variable not in extents:
            raise node_where.error(
                f"rank variable '{node.rank_variable}' is not a rank variable of Einsum '{einsum.name}'",
                found=node.rank_variable,
                expected=", ".join(einsum.rank_variables),
            )
        extent = extents[node.rank_variable]
        if node.tile_shape > extent or extent % node.tile_shape:
            raise node_where.error(
                f"tile shape {node.tile_shape} of rank variable '{node.rank_variable}' does not divide "
                f"its enclosing extent {extent} (imperfect tiling is not supported)",
                found=node.tile_shape,
                expected="a divisor of " + str(extent),
            )
        iterations.append(extent // node.tile_shape)
        extents[node.rank_variable] = node.tile_shape
        if node.tile_shape == 1:
            stepped_by_one.add(node.rank_variable)
        if node.kind is LoopKind.SPATIAL:
            key = (node.component, node.dimension)
            fanout_used[key] = fanout_used.get(key, 1) * iterations[-1]
            limit = arch.node(node.component).dimension(node.dimension).fanout
            if fanout_used[key] > limit:
                raise node_where.error(
                    f"spatial loops use {fanout_used[key]} instances of {node.component}.{node.dimension} "
                    f"but its fan-out is {limit}",
                    expected=f"at most {limit}",
                )
    for rank_variable, size in einsum.rank_variable_sizes:
        if size > 1 and rank_variable not in stepped_by_one:
            raise Where(where.file, "mapping", compute.line).error(
                f"Einsum '{einsum.name}' has no loop with tile_shape 1 over rank variable "
                f"'{rank_variable}' (AccelForge requires one for every rank variable of size > 1)"
            )
    stored = {t for node in kept if isinstance(node, AfStorageNode) for t in node.tensors}
    for tensor in einsum.tensor_names:
        if tensor not in stored:
            raise Where(where.file, "mapping", compute.line).error(
                f"tensor '{tensor}' of Einsum '{einsum.name}' is not kept by any !Storage node above its !Compute"
            )
    return AfEinsumPath(
        einsum=einsum.name, nodes=(*kept, compute), loop_iterations=tuple(iterations)
    )


def looptree_yaml(nodes: tuple[AfMappingNode, ...], indent: int = 2) -> str:
    """Write LoopTree nodes as AccelForge mapping YAML (`mapping: nodes: ...`)."""
    lines = ["mapping:", "  nodes:"]
    lines += _emit(nodes, indent)
    return "\n".join(lines) + "\n"


def _emit(nodes: tuple[AfMappingNode, ...], depth: int) -> list[str]:
    pad = "  " * depth
    lines = []
    for node in nodes:
        if isinstance(node, AfStorageNode):
            lines.append(
                f"{pad}- !Storage {{tensors: [{', '.join(node.tensors)}], component: {node.component}}}"
            )
        elif isinstance(node, AfLoopNode) and node.kind is LoopKind.TEMPORAL:
            lines.append(
                f"{pad}- !Temporal {{rank_variable: {node.rank_variable}, tile_shape: {node.tile_shape}}}"
            )
        elif isinstance(node, AfLoopNode):
            lines.append(
                f"{pad}- !Spatial {{rank_variable: {node.rank_variable}, tile_shape: {node.tile_shape}, "
                f"name: {node.dimension}, "
                f"component: {node.component.removesuffix(SPATIAL_OF_COMPONENT)}}}"
            )
        elif isinstance(node, AfComputeNode):
            lines.append(f"{pad}- !Compute {{einsum: {node.einsum}, component: {node.component}}}")
        else:
            lines.append(f"{pad}- !{node.kind.value.capitalize()}")
            lines.append(f"{pad}  nodes:")
            for branch in node.branches:
                lines.append(f"{pad}  - !Nested")
                lines.append(f"{pad}    nodes:")
                lines += _emit(branch, depth + 2)
    return lines
