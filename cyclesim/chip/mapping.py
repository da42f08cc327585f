"""The multi-core mapping: per layer, which cores run which part of it (a split of ranks across
cores), the tile that cuts each core's part into steps, and per core its loop tree of one step
(the single-core mapping format, unchanged); per tensor between layers, where it lives (kept on
the producing core, sent over the interconnect, or written to DRAM and read back); which layers
are fused (their steps interleave on a core).

Loaded into frozen dataclasses against a Chip and a Workload; every fault is one SpecError
naming file, field and line.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from cyclesim.chip.arch import Chip
from cyclesim.errors import SpecError
from cyclesim.spec.limits import MAX_RANK_SIZE
from cyclesim.spec.mapping import (
    Mapping,
    Storage,
    _AnyNode,
    _check_no_multicast,
    _convert,
    check_mapping,
)
from cyclesim.spec.workload import Einsum, Workload
from cyclesim.spec.yamlio import Lines, StrictModel, format_path, line_of, read_yaml, validate


class Via(enum.Enum):
    """How a tensor reaches the cores that read it."""

    NETWORK = "network"  # over links or a bus, from where it is to the consumer's top memory
    DRAM = "dram"  # written to the off-chip memory by its producer, read back by its consumer
    KEPT = "kept"  # already on the consumer's core (its producer ran there): nothing moves


class _Split(StrictModel):
    rank: str
    parts: int = Field(ge=1, le=MAX_RANK_SIZE)


class _Tile(StrictModel):
    rank: str
    size: int = Field(ge=1, le=MAX_RANK_SIZE)


class _Layer(StrictModel):
    einsum: str
    cores: list[str] = Field(min_length=1)
    split: list[_Split] = Field([], description="ranks cut across cores; parts multiply to cores")
    tile: list[_Tile] = Field([], description="per core, the step's extent along each rank")
    loop_tree: list[_AnyNode] | str | None = Field(
        None, description="one step's loop tree for every core (inline, or a mapping file)"
    )
    loop_trees: dict[str, list[_AnyNode] | str] = Field(
        {}, description="core -> one step's loop tree on that core"
    )


class _Tensor(StrictModel):
    tensor: str
    home: str = Field(
        "dram",
        description="inputs: where they start (dram, a core, or local: on every core that reads "
        "them); outputs: dram or kept",
    )
    via: Literal["network", "dram", "kept"] = "network"
    route: list[str] | None = Field(None, description="links/buses the transfer may use")
    multicast: bool = Field(True, description="one transfer to every core needing the same part")


class _Group(StrictModel):
    layers: list[str] = Field(min_length=1)


class _ChipMapping(StrictModel):
    name: str | None = None
    layers: list[_Layer] = Field(min_length=1)
    groups: list[_Group] = Field([], description="fused layers; default: one group per layer")
    tensors: list[_Tensor] = []


@dataclass(frozen=True, slots=True)
class LayerMapping:
    """One layer on its cores: split ranks (parts multiply to the core count; cores take the
    parts in row-major order of the split list), step tile per core, loop tree per core."""

    einsum: str
    cores: tuple[str, ...]
    split: tuple[tuple[str, int], ...]  # (rank, parts)
    tile: tuple[tuple[str, int], ...]  # (rank, extent of one step on one core)
    loop_trees: tuple[tuple[str, Mapping], ...]  # (core, one step's loop tree)
    step_workload: Workload  # the layer cut to one step's extent (what each loop tree maps)
    path: str = ""

    def loop_tree(self, core: str) -> Mapping:
        return dict(self.loop_trees)[core]


@dataclass(frozen=True, slots=True)
class TensorPlacement:
    tensor: str
    home: str  # network input: 'dram', 'local' or a core; output: 'dram' or 'kept'; intermediate: unused
    via: Via
    route: tuple[str, ...] | None  # None: any link/bus, shortest route
    multicast: bool
    path: str = ""


@dataclass(frozen=True, slots=True)
class ChipMapping:
    name: str
    layers: tuple[LayerMapping, ...]  # workload order
    groups: tuple[tuple[str, ...], ...]  # in run order; layers of one group interleave per step
    tensors: tuple[TensorPlacement, ...]  # every tensor of the workload (defaults filled in)
    source: str = "<chip mapping>"
    lines: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    def layer(self, einsum: str) -> LayerMapping:
        for lm in self.layers:
            if lm.einsum == einsum:
                return lm
        raise KeyError(einsum)

    def placement(self, tensor: str) -> TensorPlacement:
        for t in self.tensors:
            if t.tensor == tensor:
                return t
        raise KeyError(tensor)

    def error(self, message: str, loc: tuple | str = (), **kw: Any) -> SpecError:
        loc = _loc(loc) if isinstance(loc, str) else loc
        return SpecError(
            message, file=self.source, field=format_path(loc) or None,
            line=line_of(self.lines, loc), **kw,
        )  # fmt: skip


def load_chip_mapping(path: str, chip: Chip, workload: Workload) -> ChipMapping:
    """Read and validate a multi-core mapping YAML file against the chip and the workload."""
    data, lines, name = read_yaml(path)
    return chip_mapping_from_dict(data, chip, workload, name, lines)


def chip_mapping_from_dict(
    data: Any, chip: Chip, workload: Workload, name: str = "<chip mapping>",
    lines: Lines | None = None,
) -> ChipMapping:  # fmt: skip
    """Validate a parsed multi-core mapping; every fault is one SpecError."""
    lines = lines or {}
    raw: _ChipMapping = validate(_ChipMapping, data, lines, name, "chip mapping")  # type: ignore[assignment]

    def err(msg: str, loc: tuple, **kw: Any) -> SpecError:
        return SpecError(msg, file=name, field=format_path(loc), line=line_of(lines, loc), **kw)

    einsums = [e.name for e in workload.einsums]
    for core in chip.core_names:  # the names a core's memories and PEs single out: any layer's
        _check_no_multicast(chip.core(core).architecture, workload)
    by_name: dict[str, LayerMapping] = {}
    for li, layer in enumerate(raw.layers):
        loc = ("layers", li)
        if layer.einsum not in einsums:
            raise err("names an unknown Einsum", loc + ("einsum",), found=layer.einsum,
                      expected=f"one of {einsums}")  # fmt: skip
        if layer.einsum in by_name:
            raise err("this Einsum is mapped twice", loc + ("einsum",), found=layer.einsum)
        by_name[layer.einsum] = _layer(layer, workload.einsum(layer.einsum), workload, chip, loc,
                                       name, lines, err)  # fmt: skip
    for e in einsums:
        if e not in by_name:
            raise err(f"Einsum '{e}' is mapped to no core", ("layers",),
                      expected="one entry in layers per Einsum of the workload")  # fmt: skip
    groups = _groups(raw.groups, einsums, workload, err)
    tensors = _tensors(raw.tensors, workload, chip, err)
    _check_dram_routes(chip, workload, tuple(by_name.values()), tensors, lines, name)
    return ChipMapping(
        raw.name or "chip mapping", tuple(by_name[e] for e in einsums), groups, tensors, name, lines
    )


def _layer(
    layer: _Layer, einsum: Einsum, workload: Workload, chip: Chip, loc: tuple, name: str,
    lines: Lines, err: Any,
) -> LayerMapping:  # fmt: skip
    for ci, c in enumerate(layer.cores):
        if c not in chip.core_names:
            raise err("names an unknown core", loc + ("cores", ci), found=c,
                      expected=f"one of {list(chip.core_names)}")  # fmt: skip
    if len(set(layer.cores)) != len(layer.cores):
        raise err("a core is listed twice", loc + ("cores",), found=layer.cores)
    sizes = einsum.rank_sizes
    part = dict(sizes)
    for si, s in enumerate(layer.split):
        where = loc + ("split", si)
        if s.rank not in sizes:
            raise err(f"Einsum '{einsum.name}' has no such rank", where + ("rank",), found=s.rank,
                      expected=f"one of {sorted(sizes)}")  # fmt: skip
        if part[s.rank] % s.parts:
            raise err(f"rank '{s.rank}' ({part[s.rank]}) does not split into {s.parts} equal parts",
                      where + ("parts",), found=s.parts)  # fmt: skip
        part[s.rank] //= s.parts
    parts = math.prod(s.parts for s in layer.split)
    if parts != len(layer.cores):
        raise err(f"the split makes {parts} parts for {len(layer.cores)} cores", loc + ("split",),
                  expected="split parts multiplying to the number of cores")  # fmt: skip
    step = dict(part)
    for ti, t in enumerate(layer.tile):
        where = loc + ("tile", ti)
        if t.rank not in sizes:
            raise err(f"Einsum '{einsum.name}' has no such rank", where + ("rank",), found=t.rank,
                      expected=f"one of {sorted(sizes)}")  # fmt: skip
        if step[t.rank] != part[t.rank] or part[t.rank] % t.size:
            raise err(f"a tile of {t.size} does not divide rank '{t.rank}' ({part[t.rank]} per "
                      "core, each rank tiled once)", where + ("size",), found=t.size)  # fmt: skip
        step[t.rank] = t.size
    step_einsum = Einsum(einsum.name, tuple((r, step[r]) for r, _ in einsum.ranks), einsum.inputs,
                         einsum.output, einsum.is_copy)  # fmt: skip
    used = [a.tensor for a in einsum.accesses]
    step_work = Workload((step_einsum,), tuple(t for t in workload.tensors if t.name in used),
                         f"{workload.name}/{einsum.name}", workload.source)  # fmt: skip
    trees = []
    for core in layer.cores:
        tree, tloc = layer.loop_trees.get(core), loc + ("loop_trees", core)
        if tree is None:
            tree, tloc = layer.loop_tree, loc + ("loop_tree",)
        if tree is None:
            raise err(f"no loop tree for core '{core}'", loc,
                      expected="loop_tree (every core) or loop_trees: {core: ...}")  # fmt: skip
        arch = step_architecture(chip.core(core).architecture, step_work)
        trees.append((core, _loop_tree(tree, tloc, arch, step_work, name, lines)))
    for core in layer.loop_trees:
        if core not in layer.cores:
            raise err("a loop tree for a core this layer does not run on",
                      loc + ("loop_trees", core), found=core, expected=f"one of {layer.cores}")  # fmt: skip
    return LayerMapping(einsum.name, tuple(layer.cores), tuple((s.rank, s.parts) for s in layer.split),
                        tuple((t.rank, t.size) for t in layer.tile), tuple(trees), step_work,
                        format_path(loc))  # fmt: skip


def _loop_tree(
    tree: Any, loc: tuple, arch: Any, work: Workload, name: str, lines: Lines
) -> Mapping:
    """One step's loop tree: inline (checked as a single-core mapping, errors at this field) or a
    single-core mapping file relative to the chip mapping."""
    if isinstance(tree, str):
        from cyclesim.spec.mapping import load_mapping

        path = Path(tree) if Path(tree).is_absolute() else Path(name).parent / tree
        if not path.is_file():
            raise SpecError("no such mapping file", file=name, field=format_path(loc),
                            line=line_of(lines, loc), found=tree)  # fmt: skip
        mapping = load_mapping(str(path), arch, work)
        _in_top_memory(mapping, arch, loc, name, lines)
        _compiles(mapping, arch, work)
        return mapping
    sub = {("loop_tree",) + k[len(loc) :]: v for k, v in lines.items() if k[: len(loc)] == loc}
    mapping = Mapping(_convert(tree, "loop_tree"), work.name, name, sub)
    try:
        check_mapping(mapping, arch, work)
    except SpecError as e:
        raise _at(e, loc, name) from None
    _in_top_memory(mapping, arch, loc, name, lines)
    try:
        _compiles(mapping, arch, work)
    except SpecError as e:
        raise _at(e, loc, name) from None
    return mapping


def _at(e: SpecError, loc: tuple, name: str) -> SpecError:
    """A single-core mapping error of an inline loop tree, at its field in the chip mapping."""
    field_ = format_path(loc) + (e.field or "").removeprefix("loop_tree")
    return SpecError(e.detail, file=name, field=field_, line=e.line, found=e.found,
                     expected=e.expected)  # fmt: skip


def _in_top_memory(mapping: Mapping, arch: Any, loc: tuple, name: str, lines: Lines) -> None:
    """Every tensor of a step is first kept in the core's top memory."""
    top = arch.memories[0].name
    first: dict[str, str] = {}
    for node in _walk(mapping.loop_tree):
        if isinstance(node, Storage):
            for t in node.tensors:
                first.setdefault(t, node.memory)
    for t, mem in first.items():
        if mem != top:
            raise SpecError(
                f"tensor {t} is first kept in '{mem}', not in the core's top memory '{top}', where "
                "a step's tiles arrive and leave", file=name, field=format_path(loc),
                line=line_of(lines, loc), expected=f"the loop tree's first storage node in '{top}'",
            )  # fmt: skip


