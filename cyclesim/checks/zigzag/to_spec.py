"""Convert ZigZag inputs (+ a fixed temporal mapping) into cyclesim's own spec, so the replay runs them.

* Memories become `spec.Memory` (outermost first); a ZigZag memory operand becomes the layer
  operand it is linked to (I1 -> I, I2 -> W, O -> O), used as the tensor name.
* ZigZag's directions map one to one: fh -> write_from_above, th -> read_to_above,
  tl -> read_to_below, fl -> write_from_below; `bandwidth_max` is the port width and the memory's
  `latency` (unused by ZigZag's model) the port latency, paid once per transfer; bursts are a
  port's width, times the instances of a memory with one instance per array position.
* `served_dimensions` are the array dims a memory is shared across ([] = one instance per PE).
* ZigZag infers double buffering from capacity; the replay is given the same flags explicitly
  (`model.double_buffer_flags`), so single buffering is played out where ZigZag assumed it.
* The per-operand level lists become one loop tree: the flat loop order (identical for every
  operand, checked on input) with a storage node where an operand's memory level ends, and each
  spatial loop placed just above the outermost memory that has one instance per position of its
  array dimension. A memory shared across that dimension but holding fewer loops sits below the
  spatial loop in the tree; the plan moves the loop below it for that memory's operand only
  (one instance serving every position, as ZigZag counts it), not for the others.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from cyclesim.checks.zigzag.inputs import DataDirection, ZigZagInputs
from cyclesim.errors import SpecError
from cyclesim.spec import (
    Architecture,
    Compute,
    Direction,
    Einsum,
    Mapping,
    Memory,
    PEArray,
    Port,
    PortKind,
    Projection,
    Spatial,
    Storage,
    Temporal,
    Tensor,
    TensorAccess,
    Workload,
)
from cyclesim.spec.limits import MAX_WIDTH_BITS
from cyclesim.spec.mapping import check_mapping

DIRECTION_NAMES = {
    DataDirection.WRITTEN_FROM_ABOVE: Direction.WRITE_FROM_ABOVE,
    DataDirection.READ_TO_ABOVE: Direction.READ_TO_ABOVE,
    DataDirection.READ_TO_BELOW: Direction.READ_TO_BELOW,
    DataDirection.WRITTEN_FROM_BELOW: Direction.WRITE_FROM_BELOW,
}


@dataclass(frozen=True, slots=True)
class ImportedSpec:
    """cyclesim's three inputs built from one ZigZag case."""

    architecture: Architecture
    workload: Workload
    mapping: Mapping


def to_architecture(
    inputs: ZigZagInputs, double_buffered: dict[tuple[str, str], bool]
) -> Architecture:
    """ZigZag memories and ports as a cyclesim Architecture (outermost memory first)."""
    acc, links = inputs.accelerator, inputs.mapping
    moved = set(moved_operands(inputs))
    memories = []
    for memory in reversed(acc.memories):
        tensors = tuple(
            op for op in (links.layer_operand(m) for m in memory.operands) if op in moved
        )
        if not tensors:
            continue
        ports = []
        # a memory with one instance per array position: bursts of width x instances, so what
        # crosses its parent's port for all instances moves as in ZigZag, at the parent's
        # width (bursts are counted where the bits meet, DESIGN; ZigZag has no bursts)
        instances = prod(
            size
            for dim, size in zip(acc.array_dimensions, acc.array_sizes, strict=True)
            if dim not in _served(acc, memory)
        )
        for port in memory.ports:
            serves = tuple(
                (links.layer_operand(a.memory_operand), DIRECTION_NAMES[a.direction])
                for a in port.allocation
                if links.layer_operand(a.memory_operand) in moved
            )
            if serves:
                kind = PortKind(port.port_type.value)
                ports.append(
                    Port(
                        port.name,
                        kind,
                        port.bandwidth_max_bits,
                        memory.latency_cycles,
                        min(MAX_WIDTH_BITS, port.bandwidth_max_bits * instances),
                        serves,
                    )
                )
        doubled = tuple(t for t in tensors if double_buffered.get((t, memory.name), False))
        memories.append(
            Memory(
                memory.name,
                memory.size_bits,
                _served(acc, memory),
                tensors,
                doubled,
                tuple(ports),
            )
        )
    pe = PEArray(tuple(zip(acc.array_dimensions, acc.array_sizes, strict=True)), 1, 0)
    return Architecture(acc.name, pe, tuple(memories), (), None, acc.file)


