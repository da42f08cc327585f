"""Mapping spec: a loop tree (storage, temporal, spatial, sequential, compute nodes), outermost first."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import Field

from cyclesim.errors import SpecError
from cyclesim.spec.arch_types import Architecture
from cyclesim.spec.limits import MAX_RANK_SIZE
from cyclesim.spec.workload import Workload
from cyclesim.spec.yamlio import Lines, StrictModel, line_of, read_yaml, validate


class _StorageN(StrictModel):
    type: Literal["storage"]
    memory: str
    tensors: list[str] = Field(min_length=1)


class _TemporalN(StrictModel):
    type: Literal["temporal"]
    rank: str
    bound: int = Field(ge=1, le=MAX_RANK_SIZE)


class _SpatialN(StrictModel):
    type: Literal["spatial"]
    rank: str
    bound: int = Field(ge=1, le=MAX_RANK_SIZE)
    dim: str


class _ComputeN(StrictModel):
    type: Literal["compute"]
    einsum: str


class _SequentialN(StrictModel):
    type: Literal["sequential"]
    branches: list[list[_AnyNode]] = Field(min_length=1)


_AnyNode = Annotated[
    _StorageN | _TemporalN | _SpatialN | _ComputeN | _SequentialN, Field(discriminator="type")
]
_SequentialN.model_rebuild()


class _Mapping(StrictModel):
    name: str | None = None
    loop_tree: list[_AnyNode] = Field(min_length=1)


# ---------------------------------------------------------------- spec dataclasses
@dataclass(frozen=True, slots=True)
class Storage:
    memory: str
    tensors: tuple[str, ...]
    path: str = ""


@dataclass(frozen=True, slots=True)
class Temporal:
    rank: str
    bound: int
    path: str = ""


@dataclass(frozen=True, slots=True)
class Spatial:
    rank: str
    bound: int
    dim: str
    path: str = ""


@dataclass(frozen=True, slots=True)
class Compute:
    einsum: str
    path: str = ""


@dataclass(frozen=True, slots=True)
class Sequential:
    branches: tuple[tuple[Node, ...], ...]
    path: str = ""


Node = Storage | Temporal | Spatial | Compute | Sequential
Loop = Temporal | Spatial


@dataclass(frozen=True, slots=True)
class Mapping:
    loop_tree: tuple[Node, ...]
    name: str = "mapping"
    source: str = "<mapping>"
    lines: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    def with_field(
        self, path: str, value: Any, *, architecture: Architecture, workload: Workload
    ) -> Mapping:
        """A copy with one field changed by its path ('loop_tree[3].bound'), re-validated."""
        from cyclesim.spec.override import mapping_with_field

        return mapping_with_field(self, path, value, architecture, workload)

    def error(self, message: str, path: str, **kw: Any) -> SpecError:
        """A SpecError pointing at a node of this mapping file by its field path."""
        return SpecError(
            message, file=self.source, field=path, line=_line_for(self.lines, path), **kw
        )


def _line_for(lines: Lines, path: str) -> int | None:
    loc: list = []
    for part in path.replace("]", "").replace("[", ".").split("."):
        if part:
            loc.append(int(part) if part.isdigit() else part)
    return line_of(lines, tuple(loc))


def leaves(tree: tuple[Node, ...]) -> list[tuple[tuple[Node, ...], Compute]]:
    """Every compute node with the nodes above it (outermost first), in execution order."""
    out: list[tuple[tuple[Node, ...], Compute]] = []

    def walk(nodes: tuple[Node, ...], above: tuple[Node, ...]) -> None:
        for i, node in enumerate(nodes):
            if isinstance(node, Compute):
                out.append((above + nodes[:i], node))
                return
            if isinstance(node, Sequential):
                for branch in node.branches:
                    walk(branch, above + nodes[:i])
                return

    walk(tree, ())
    return out


def load_mapping(path: str, arch: Architecture, workload: Workload) -> Mapping:
    """Read a mapping YAML file and validate it against the architecture and workload."""
    data, lines, name = read_yaml(path)
    return mapping_from_dict(data, arch, workload, name, lines)


def mapping_from_dict(
    data: Any,
    arch: Architecture,
    workload: Workload,
    name: str = "<mapping>",
    lines: Lines | None = None,
) -> Mapping:
    """Validate a parsed mapping; every fault is one SpecError naming the node's field path."""
    lines = lines or {}
    raw: _Mapping = validate(_Mapping, data, lines, name, "mapping")  # type: ignore[assignment]
    tree = _convert(raw.loop_tree, "loop_tree")
    mapping = Mapping(tree, raw.name or "mapping", name, lines)
    check_mapping(mapping, arch, workload)
    return mapping


