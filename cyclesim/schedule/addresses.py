"""Where tiles live in DRAM: tensor placements, a tile's element box, its contiguous byte runs.

Pure (no SimPy): a tensor kept in a memory with a DRAM model gets a base address and a
row-major layout of its dimensions; the tile a storage node fills from (or writes back to)
that memory is a box in tensor coordinates, from the loop digits of its tile index and the
projections (sliding windows included: a dimension `2*ox + fx` spans the bounding range of
its terms), and the box is a list of contiguous (address, bytes) runs in layout order.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from cyclesim.spec import Spatial, Storage, Temporal
from cyclesim.spec.workload import Projection


@dataclass(frozen=True, slots=True)
class Placement:
    """A tensor's bytes in DRAM: base address, dimension sizes and the order they are laid out."""

    tensor: str
    base: int
    sizes: tuple[int, ...]  # per tensor dimension, in projection order
    order: tuple[int, ...]  # tensor dimensions in layout order, outermost first
    value_bytes: int

    @property
    def bytes(self) -> int:
        return prod(self.sizes) * self.value_bytes


def place_tensors(
    tensors: list[tuple[str, tuple[int, ...], int]],
    align: int,
    overrides: dict[str, tuple[int, tuple[int, ...] | None]] | None = None,
) -> dict[str, Placement]:
    """Placements for (tensor, sizes, value bytes): each at its override's base, else packed after
    the previous one at the next multiple of `align`; row-major unless an order is given.

    Raises ValueError naming the two tensors when placements overlap.
    """
    overrides = overrides or {}
    out: dict[str, Placement] = {}
    cursor = 0
    for tensor, sizes, value_bytes in tensors:
        base, order = overrides.get(tensor, (None, None))
        if order is None:
            order = tuple(range(len(sizes)))
        if base is None:
            base = -(-cursor // align) * align
        p = Placement(tensor, base, tuple(sizes), tuple(order), value_bytes)
        out[tensor] = p
        cursor = max(cursor, base + p.bytes)
    spans = sorted((p.base, p.base + p.bytes, p.tensor) for p in out.values())
    for (_, end, a), (start, _, b) in zip(spans, spans[1:], strict=False):
        if start < end:
            raise ValueError(f"the DRAM placements of {a} and {b} overlap")
    return out


def tile_box(
    projection: tuple[Projection, ...], origin: dict[str, int], extent: dict[str, int]
) -> tuple[tuple[int, int], ...]:
    """Per tensor dimension, the [low, high) range touched when each rank r runs over
    origin[r] .. origin[r] + extent[r] - 1 (missing ranks: 0 and 1)."""
    box = []
    for p in projection:
        low = sum(c * origin.get(r, 0) for c, r in p.terms)
        high = sum(c * (origin.get(r, 0) + extent.get(r, 1) - 1) for c, r in p.terms) + 1
        box.append((low, high))
    return tuple(box)


def box_runs(place: Placement, box: tuple[tuple[int, int], ...]) -> list[tuple[int, int, int, int]]:
    """The box's bytes as strided runs (address, bytes, stride, count) in layout order: run x of
    an entry starts at address + x * stride. The innermost dimensions the box covers whole merge
    into one contiguous run; the dimension above them strides; the others are enumerated."""
    order = place.order
    sizes = [place.sizes[d] for d in order]
    ranges = [box[d] for d in order]
    strides = [0] * len(order)
    s = place.value_bytes
    for i in range(len(order) - 1, -1, -1):
        strides[i] = s
        s *= sizes[i]
    j = len(order) - 1
    while j > 0 and ranges[j] == (0, sizes[j]):
        j -= 1
    run_bytes = (ranges[j][1] - ranges[j][0]) * strides[j]
    first = ranges[j][0] * strides[j]
    if j == 0:
        return [(place.base + first, run_bytes, 0, 1)]
    low, high = ranges[j - 1]
    step = strides[j - 1]
    runs = []

    def walk(i: int, address: int) -> None:
        if i == j - 1:
            runs.append((address + low * step + first, run_bytes, step, high - low))
            return
        lo, hi = ranges[i]
        for x in range(lo, hi):
            walk(i + 1, address + x * strides[i])

    walk(0, place.base)
    return runs


@dataclass(frozen=True, slots=True)
class TileAddresses:
    """The DRAM side of one storage node's transfers: tile k's byte runs in its parent's DRAM."""

    memory: str  # the DRAM memory the node fills from / writes back to
    placement: Placement
    projection: tuple[Projection, ...]
    counted: tuple[tuple[str | None, int, int], ...]  # (rank or None, bound, stride), outer first
    extent: tuple[tuple[str, int], ...]  # rank -> values the transfer spans

    def origin(self, k: int) -> dict[str, int]:
        """Each rank's first value in tile k (k is a mixed-radix number over the counted loops)."""
        origin: dict[str, int] = {}
        for rank, bound, stride in reversed(self.counted):
            k, digit = divmod(k, bound)
            if rank is not None:
                origin[rank] = origin.get(rank, 0) + digit * stride
        return origin

    def runs(self, k: int) -> list[tuple[int, int, int, int]]:
        return box_runs(
            self.placement, tile_box(self.projection, self.origin(k), dict(self.extent))
        )


def node_addresses(
    above: tuple, below: tuple, parent_at: int, counted: int, ranks: frozenset[str]
) -> tuple[tuple[tuple[str | None, int, int], ...], dict[str, int]]:
    """(counted loops with strides, extent) of a node whose storage sits between `above` and
    `below` (spec nodes of one leaf's path), parent storage at index `parent_at` of `above`.

    A loop's stride is the product of the bounds of the loops over its rank below it; the
    extent covers the loops below the node and the spatial loops between it and its parent
    (the parent-side union of a multicast fill). `counted` is the number of tile-changing
    temporal loops (NodePlan.counted).
    """
    loops = [n for n in above + below if isinstance(n, (Temporal, Spatial))]
    stride_of: dict[int, int] = {}
    running: dict[str, int] = {}
    for n in reversed(loops):
        stride_of[id(n)] = running.get(n.rank, 1)
        running[n.rank] = running.get(n.rank, 1) * n.bound
    temporal = [n for n in above if isinstance(n, Temporal) and n.bound > 1][:counted]
    table = tuple(
        (n.rank if n.rank in ranks else None, n.bound, stride_of[id(n)]) for n in temporal
    )
    extent: dict[str, int] = {}
    spans = [n for n in below if isinstance(n, (Temporal, Spatial))]
    spans += [n for n in above[parent_at + 1 :] if isinstance(n, Spatial)]
    for n in spans:
        if n.rank in ranks:
            extent[n.rank] = extent.get(n.rank, 1) * n.bound
    return table, extent


def storage_position(above: tuple, path: str) -> int | None:
    """Index of the storage node with this path in a leaf's list of nodes above it."""
    for i, n in enumerate(above):
        if isinstance(n, Storage) and n.path == path:
            return i
    return None


def dram_addresses(arch, workload, tree: tuple, nodes: tuple) -> tuple[tuple, tuple]:
    """(per DRAM-modelled memory: (name, DramConfig, placements, clock MHz), per node: its TileAddresses
    when its parent lives in such a memory, else None). Both empty when no memory has a model.

    Every tensor a modelled memory may hold is placed (in workload order, each aligned to a
    DRAM row); a value takes the bytes of its wider width (partial sums included).
    """
    from cyclesim.spec import leaves

    models = [m for m in arch.memories if m.dram is not None]
    if not models:
        return (), ()
    out_models = []
    placements_of: dict[str, dict[str, Placement]] = {}
    for m in models:
        placed = memory_placements(arch, workload, m)
        placements_of[m.name] = placed
        out_models.append((m.name, m.dram.config, tuple(placed.values()), arch.clock_mhz))
    leaf_list = leaves(tree)
    per_node = []
    for n in nodes:
        parent = nodes[n.parent] if n.parent is not None else None
        if parent is None or parent.memory not in placements_of:
            per_node.append(None)
            continue
        for above, comp in leaf_list:
            access = workload.einsum(comp.einsum).access(n.tensor)
            pos = storage_position(above, n.path)
            if access is not None and pos is not None:
                break
        else:  # build_plan refuses such a node before this point
            raise AssertionError(f"no leaf below {n.label()}")
        parent_at = storage_position(above, parent.path)
        counted, extent = node_addresses(
            above[:pos], above[pos + 1 :], parent_at, len(n.counted), access.ranks()
        )
        per_node.append(
            TileAddresses(
                parent.memory,
                placements_of[parent.memory][n.tensor],
                access.projection,
                counted,
                tuple(extent.items()),
            )
        )
    return tuple(out_models), tuple(per_node)


def memory_placements(arch, workload, m) -> dict[str, Placement]:
    """The placement of every tensor memory m (with a DRAM model) may hold; SpecError on a
    placement naming dimensions the tensor does not have, or on overlapping placements."""
    config = m.dram.config
    shapes = []
    for t in workload.tensors:
        if not m.holds(t.name):
            continue
        einsum = next(e for e in workload.einsums if e.access(t.name) is not None)
        access = einsum.access(t.name)
        sizes = tuple(p.extent(einsum.rank_sizes) for p in access.projection)
        value_bytes = -(-max(t.bits_per_value, t.partial_sum_bits) // 8)
        shapes.append((t.name, sizes, value_bytes))
    overrides = {}
    loc = ("memories", arch.memory_index(m.name), "dram", "placements")
    for tensor, base, order in m.dram.placements:
        if not any(s[0] == tensor for s in shapes):
            continue
        index = None
        if order is not None:
            einsum = next(e for e in workload.einsums if e.access(tensor) is not None)
            names = ["+".join(p.ranks()) for p in einsum.access(tensor).projection]
            if sorted(order) != sorted(names):
                raise arch.error(
                    f"placement order of {tensor} must list its dimensions {names} once each",
                    loc + (tensor, "order"),
                    found=list(order),
                )
            index = tuple(names.index(o) for o in order)
        overrides[tensor] = (base, index)
    try:
        placed = place_tensors(shapes, config.row_bytes, overrides)
    except ValueError as e:
        raise arch.error(str(e), loc) from None
    # beyond the last byte the address fields wrap around onto other tensors' rows
    capacity = config.channels * config.ranks * config.banks * config.rows * config.row_bytes
    for p in placed.values():
        if p.base + p.bytes > capacity:
            given = any(tensor == p.tensor for tensor, _, _ in m.dram.placements)
            raise arch.error(
                f"the DRAM placement of {p.tensor} ({p.bytes:,} bytes from {p.base:,}"
                f"{'' if given else ', packed after the tensors before it'}) ends beyond the "
                f"DRAM's {capacity:,} bytes",
                loc + ((p.tensor, "base") if given else ()),
                found=p.base,
                expected=f"a base address of at most {capacity - p.bytes:,}",
            )
    return placed