def to_workload(inputs: ZigZagInputs) -> Workload:
    """The ZigZag layer as one Einsum; the output keeps O_final bits and O partial-sum bits.

    A loop whose spatial unrolling does not divide it (ZigZag's fractional unrolling) is padded to
    whole spatial steps: the replay runs the same ceil(size / unrolling) temporal iterations as
    ZigZag (`padded_dims` names them). Each tensor dimension keeps its real extent
    (`Projection.size`), so a tile never holds more than the tensor has: the padded iterations
    and a convolution's zero border are never stored, as ZigZag clips them.
    """
    layer = inputs.layer
    relations = {rel.target: rel for rel in layer.relations}
    padded = {dim: inputs.mapping.padded_size(layer, dim) for dim in layer.loop_dims}

    def clipped(terms: tuple, real: int) -> Projection:
        # the operand's real extent, as ZigZag sizes its tiles: the padded iterations and a
        # convolution's zero border are never stored (None where the loops reach no further)
        spans = Projection(terms).distinct({dim: padded[dim] for _, dim in terms})
        return Projection(terms, real if real < spans else None)

    def access(op: str) -> TensorAccess:
        projections = []
        for dim in layer.dims_of(op):
            rel = relations.get(dim)
            if rel is None:
                real = layer.loop_size(dim) if dim in padded else 1
                projections.append(clipped(((1, dim),), real))
            else:
                terms = (
                    (rel.first_coefficient, rel.first_dim),
                    (rel.second_coefficient, rel.second_dim),
                )
                full = Projection(terms).distinct(
                    {rel.first_dim: layer.loop_size(rel.first_dim),
                     rel.second_dim: layer.loop_size(rel.second_dim)}
                )  # fmt: skip
                # the limit is in indices, the clip in distinct values: a strided 1x1 window
                # (ix = 2*ox + fx, fx 1) touches only `full` of the input's indices
                projections.append(clipped(terms, min(full, layer.extent_limit(dim, full))))
        return TensorAccess(op, tuple(projections))

    einsum = Einsum(
        layer.name,
        tuple((dim, padded[dim]) for dim in layer.loop_dims),
        tuple(access(op) for op in moved_operands(inputs) if op != layer.output_operand),
        access(layer.output_operand),
    )
    out = layer.output_operand
    tensors = [
        Tensor(op, layer.precision(op), layer.precision(op))
        for op in moved_operands(inputs)
        if op != layer.output_operand
    ]
    tensors.append(Tensor(out, layer.final_output_precision_bits, layer.precision(out)))
    return Workload((einsum,), tuple(tensors), layer.name, layer.file)


def moved_operands(inputs: ZigZagInputs) -> tuple[str, ...]:
    """The layer operands the replay moves: all but an input of 0 bits (a pooling layer's W),
    which ZigZag counts no word of and the replay leaves out of the Einsum."""
    layer = inputs.layer
    return tuple(
        op for op in layer.operands if op == layer.output_operand or layer.precision(op) > 0
    )


def padded_dims(inputs: ZigZagInputs) -> tuple[tuple[str, int, int], ...]:
    """(dim, loop size, padded size) of every loop the replay pads to whole spatial steps."""
    layer, mapping = inputs.layer, inputs.mapping
    return tuple(
        (dim, layer.loop_size(dim), mapping.padded_size(layer, dim))
        for dim in layer.loop_dims
        if mapping.padded_size(layer, dim) != layer.loop_size(dim)
    )