def _walk(nodes: tuple) -> list:
    out = []
    for n in nodes:
        out.append(n)
        for b in getattr(n, "branches", ()):
            out.extend(_walk(b))
    return out


def _groups(raw: list[_Group], einsums: list[str], workload: Workload, err: Any) -> tuple:
    seen: dict[str, int] = {}
    groups = []
    for gi, g in enumerate(raw):
        for li, layer in enumerate(g.layers):
            if layer not in einsums:
                raise err("names an unknown Einsum", ("groups", gi, "layers", li), found=layer,
                          expected=f"one of {einsums}")  # fmt: skip
            if layer in seen:
                raise err("a layer is in two groups", ("groups", gi, "layers", li), found=layer)
            seen[layer] = gi
        groups.append(tuple(e for e in einsums if e in g.layers))  # workload order inside
    for e in einsums:  # ungrouped layers run alone, in workload order among the groups
        if e not in seen:
            groups.append((e,))
    order = {e: i for i, e in enumerate(einsums)}
    return tuple(sorted(groups, key=lambda g: order[g[0]]))


def _tensors(raw: list[_Tensor], workload: Workload, chip: Chip, err: Any) -> tuple:
    names = [t.name for t in workload.tensors]
    given: dict[str, TensorPlacement] = {}
    media = [m.name for m in chip.media]
    both_ways: dict[str, list[str]] = {}  # a bidirectional link's own name: its two directions
    for m in media:
        if m.endswith("]") and "[" in m:
            both_ways.setdefault(m[: m.index("[")], []).append(m)
    for ti, t in enumerate(raw):
        loc = ("tensors", ti)
        if t.tensor not in names:
            raise err("names an unknown tensor", loc + ("tensor",), found=t.tensor,
                      expected=f"one of {names}")  # fmt: skip
        if t.tensor in given:
            raise err("this tensor is placed twice", loc + ("tensor",), found=t.tensor)
        produced = workload.producer(t.tensor) is not None
        consumed = any(a.tensor == t.tensor for e in workload.einsums for a in e.inputs)
        if not produced:
            homes = ["dram", "local", *chip.core_names]
        elif not consumed:
            homes = ["dram", "kept"]
        else:
            homes = ["dram"]  # an intermediate's place is its `via`
        if t.home not in homes:
            raise err("not a place this tensor can start or end in", loc + ("home",), found=t.home,
                      expected=f"one of {homes}")  # fmt: skip
        if t.via != "network" and not (produced and consumed):
            raise err(f"via: {t.via} is for a tensor between layers", loc + ("via",),
                      expected="network (the default) for a network input or output")  # fmt: skip
        route: list[str] = []
        for ri, m in enumerate(t.route or ()):
            if m not in media and m not in both_ways:
                raise err("names an unknown link or bus", loc + ("route", ri), found=m,
                          expected=f"one of {media + sorted(both_ways)}")  # fmt: skip
            route += [m] if m in media else both_ways[m]
        given[t.tensor] = TensorPlacement(t.tensor, t.home, Via(t.via),
                                          tuple(route) if t.route is not None else None,
                                          t.multicast, format_path(loc))  # fmt: skip
    return tuple(given.get(n) or TensorPlacement(n, "dram", Via.NETWORK, None, True, "tensors")
                 for n in names)  # fmt: skip


