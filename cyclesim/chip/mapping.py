"""The multi-core mapping: per layer, which cores run which part of it (a split of ranks across
cores), the tile that cuts each core's part into steps, and per core its loop tree of one step
(the single-core mapping format, unchanged); per tensor between layers, where it lives (kept on
the producing core, sent over the interconnect, or written to DRAM and read back); which layers
are fused (their steps interleave on a core).

Loaded into frozen dataclasses (mapping_types.py) against a Chip and a Workload; every fault is
one SpecError naming file, field and line. Here: the load, the groups, the tensors' placement and
their DRAM routes; one layer's entry in layer_mapping.py, the YAML models in mapping_schema.py.
"""

from __future__ import annotations

from typing import Any

from cyclesim.chip.arch import Chip
from cyclesim.chip.layer_mapping import checked_layer
from cyclesim.chip.mapping_schema import _ChipMapping, _Group, _Tensor
from cyclesim.chip.mapping_types import ChipMapping, LayerMapping, TensorPlacement, Via, loc_of
from cyclesim.errors import SpecError
from cyclesim.spec.mapping import _check_no_multicast
from cyclesim.spec.workload import Workload
from cyclesim.spec.yamlio import Lines, format_path, line_of, read_yaml, validate


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
        by_name[layer.einsum] = checked_layer(layer, workload.einsum(layer.einsum), workload, chip, loc,
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
    dram = chip.offchip.name  # a tensor's default home, by whatever name the chip gives it
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
            homes = [dram, "local", *chip.core_names]
        elif not consumed:
            homes = [dram, "kept"]
        else:
            homes = [dram]  # an intermediate's place is its `via`
        home = dram if t.home is None else t.home
        if home not in homes:
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
        given[t.tensor] = TensorPlacement(t.tensor, home, Via(t.via),
                                          tuple(route) if t.route is not None else None,
                                          t.multicast, format_path(loc))  # fmt: skip
    return tuple(given.get(n) or TensorPlacement(n, dram, Via.NETWORK, None, True, "tensors")
                 for n in names)  # fmt: skip


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
                loc = loc_of(p.path)
                raise SpecError(
                    f"tensor {p.tensor} has no route from {a} to {b}"
                    + (f" over {list(p.route)}" if p.route else ""),
                    file=name, field=p.path, line=line_of(lines, loc),
                    expected="links or a bus joining them (interconnect), or another route",
                )  # fmt: skip