@dataclass(frozen=True, slots=True)
class Placement:
    """Where the loop tree puts each operand's memory levels and each array dimension's unrolling.

    `stores`: (loops below it, hierarchy index, memory, operand) per memory level of an operand;
    `spatial_at`: array dim -> number of temporal loops below its spatial loops: just above the
    outermost memory level that has one instance per position of that dim. A memory shared
    across the dim may sit below that point (it holds fewer loops than another operand's
    per-position memory): the plan then moves the spatial loop below it for its own operand
    only (`schedule.nodes.tensor_view`), as ZigZag places the unrolling per operand.
    """

    stores: tuple[tuple[int, int, str, str], ...]
    spatial_at: dict[str, int]


def _placement(inputs: ZigZagInputs) -> Placement:
    """The placement of memory levels and unrollings."""
    acc, tm = inputs.accelerator, inputs.temporal_mapping
    assert tm is not None
    stores: list[tuple[int, int, str, str]] = []
    for op in moved_operands(inputs):
        levels = tm.of(op)
        below = 0
        for m, memory in enumerate(acc.levels(inputs.mapping.memory_operand(op))):
            below += len(levels[m])
            stores.append((below, acc.memories.index(memory), memory.name, op))
    served = {m.name: _served(acc, m) for m in acc.memories}
    spatial_at = {
        array_dim: max(
            (pos for pos, _, name, _ in stores if array_dim not in served[name]), default=0
        )
        for array_dim, _ in inputs.mapping.spatial
    }
    return Placement(tuple(stores), spatial_at)


def to_mapping(inputs: ZigZagInputs, architecture: Architecture, workload: Workload) -> Mapping:
    """One loop tree from the per-operand level lists and the spatial mapping."""
    acc, layer, tm = inputs.accelerator, inputs.layer, inputs.temporal_mapping
    if tm is None:
        raise SpecError(
            "importing into cyclesim needs a fixed temporal mapping", file=inputs.mapping.file
        )
    order = tm.flat_order(layer.operands[0])  # innermost first, identical for every operand
    placement = _placement(inputs)
    stores, spatial_at = placement.stores, placement.spatial_at
    served = {m.name: _served(acc, m) for m in acc.memories}
    nodes: list = []
    for position in range(len(order), -1, -1):
        here = sorted((s for s in stores if s[0] == position), key=lambda s: -s[1])
        grouped: list[tuple[str, list[str]]] = []
        for _, _, name, op in here:
            if grouped and grouped[-1][0] == name:
                grouped[-1][1].append(op)
            else:
                grouped.append((name, [op]))
        pending = [(d, loops) for d, loops in inputs.mapping.spatial if spatial_at[d] == position]
        for name, ops in grouped:
            for array_dim, loops in [p for p in pending if p[0] not in served[name]]:
                nodes += [Spatial(dim, factor, array_dim) for dim, factor in loops]
            pending = [p for p in pending if p[0] in served[name]]
            nodes.append(Storage(name, tuple(ops)))
        for array_dim, loops in pending:
            nodes += [Spatial(dim, factor, array_dim) for dim, factor in loops]
        if position > 0:
            dim, factor = order[position - 1]
            nodes.append(Temporal(dim, factor))
    nodes.append(Compute(layer.name))
    tree = tuple(_with_path(node, i) for i, node in enumerate(nodes))
    mapping = Mapping(tree, f"{layer.name} (from ZigZag)", tm.file)
    check_mapping(mapping, architecture, workload)
    return mapping


def _served(acc, memory) -> tuple[str, ...]:
    """The array dims a memory is shared across; the outermost memory (the backing store, which
    holds every tensor whole) is one instance for the whole array whatever its file says."""
    if memory is acc.memories[-1]:
        return tuple(acc.array_dimensions)
    return memory.served_dimensions


