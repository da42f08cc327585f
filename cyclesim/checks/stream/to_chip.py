"""Stream's inputs and solved schedule as a multi-core chip (cyclesim.chip): architecture,
workload and mapping, so `replay_chip` can run the schedule dependency-driven.

Each compute core becomes its ZigZag core imported as a single-core architecture (the ZigZag
adapter's import, tensors renamed to the ONNX names); the off-chip core its DRAM port; every
connection that wins its core pairs (last listed) a link or bus with Stream's width and no
latency (Stream has none). Each layer keeps Stream's split and per-core step; a step's loop tree
is the ZigZag mapping Stream's search chose for that tile. Tensors between layers of one fused
group go over the network, between groups through DRAM, as in Stream.
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import Any

from cyclesim.checks.stream.model import CoreKind, OnnxNode, StreamAccelerator
from cyclesim.checks.stream.pernode import zigzag_core_yaml, zigzag_names
from cyclesim.checks.stream.schedule import StreamRun
from cyclesim.checks.zigzag.cases import write_case
from cyclesim.errors import SpecError

OFFCHIP = "dram"


def core_name(core_id: int) -> str:
    return f"c{core_id}"


@dataclasses.dataclass(frozen=True, slots=True)
class ChipInputs:
    """The three inputs of `replay_chip`, built from one Stream case."""

    chip: Any  # cyclesim.chip.arch.Chip
    workload: Any  # cyclesim.spec.Workload
    mapping: Any  # cyclesim.chip.mapping.ChipMapping
    # where ZigZag double-buffers a tile two of whose largest instances do not fit: one slot
    single_slot: tuple[str, ...] = ()


def to_chip(
    accelerator: StreamAccelerator, nodes: tuple[OnnxNode, ...], shapes: dict[str, tuple[int, ...]],
    run: StreamRun,
) -> ChipInputs:  # fmt: skip
    """Build the chip inputs; raise SpecError naming what the chip cannot take."""
    from cyclesim.checks.zigzag.read import load_zigzag_inputs
    from cyclesim.checks.zigzag.to_spec import slot_flags, to_architecture, to_mapping, to_workload
    from cyclesim.chip.arch import chip_from_dict
    from cyclesim.chip.mapping import chip_mapping_from_dict
    from cyclesim.spec.override import architecture_to_dict, mapping_to_dict

    by_name = {n.name: n for n in nodes}
    architectures: dict[int, Any] = {}
    layers, einsums, tensors = [], [], {}
    single: list[str] = []
    with tempfile.TemporaryDirectory(prefix="cyclesim-stream-chip-") as folder:
        for group in run.groups:
            for node in group.nodes:
                onnx = by_name.get(node.name)
                if onnx is None or onnx.op_type != "Conv":
                    raise SpecError(
                        f"node '{node.name}' ({onnx.op_type if onnx else 'not in the ONNX graph'}) "
                        "is not imported into the chip: only Conv layers are, so far"
                    )
                names = {"I": onnx.inputs[0], "W": onnx.inputs[1], "O": onnx.outputs[0]}
                trees = {}
                for on_core in node.cores:
                    if on_core.zigzag is None:
                        raise SpecError(
                            f"node '{node.name}' has no ZigZag cost on core {on_core.core}"
                        )
                    case = zigzag_names(on_core.zigzag)
                    core_file = accelerator.core(on_core.core).file
                    key = f"{node.name}_c{on_core.core}"
                    files = write_case(
                        folder, key, zigzag_core_yaml(core_file), [case["workload"]],
                        [case["mapping"], {**case["mapping"], "name": "default"}],
                        case["temporal_mapping"],
                    )  # fmt: skip
                    inputs = load_zigzag_inputs(
                        files.accelerator, files.workload, files.mapping, files.temporal_mapping
                    )
                    flags, _ = slot_flags(inputs)
                    flags, notes = _fitting_flags(
                        inputs, flags, f"{node.name} on core {on_core.core}"
                    )
                    single += [n for n in notes if n not in single]
                    arch = _renamed_architecture(to_architecture(inputs, flags), names)
                    architectures[on_core.core] = _merged(architectures.get(on_core.core), arch)
                    tile = to_workload(inputs)
                    tree = mapping_to_dict(to_mapping(inputs, to_architecture(inputs, flags), tile))
                    trees[on_core.core] = _renamed_tree(tree["loop_tree"], names)
                    cuts = _cuts(inputs, onnx, shapes, len(node.cores), group.iterations, node.name)
                    _refuse_padding(inputs, node.name, cuts)
                    trees[on_core.core] = _split_ranks_in_tree(trees[on_core.core], cuts)
                    einsum = _einsum(inputs, onnx, names, shapes, cuts)
                for core in list(trees)[1:]:
                    if trees[core] != trees[next(iter(trees))]:
                        raise SpecError(
                            f"node '{node.name}': Stream's cores run different mappings"
                        )
                einsums.append(einsum)
                for op, name in names.items():
                    bits = inputs.layer.precision(op)
                    if op == "O":
                        tensors[name] = (inputs.layer.final_output_precision_bits, bits)
                    else:
                        tensors.setdefault(name, (bits, bits))
                layers.append(_layer_entry(node, group.index, einsum, cuts, trees))
        workload = _workload(einsums, tensors)
        chip = chip_from_dict(
            _chip_dict(accelerator, architectures, architecture_to_dict), "<stream chip>"
        )
        mapping = chip_mapping_from_dict(
            _mapping_dict(layers, run, workload), chip, workload, "<stream mapping>"
        )
    return ChipInputs(chip, workload, mapping, tuple(single))


def _fitting_flags(
    inputs: Any, flags: dict[tuple[str, str], bool], where: str
) -> tuple[dict[tuple[str, str], bool], list[str]]:
    """ZigZag's double-buffer flags with one slot where two of the tile's largest instances do not
    fit (a memory never holds more than its size), and a sentence per tensor given one slot.

    ZigZag infers double buffering from its average tile (an uneven spatial unrolling spreads a
    rank's iterations evenly over its steps, e.g. 32 columns as 3 x 10.67), the replay sizes a
    memory's slots at the largest tile it holds (3 x 14 with 4 left over keeps 14). The single-core
    plan's capacity check names the memory; its tensor holding the most bits loses its second slot.
    """
    import re

    from cyclesim.checks.zigzag.mapping import mapping_quantities
    from cyclesim.checks.zigzag.to_spec import to_architecture, to_mapping, to_workload
    from cyclesim.schedule.plan import build_plan

    flags = dict(flags)
    notes: list[str] = []
    averages = mapping_quantities(inputs).elements_per_instance
    while True:
        arch = to_architecture(inputs, flags)
        tile = to_workload(inputs)
        try:
            build_plan(arch, tile, to_mapping(inputs, arch, tile))
            return flags, notes
        except SpecError as exc:
            found = re.search(
                r"tiles kept in memory '([^']+)' need (\d+) bits .* has (\d+)", str(exc)
            )
            doubled = [op for (op, m), db in flags.items() if found and m == found[1] and db]
            if not doubled:
                raise
            sizes = dict(re.findall(r"(\w+): (\d+) values x 2 slot", str(exc)))
            op = max(doubled, key=lambda o: int(sizes.get(o, 0)))
            flags[(op, found[1])] = False
            levels = inputs.accelerator.levels(inputs.mapping.memory_operand(op))
            level = next(i for i, m in enumerate(levels) if m.name == found[1])
            notes.append(
                f"{where}: ZigZag double-buffers {op} in {found[1]} from its average tile "
                f"({averages[op][level + 1]:,.0f} values), but two of its largest "
                f"({int(sizes.get(op, 0)):,} values) need {int(found[2]):,} bits where {found[1]} has "
                f"{int(found[3]):,}: the replay gives {op} one slot there (refills wait for its use)"
            )


def _refuse_padding(inputs: Any, node: str, cuts: dict) -> None:
    """A rank ZigZag unrolls unevenly is padded to whole spatial steps (as the ZigZag import
    does); the chip takes it only where Stream does not cut it over cores or steps."""
    layer, mapping = inputs.layer, inputs.mapping
    for dim in layer.loop_dims:
        if mapping.padded_size(layer, dim) != layer.loop_size(dim) and dim in cuts:
            raise SpecError(
                f"node '{node}': the ZigZag mapping Stream chose unrolls {dim} unevenly "
                f"({layer.loop_size(dim)} iterations padded to {mapping.padded_size(layer, dim)}) "
                "and Stream cuts that rank over cores or steps: the padded parts would not line up"
            )


def _renamed_architecture(arch: Any, names: dict[str, str]) -> Any:
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


def _merged(old: Any, new: Any) -> Any:
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


def _renamed_tree(nodes: list[dict], names: dict[str, str]) -> list[dict]:
    out = []
    for n in nodes:
        n = dict(n)
        if n["type"] == "storage":
            n["tensors"] = [names.get(t, t) for t in n["tensors"]]
        elif n["type"] == "sequential":
            n["branches"] = [_renamed_tree(b, names) for b in n["branches"]]
        out.append(n)
    return out


STREAM_CONV_DIMS = ("D0", "D1", "D2", "D3", "D4", "D5", "D6")  # batch, OX, OY, FX, FY, C, K


@dataclasses.dataclass(frozen=True, slots=True)
class Cut:
    """How Stream cuts one rank of a layer: `parts` over the cores, `iterations` steps of
    `step` each on one core. Stream nests its steps OUTSIDE the cores (iteration k covers
    rank values k x parts x step ...), the chip's `split` gives each core a contiguous part: a
    rank cut both ways becomes two ranks, <rank>o (the iterations) and <rank>i (parts x step),
    with the tensors indexed (parts x step) x <rank>o + <rank>i."""

    rank: str
    size: int
    parts: int
    iterations: int
    step: int

    @property
    def interleaved(self) -> bool:
        return self.parts > 1 and self.iterations > 1


def _full_sizes(onnx: OnnxNode, shapes: dict) -> dict[str, int]:
    out, weights = shapes[onnx.outputs[0]], shapes[onnx.inputs[1]]
    return dict(
        zip(
            STREAM_CONV_DIMS,
            (out[0], out[3], out[2], weights[3], weights[2], weights[1], weights[0]),
            strict=True,
        )
    )


def _cuts(
    inputs: Any, onnx: OnnxNode, shapes: dict, cores: int, iterations: int, node: str
) -> dict[str, Cut]:
    """Per rank the tile is smaller than the layer in: its parts over the cores and its steps."""
    full = _full_sizes(onnx, shapes)
    cuts = {}
    for dim in inputs.layer.loop_dims:
        step, size = inputs.layer.loop_size(dim), int(full[dim])
        if step == size:
            continue
        pieces = size // step
        if size % step:
            raise SpecError(
                f"node '{node}': rank {dim} ({size}) is not cut into whole steps of {step}"
            )
        if pieces == cores * iterations and cores > 1 and iterations > 1:
            cuts[dim] = Cut(dim, size, cores, iterations, step)
        elif pieces == cores:
            cuts[dim] = Cut(dim, size, cores, 1, step)
        elif pieces == iterations:
            cuts[dim] = Cut(dim, size, 1, iterations, step)
        else:
            raise SpecError(
                f"node '{node}': rank {dim} ({size}) in steps of {step} fits neither {cores} "
                f"cores nor {iterations} iterations"
            )
    return cuts


def _split_ranks_in_tree(nodes: list[dict], cuts: dict[str, Cut]) -> list[dict]:
    """The tile's loops over an interleaved rank run over its inner rank."""
    out = []
    for n in nodes:
        n = dict(n)
        if n.get("rank") in cuts and cuts[n["rank"]].interleaved:
            n["rank"] = n["rank"] + "i"
        if n["type"] == "sequential":
            n["branches"] = [_split_ranks_in_tree(b, cuts) for b in n["branches"]]
        out.append(n)
    return out


def _einsum(
    inputs: Any, onnx: OnnxNode, names: dict[str, str], shapes: dict, cuts: dict[str, Cut]
) -> Any:
    """The whole layer as an Einsum over Stream's dims (D0 batch, D1 OX, D2 OY, D3 FX, D4 FY, D5 C,
    D6 K; an interleaved rank as two), input rows and columns clipped to the input's extent."""
    from cyclesim.spec.workload import Einsum, Projection, TensorAccess

    layer = inputs.layer
    full = _full_sizes(onnx, shapes)
    relations = {rel.target: rel for rel in layer.relations}
    extents = {
        "I": shapes[onnx.inputs[0]],
        "W": shapes[onnx.inputs[1]],
        "O": shapes[onnx.outputs[0]],
    }

    def terms_of(coefficient: int, dim: str) -> tuple:
        cut = cuts.get(dim)
        if cut is None or not cut.interleaved:
            return ((coefficient, dim),)
        return ((coefficient * cut.parts * cut.step, dim + "o"), (coefficient, dim + "i"))

    def access(op: str) -> TensorAccess:
        projections = []
        for position, dim in enumerate(layer.dims_of(op)):
            rel = relations.get(dim)
            if rel is None:  # its real extent: a rank padded to whole spatial steps is clipped
                projections.append(Projection(terms_of(1, dim), int(extents[op][position])))
            else:
                terms = terms_of(rel.first_coefficient, rel.first_dim) + terms_of(
                    rel.second_coefficient, rel.second_dim
                )
                projections.append(Projection(terms, int(extents[op][position])))
        return TensorAccess(names[op], tuple(projections))

    ranks = []
    for d in layer.loop_dims:
        cut = cuts.get(d)
        if cut is not None and cut.interleaved:
            ranks += [(d + "o", cut.iterations), (d + "i", cut.parts * cut.step)]
        elif cut is None:  # whole on every core: padded to whole spatial steps, as the tile is
            ranks.append((d, inputs.mapping.padded_size(layer, d)))
        else:
            ranks.append((d, int(full[d])))
    inputs_access = tuple(access(op) for op in layer.operands if op != layer.output_operand)
    return Einsum(onnx.name, tuple(ranks), inputs_access, access("O"))


def _workload(einsums: list, tensors: dict) -> Any:
    from cyclesim.spec.workload import Tensor, Workload

    return Workload(
        tuple(einsums),
        tuple(Tensor(name, bits, psum) for name, (bits, psum) in tensors.items()),
        "stream",
        None,
    )


def _layer_entry(node: Any, group: int, einsum: Any, cuts: dict[str, Cut], trees: dict) -> dict:
    """The chip mapping's entry: interleaved ranks split inside and stepped outside."""
    split, tile = [], []
    for cut in cuts.values():
        if cut.interleaved:
            split.append({"rank": cut.rank + "i", "parts": cut.parts})
            tile.append({"rank": cut.rank + "o", "size": 1})
        elif cut.parts > 1:
            split.append({"rank": cut.rank, "parts": cut.parts})
        else:
            tile.append({"rank": cut.rank, "size": cut.step})
    return {"einsum": einsum.name, "group": group, "cores": [core_name(c.core) for c in node.cores],
            "split": split, "tile": tile, "loop_tree": next(iter(trees.values()))}  # fmt: skip


def _mapping_dict(layers: list[dict], run: StreamRun, workload: Any) -> dict:
    """The chip mapping: layers with Stream's cores, split and step; groups; tensor placement
    (network inputs and outputs in DRAM, within a group over the network, between groups
    through DRAM)."""
    entries = [
        {k: layer[k] for k in ("einsum", "cores", "split", "tile", "loop_tree")} for layer in layers
    ]
    group_of = {layer["einsum"]: layer["group"] for layer in layers}
    groups = [{"layers": [e for e in group_of if group_of[e] == g.index]} for g in run.groups]
    producers = {e.output.tensor: e.name for e in workload.einsums}
    readers: dict[str, list[str]] = {}
    for e in workload.einsums:
        for a in e.inputs:
            readers.setdefault(a.tensor, []).append(e.name)
    placements = []
    for t in workload.tensors:
        if t.name not in producers:
            placements.append({"tensor": t.name, "home": OFFCHIP, "multicast": True})
        elif t.name not in readers:
            placements.append({"tensor": t.name, "home": OFFCHIP})
        else:
            same = all(group_of[r] == group_of[producers[t.name]] for r in readers[t.name])
            placements.append({"tensor": t.name, "via": "network" if same else "dram"})
    return {"name": "stream", "layers": entries, "groups": groups, "tensors": placements}


def _chip_dict(accelerator: StreamAccelerator, architectures: dict, to_dict: Any) -> dict:
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


def onnx_shapes(path: str | Path) -> dict[str, tuple[int, ...]]:
    """Every tensor's shape in an ONNX model (inputs, outputs, initializers, inferred values)."""
    import onnx

    model = onnx.shape_inference.infer_shapes(onnx.load(str(path), load_external_data=False))
    shapes: dict[str, tuple[int, ...]] = {}
    for init in model.graph.initializer:
        shapes[init.name] = tuple(int(d) for d in init.dims)
    for value in (*model.graph.input, *model.graph.output, *model.graph.value_info):
        dims = value.type.tensor_type.shape.dim
        shapes[value.name] = tuple(int(d.dim_value) for d in dims)
    return shapes