def _convert(nodes: list, prefix: str) -> tuple[Node, ...]:
    out: list[Node] = []
    for i, n in enumerate(nodes):
        path = f"{prefix}[{i}]"
        if isinstance(n, _StorageN):
            out.append(Storage(n.memory, tuple(n.tensors), path))
        elif isinstance(n, _TemporalN):
            out.append(Temporal(n.rank, n.bound, path))
        elif isinstance(n, _SpatialN):
            out.append(Spatial(n.rank, n.bound, n.dim, path))
        elif isinstance(n, _ComputeN):
            out.append(Compute(n.einsum, path))
        else:
            out.append(
                Sequential(
                    tuple(_convert(b, f"{path}.branches[{bi}]") for bi, b in enumerate(n.branches)),
                    path,
                )
            )
    return tuple(out)


def check_mapping(mapping: Mapping, arch: Architecture, workload: Workload) -> None:
    """Semantic checks of a loop tree against the architecture and workload.

    Over 80 lines: one recursive walk (check_list), then checks needing the whole tree."""
    err = mapping.error
    mem_names = [m.name for m in arch.memories]
    dims = arch.pe_array.dim_sizes
    seen_einsums: dict[str, str] = {}

    def check_list(nodes: tuple[Node, ...]) -> set[str]:
        """Check one node list; return the Einsums computed below it."""
        for i, node in enumerate(nodes):
            last = i == len(nodes) - 1
            if isinstance(node, (Compute, Sequential)) and not last:
                raise err(
                    f"a {type(node).__name__.lower()} node must be the last of its list",
                    nodes[i + 1].path,
                    expected="nothing after a compute or sequential node",
                )
            if last and not isinstance(node, (Compute, Sequential)):
                raise err("a loop-tree list must end with a compute or sequential node", node.path)
        below: set[str] = set()
        for node in reversed(nodes):
            if isinstance(node, Compute):
                if node.einsum not in [e.name for e in workload.einsums]:
                    raise err(
                        "compute node names an unknown Einsum",
                        node.path + ".einsum",
                        found=node.einsum,
                        expected=f"one of {[e.name for e in workload.einsums]}",
                    )
                if node.einsum in seen_einsums:
                    raise err(f"Einsum '{node.einsum}' is computed twice", node.path)
                seen_einsums[node.einsum] = node.path
                below = {node.einsum}
            elif isinstance(node, Sequential):
                for branch in node.branches:
                    below |= check_list(branch)
            elif isinstance(node, Storage):
                if node.memory not in mem_names:
                    raise err(
                        "storage node names an unknown memory",
                        node.path + ".memory",
                        found=node.memory,
                        expected=f"one of {mem_names}",
                    )
                mem = arch.memory(node.memory)
                used = {a.tensor for e in below for a in workload.einsum(e).accesses}
                for ti, t in enumerate(node.tensors):
                    tpath = f"{node.path}.tensors[{ti}]"
                    if t not in [x.name for x in workload.tensors]:
                        raise err(
                            "storage node names an unknown tensor",
                            tpath,
                            found=t,
                            expected=f"one of {[x.name for x in workload.tensors]}",
                        )
                    if not mem.holds(t):
                        raise err(
                            f"memory '{mem.name}' may not hold tensor {t} (architecture lists {list(mem.tensors or ())})",
                            tpath,
                        )
                    if t not in used:
                        raise err(f"tensor {t} is used by no Einsum below this storage node", tpath)
                if len(set(node.tensors)) != len(node.tensors):
                    raise err("a tensor is listed twice", node.path + ".tensors")
            else:
                ranks = {r for e in below for r in workload.einsum(e).rank_sizes}
                if node.rank not in ranks:
                    raise err(
                        "loop over a rank no Einsum below it has",
                        node.path + ".rank",
                        found=node.rank,
                        expected=f"one of {sorted(ranks)}",
                    )
                if isinstance(node, Spatial) and node.dim not in dims:
                    raise err(
                        "spatial loop over an unknown array dimension",
                        node.path + ".dim",
                        found=node.dim,
                        expected=f"one of {sorted(dims)}",
                    )
        return below

    check_list(mapping.loop_tree)
    for e in workload.einsums:
        if e.name not in seen_einsums:
            raise err(f"Einsum '{e.name}' has no compute node", "loop_tree")
    _check_order(mapping, workload)
    _check_paths(mapping, arch)
    _check_no_multicast(arch, workload)
    for above, comp in leaves(mapping.loop_tree):
        einsum = workload.einsum(comp.einsum)
        sizes = einsum.rank_sizes
        product = {r: 1 for r in sizes}
        spatial = {d: 1 for d in dims}
        for node in above:
            if isinstance(node, (Temporal, Spatial)):
                if node.rank not in sizes:
                    if node.bound != 1:
                        raise err(
                            f"loop over rank '{node.rank}' sits above Einsum '{einsum.name}', which has no such rank",
                            node.path,
                        )
                    continue
                product[node.rank] *= node.bound
                if isinstance(node, Spatial):
                    spatial[node.dim] *= node.bound
                    if spatial[node.dim] > dims[node.dim]:
                        raise err(
                            f"spatial loops over dimension {node.dim} unroll {spatial[node.dim]} > its size {dims[node.dim]}",
                            node.path,
                        )
        for r, s in sizes.items():
            if product[r] != s:
                # at the loop over r nearest the compute node (a wrong bound is on a loop's
                # line), else at the compute node: no loop covers the rank at all
                loops = [n for n in above if isinstance(n, (Temporal, Spatial)) and n.rank == r]
                bounds = " x ".join(str(n.bound) for n in loops)
                raise err(
                    f"loop bounds over rank '{r}' above Einsum '{einsum.name}' multiply to {product[r]}"
                    + (f" ({bounds})" if len(loops) > 1 else ""),
                    loops[-1].path if loops else comp.path,
                    found=product[r],
                    expected=f"{s} (the rank's size)",
                )
        kept = {t for node in above if isinstance(node, Storage) for t in node.tensors}
        for a in einsum.accesses:
            if a.tensor not in kept:
                raise err(
                    f"tensor {a.tensor} of Einsum '{einsum.name}' has no storage node above its compute node",
                    comp.path,
                )