def _with_path(node, index: int):
    """A copy of a node with its loop_tree[index] path."""
    path = f"loop_tree[{index}]"
    if isinstance(node, Storage):
        return Storage(node.memory, node.tensors, path)
    if isinstance(node, Temporal):
        return Temporal(node.rank, node.bound, path)
    if isinstance(node, Spatial):
        return Spatial(node.rank, node.bound, node.dim, path)
    return Compute(node.einsum, path)


def slot_flags(
    inputs: ZigZagInputs,
) -> tuple[dict[tuple[str, str], bool], tuple[tuple[str, str], ...]]:
    """ZigZag's inferred double buffering as (tensor, memory) -> flag, fitted to whole-tile slots.

    ZigZag calls a tile double-buffered when its slice along the top relevant loops fits next to
    it (§3.4); the replay's second slot holds a whole tile, at partial-sum width for an output.
    Where two whole tiles do not fit, the largest tiles of that memory fall back to one slot;
    those pairs are returned second.
    """
    from cyclesim.checks.zigzag.mapping import mapping_quantities
    from cyclesim.checks.zigzag.model import double_buffer_flags

    if inputs.temporal_mapping is None:
        raise SpecError(
            "importing into cyclesim needs a fixed temporal mapping", file=inputs.mapping.file
        )
    q = mapping_quantities(inputs)
    zz = double_buffer_flags(inputs, q)
    flags: dict[tuple[str, str], bool] = {}
    bits: dict[str, list[tuple[int, str]]] = {}
    for op in inputs.layer.operands:
        levels = inputs.accelerator.levels(inputs.mapping.memory_operand(op))
        for m, memory in enumerate(levels):
            flags[(op, memory.name)] = zz[op][m + 1]
            if m < len(levels) - 1:  # the outermost level is the backing store: no slots
                # at the width the replay keeps the tile at (`NodePlan.stored_bits`)
                tile = q.elements_per_instance[op][m + 1] * _stored_bits(inputs, op, m)
                bits.setdefault(memory.name, []).append((tile, op))
    single: list[tuple[str, str]] = []
    for memory in inputs.accelerator.memories:
        tiles = sorted(bits.get(memory.name, []), reverse=True)
        for _, op in tiles:
            used = sum(b * (2 if flags[(o, memory.name)] else 1) for b, o in tiles)
            if used <= memory.size_bits:
                break
            if flags[(op, memory.name)]:
                flags[(op, memory.name)] = False
                single.append((op, memory.name))
    return flags, tuple(single)


def _stored_bits(inputs: ZigZagInputs, op: str, level: int) -> int:
    """The width level `level` of an operand keeps a value at in the replay: an output's
    innermost level accumulates partial sums, a higher one holds them only if a reduction loop
    remains at or above it (the level below is left unfinished and drained in between)."""
    layer = inputs.layer
    if op != layer.output_operand or level == 0:
        return layer.precision(op)
    assert inputs.temporal_mapping is not None
    relevant = set(layer.dims_of(op))
    above = inputs.temporal_mapping.of(op)[level:]
    reducing = any(dim not in relevant and f > 1 for loops in above for dim, f in loops)
    return layer.precision(op) if reducing else layer.final_output_precision_bits


def import_zigzag(
    inputs: ZigZagInputs, *, double_buffered: dict[tuple[str, str], bool] | None = None
) -> ImportedSpec:
    """cyclesim's Architecture, Workload and Mapping for a ZigZag case with a fixed temporal mapping.

    `double_buffered` maps (tensor, memory) -> flag; by default ZigZag's own inference, with one
    slot where two whole tiles do not fit (`slot_flags`).
    Raise SpecError naming what cannot be represented.
    """
    if double_buffered is None:
        double_buffered, _ = slot_flags(inputs)
    if inputs.temporal_mapping is None:
        raise SpecError(
            "importing into cyclesim needs a fixed temporal mapping", file=inputs.mapping.file
        )
    architecture = to_architecture(inputs, double_buffered)
    workload = to_workload(inputs)
    return ImportedSpec(architecture, workload, to_mapping(inputs, architecture, workload))