def _loc(path: str) -> tuple:
    out: list = []
    for part in path.replace("]", "").split("."):
        if not part:
            continue
        name, *idx = part.split("[")
        out.append(name)
        out.extend(int(i) for i in idx)
    return tuple(out)


def _check_dram_routes(
    chip: Chip, workload: Workload, layers: tuple, tensors: tuple, lines: Lines, name: str
) -> None:
    """Every transfer to or from the DRAM has a route: a network input kept in DRAM reaches
    each core that reads it, a network output or a `via: dram` tensor leaves each core that
    produces it (routes between cores are checked where the parts are known, chip.plan)."""
    from cyclesim.chip.routes import route_tree

    dram = chip.offchip.name
    cores_of = {lm.einsum: lm.cores for lm in layers}
    for p in tensors:
        producer = workload.producer(p.tensor)
        readers = [c for e in workload.einsums if e.access(p.tensor) in e.inputs
                   for c in cores_of[e.name]]  # fmt: skip
        pairs = []
        if producer is None and p.home == dram:
            pairs = [(dram, c) for c in readers]
        if producer is not None and (p.via is Via.DRAM or (not readers and p.home == dram)):
            pairs = [(c, dram) for c in cores_of[producer.name]]
            pairs += [(dram, c) for c in readers]
        for a, b in pairs:
            if route_tree(chip, a, (b,), p.route) is None:
                loc = _loc(p.path)
                raise SpecError(
                    f"tensor {p.tensor} has no route from {a} to {b}"
                    + (f" over {list(p.route)}" if p.route else ""),
                    file=name, field=p.path, line=line_of(lines, loc),
                    expected="links or a bus joining them (interconnect), or another route",
                )  # fmt: skip


