"""One layer's entry of the chip mapping checked and built (LayerMapping): its cores, split,
tile, step workload and each core's loop tree of one step, checked as a single-core mapping on
the core as the step sees it (step_architecture); with_tile, a copy with another step tile."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from cyclesim.chip.arch import Chip
from cyclesim.chip.mapping_schema import _Layer
from cyclesim.chip.mapping_types import ChipMapping, LayerMapping
from cyclesim.errors import SpecError
from cyclesim.spec.mapping import Mapping, Storage, _convert, check_mapping
from cyclesim.spec.workload import Einsum, Workload
from cyclesim.spec.yamlio import Lines, format_path, line_of


def checked_layer(
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