def _check_order(mapping: Mapping, workload: Workload) -> None:
    """Refuse a consumer computed before the producer of one of its inputs (in tree order)."""
    done: dict[str, str] = {}  # Einsum -> path of its compute node
    computes = [compute for _, compute in leaves(mapping.loop_tree)]
    position = {c.einsum: i for i, c in enumerate(computes)}
    for compute in computes:
        for access in workload.einsum(compute.einsum).inputs:
            producer = workload.producer(access.tensor)
            if producer is None or producer.name in done:
                continue
            later = computes[position[producer.name]]
            raise mapping.error(
                f"Einsum '{compute.einsum}' reads tensor {access.tensor} before Einsum "
                f"'{producer.name}' (at {later.path}) produces it",
                compute.path,
                expected="the producer's branch before the consumer's",
            )
        done[compute.einsum] = compute.path


def _check_paths(mapping: Mapping, arch: Architecture) -> None:
    """On every path, each tensor's memories go strictly inward: none inverted, none twice (except
    an L1 with an allocator, where a second storage node is a staging buffer of its own)."""
    order = {m.name: i for i, m in enumerate(arch.memories)}

    def allocated(node: Storage) -> bool:
        # an L1 with an allocator may stage a tensor again in a buffer of its own (a copy)
        return arch.memory(node.memory).allocator is not None

    for above, _ in leaves(mapping.loop_tree):
        kept: dict[str, Storage] = {}
        for node in above:
            if not isinstance(node, Storage):
                continue
            for tensor in node.tensors:
                outer = kept.get(tensor)
                staged = outer is not None and outer.memory == node.memory and allocated(node)
                if outer is not None and order[outer.memory] >= order[node.memory] and not staged:
                    what = (
                        f"memory '{node.memory}' keeps tensor {tensor} twice on one path"
                        if outer.memory == node.memory
                        else f"tensor {tensor} is kept in '{node.memory}' below '{outer.memory}' "
                        "(at {outer.path}), which the architecture lists inside it"
                    )
                    raise mapping.error(
                        what.replace("{outer.path}", outer.path),
                        node.path,
                        expected="each tensor's storage nodes in architecture order, "
                        "outermost first, each memory once",
                    )
                kept[tensor] = node


def _check_no_multicast(arch: Architecture, workload: Workload) -> None:
    """Every tensor `no_multicast` and `double_buffered` name exists in the workload (a typo
    would silently multicast, or single-buffer; a memory with `tensors:` is checked on load)."""
    names = [t.name for t in workload.tensors]
    for mi, memory in enumerate(arch.memories):
        if isinstance(memory.double_buffered, bool):
            continue
        for index, tensor in enumerate(memory.double_buffered):
            if tensor not in names:
                raise arch.error(
                    f"double_buffered of memory '{memory.name}' names a tensor the workload "
                    "does not have",
                    ("memories", mi, "double_buffered", index),
                    found=tensor,
                    expected=f"one of {names}",
                )
    for dim, tensors in arch.pe_array.no_multicast:
        for index, tensor in enumerate(tensors):
            if tensor not in names:
                raise arch.error(
                    "no_multicast names a tensor the workload does not have",
                    ("pe_array", "no_multicast", dim, index),
                    found=tensor,
                    expected=f"one of {names}",
                )