def step_architecture(arch: Any, work: Workload) -> Any:
    """A core's architecture as one step of one layer sees it: `double_buffered` and
    `no_multicast` keep only the tensors of that step's workload (the core's names were checked
    against the whole workload; the single-core spec would refuse another layer's tensors)."""
    from dataclasses import replace

    names = {t.name for t in work.tensors}
    memories = tuple(
        m
        if isinstance(m.double_buffered, bool)
        else replace(m, double_buffered=tuple(t for t in m.double_buffered if t in names))
        for m in arch.memories
    )
    no_multicast = tuple(
        (d, tuple(t for t in ts if t in names)) for d, ts in arch.pe_array.no_multicast
    )
    pe_array = replace(arch.pe_array, no_multicast=no_multicast)
    return replace(arch, memories=memories, pe_array=pe_array)


def _compiles(mapping: Mapping, arch: Any, work: Workload) -> None:
    """The step's loop tree compiles on its core (storage below the spatial loops it must be
    below, tiles that fit): found here, where the error can name this file's field."""
    from cyclesim.schedule import ReusePolicy, build_plan

    build_plan(arch, work, mapping, ReusePolicy("retain"), False)


def with_tile(
    mapping: ChipMapping, einsum: str, rank: str, size: int, workload: Workload, chip: Chip
) -> ChipMapping:
    """A copy with one layer's step tile along `rank` set to `size`: its step workload follows,
    and each core's loop tree scales its outermost temporal loop over `rank` (checked again;
    SpecError when the tile does not divide or no longer compiles)."""
    from dataclasses import replace

    from cyclesim.spec.mapping import Temporal

    lm = mapping.layer(einsum)
    old = dict(lm.tile)[rank]
    part = workload.einsum(einsum).rank_sizes[rank] // dict(lm.split).get(rank, 1)
    if size % old or part % size:
        raise mapping.error(f"a tile of {size} does not divide rank '{rank}' ({part} per core)",
                            lm.path)  # fmt: skip
    factor = size // old
    e = lm.step_workload.einsums[0]
    ranks = tuple((r, s * factor if r == rank else s) for r, s in e.ranks)
    work = replace(lm.step_workload, einsums=(replace(e, ranks=ranks),))
    trees = []
    for core, tree in lm.loop_trees:
        nodes = list(tree.loop_tree)
        at = next(
            (i for i, n in enumerate(nodes) if isinstance(n, Temporal) and n.rank == rank), None
        )
        if at is None:
            raise mapping.error(
                f"the loop tree on {core} has no temporal loop over {rank}", lm.path
            )
        nodes[at] = replace(nodes[at], bound=nodes[at].bound * factor)
        new = replace(tree, loop_tree=tuple(nodes))
        arch = step_architecture(chip.core(core).architecture, work)
        check_mapping(new, arch, work)
        _compiles(new, arch, work)
        trees.append((core, new))
    tile = tuple((r, size if r == rank else s) for r, s in lm.tile)
    layer = replace(lm, tile=tile, loop_trees=tuple(trees), step_workload=work)
    return replace(
        mapping, layers=tuple(layer if x.einsum == einsum else x for x in mapping.layers)
    )
