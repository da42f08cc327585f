"""The geometry of a chip plan's steps (pure): a layer's iteration boxes per core and step,
the values a box touches in a tensor, and the order each core runs its steps in.

A box is a tuple of half-open (lo, hi) ranges: over an Einsum's ranks (a step's iterations) or
over a tensor's dimensions (the values a step reads or writes).
"""

from __future__ import annotations

import math

from cyclesim.chip.mapping_types import ChipMapping, LayerMapping
from cyclesim.spec.workload import Einsum, TensorAccess, Workload

Box = tuple[tuple[int, int], ...]


def tensor_box(access: TensorAccess, box: Box, ranks: tuple[str, ...]) -> Box:
    """The values of a tensor an iteration box touches (a dense span per dimension), clipped at
    the tensor's extent where the projection has one (Projection.size: a convolution's border and
    iterations padded to whole spatial steps are never stored, so they are never moved)."""
    at = dict(zip(ranks, box, strict=True))
    out = []
    for proj in access.projection:
        lo = sum(c * at[r][0] for c, r in proj.terms)
        hi = sum(c * (at[r][1] - 1) for c, r in proj.terms) + 1
        if proj.size is not None:
            lo, hi = min(lo, proj.size), min(hi, proj.size)
        out.append((lo, hi))
    return tuple(out)


def intersect(a: Box, b: Box) -> Box | None:
    out = tuple((max(x0, y0), min(x1, y1)) for (x0, x1), (y0, y1) in zip(a, b, strict=True))
    return None if any(lo >= hi for lo, hi in out) else out


def remainder(box: Box, held: Box) -> Box | None:
    """The part of `box` not in `held` when that part is a box (they differ along one dimension
    at most: a sliding window's new rows); all of `box` otherwise; None when `held` covers it."""
    common = intersect(box, held)
    if common is None:
        return box
    if common == box:
        return None
    differ = [d for d, (a, b) in enumerate(zip(box, common, strict=True)) if a != b]
    if len(differ) != 1:
        return box
    d = differ[0]
    (lo, hi), (clo, chi) = box[d], common[d]
    if clo > lo and chi < hi:  # held sits inside: two pieces, so move the whole box
        return box
    rest = (chi, hi) if clo == lo else (lo, clo)
    return box[:d] + (rest,) + box[d + 1 :]


def volume(box: Box) -> int:
    return math.prod(hi - lo for lo, hi in box)


def _multi_index(n: int, sizes: list[int]) -> list[int]:
    out = []
    for s in reversed(sizes):
        out.append(n % s)
        n //= s
    return out[::-1]


def layer_steps(lm: LayerMapping, einsum: Einsum) -> dict[str, list[Box]]:
    """Per core of the layer, its steps' iteration boxes in step order."""
    ranks = [r for r, _ in einsum.ranks]
    size = einsum.rank_sizes
    part = dict(size)
    for r, p in lm.split:
        part[r] //= p
    step = dict(part)
    for r, s in lm.tile:
        step[r] = s
    out = {}
    for ci, core in enumerate(lm.cores):
        origin = dict.fromkeys(ranks, 0)
        for (r, _), i in zip(lm.split, _multi_index(ci, [p for _, p in lm.split]), strict=True):
            origin[r] += i * part[r]
        counts = [part[r] // s for r, s in lm.tile]
        boxes = []
        for si in range(math.prod(counts)):
            lo = dict(origin)
            for (r, s), i in zip(lm.tile, _multi_index(si, counts), strict=True):
                lo[r] += i * s
            boxes.append(tuple((lo[r], lo[r] + step[r]) for r in ranks))
        out[core] = boxes
    return out


def program_order(workload: Workload, mapping: ChipMapping, boxes: dict) -> list[tuple]:
    """Steps (layer, core, index) in the order cores run them: groups in mapping order; inside
    a group, rounds in which each layer (workload order) puts the next step of each of its
    cores, once every step it reads from has been put (so a consumer whose tile spans
    several producer steps comes after them all)."""
    ranks = {e.name: tuple(r for r, _ in e.ranks) for e in workload.einsums}
    out_box = {}
    for e in workload.einsums:
        for core, bs in boxes[e.name].items():
            for i, box in enumerate(bs):
                out_box[(e.name, core, i)] = tensor_box(e.output, box, ranks[e.name])

    def reads(key: tuple) -> list[tuple]:
        e = workload.einsum(key[0])
        box = boxes[key[0]][key[1]][key[2]]
        deps = []
        for acc in e.inputs:
            producer = workload.producer(acc.tensor)
            if producer is None:
                continue
            need = tensor_box(acc, box, ranks[e.name])
            deps += [k for k, ob in out_box.items()
                     if k[0] == producer.name and intersect(ob, need) is not None]  # fmt: skip
        return deps

    order: list[tuple] = []
    put: set[tuple] = set()
    for group in mapping.groups:
        nxt = {(e, core): 0 for e in group for core in boxes[e]}
        while any(i < len(boxes[e][c]) for (e, c), i in nxt.items()):
            progress = False
            for e in group:
                for core in boxes[e]:
                    i = nxt[(e, core)]
                    if i < len(boxes[e][core]) and all(d in put for d in reads((e, core, i))):
                        order.append((e, core, i))
                        put.add((e, core, i))
                        nxt[(e, core)] = i + 1
                        progress = True
            if not progress:  # a layer reads a later group's output: the groups are out of order
                raise mapping.error(f"the layers of group {list(group)} read a tensor a later group "
                                    "produces", "groups", expected="groups in dependency order")  # fmt: skip
    return order
