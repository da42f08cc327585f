"""Stream's layers as the chip's workload and mapping: how Stream cuts each rank over cores
and steps (Cut), the layer's Einsum over Stream's dims, and the chip mapping's layers, groups and
tensor placement."""

from __future__ import annotations

import dataclasses
from typing import Any

from cyclesim.checks.stream.chip_cores import OFFCHIP, core_name
from cyclesim.checks.stream.model import OnnxNode
from cyclesim.checks.stream.schedule import StreamRun
from cyclesim.errors import SpecError

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


def rank_cuts(
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


def split_ranks_in_tree(nodes: list[dict], cuts: dict[str, Cut]) -> list[dict]:
    """The tile's loops over an interleaved rank run over its inner rank."""
    out = []
    for n in nodes:
        n = dict(n)
        if n.get("rank") in cuts and cuts[n["rank"]].interleaved:
            n["rank"] = n["rank"] + "i"
        if n["type"] == "sequential":
            n["branches"] = [split_ranks_in_tree(b, cuts) for b in n["branches"]]
        out.append(n)
    return out


def layer_einsum(
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


def chip_workload(einsums: list, tensors: dict) -> Any:
    from cyclesim.spec.workload import Tensor, Workload

    return Workload(
        tuple(einsums),
        tuple(Tensor(name, bits, psum) for name, (bits, psum) in tensors.items()),
        "stream",
        None,
    )


def layer_entry(node: Any, group: int, einsum: Any, cuts: dict[str, Cut], trees: dict) -> dict:
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


def mapping_dict(layers: list[dict], run: StreamRun, workload: Any) -> dict:
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
