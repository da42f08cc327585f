"""ZigZag 3.x inputs (accelerator, workload, mapping, fixed temporal mapping) as frozen dataclasses.

The dataclasses keep ZigZag's own concepts (memory operands I1/I2/O, the four data directions,
served array dimensions, per-operand per-level loop lists) so that the latency model in
`model` can follow ZigZag's formulas one to one. Reading and validation live in
`read` (`load_zigzag_inputs` is the one entry point).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from math import ceil, prod


class MemoryOperand(enum.Enum):
    """ZigZag's memory operands: the two inputs and the output."""

    I1 = "I1"
    I2 = "I2"
    O = "O"  # noqa: E741 - ZigZag's own name


class DataDirection(enum.Enum):
    """ZigZag's four data directions (DataDirection in memory_port.py), in its report order."""

    READ_TO_ABOVE = "rd_out_to_high"
    WRITTEN_FROM_ABOVE = "wr_in_by_high"
    READ_TO_BELOW = "rd_out_to_low"
    WRITTEN_FROM_BELOW = "wr_in_by_low"

    @property
    def words(self) -> str:
        """The direction written out in words, as the reports show it."""
        return _DIRECTION_WORDS[self]

    @property
    def code(self) -> str:
        """ZigZag's two-letter allocation code (th, fh, tl, fl)."""
        return _DIRECTION_CODES[self]

    @classmethod
    def from_code(cls, code: str) -> DataDirection:
        """The direction of an allocation code such as 'tl'."""
        return _CODE_DIRECTIONS[code]


_DIRECTION_WORDS = {
    DataDirection.READ_TO_ABOVE: "read to above",
    DataDirection.WRITTEN_FROM_ABOVE: "written from above",
    DataDirection.READ_TO_BELOW: "read to below",
    DataDirection.WRITTEN_FROM_BELOW: "written from below",
}
_DIRECTION_CODES = {
    DataDirection.READ_TO_ABOVE: "th",
    DataDirection.WRITTEN_FROM_ABOVE: "fh",
    DataDirection.READ_TO_BELOW: "tl",
    DataDirection.WRITTEN_FROM_BELOW: "fl",
}
_CODE_DIRECTIONS = {code: direction for direction, code in _DIRECTION_CODES.items()}


class PortType(enum.Enum):
    """What a ZigZag memory port may do."""

    READ = "read"
    WRITE = "write"
    READ_WRITE = "read_write"


@dataclass(frozen=True, slots=True)
class PortAllocation:
    """One 'I1, tl'-style allocation entry: a memory operand moving in one direction."""

    memory_operand: MemoryOperand
    direction: DataDirection


@dataclass(frozen=True, slots=True)
class ZigZagPort:
    """A physical memory port with the transfers allocated to it (several = shared port)."""

    name: str
    port_type: PortType
    bandwidth_min_bits: int
    bandwidth_max_bits: int
    allocation: tuple[PortAllocation, ...]

    @property
    def shared_by_both_inputs(self) -> bool:
        """ZigZag's port_is_shared_by_two_input_operands: serves both I1 and I2."""
        inputs = {a.memory_operand for a in self.allocation if a.memory_operand != MemoryOperand.O}
        return len(inputs) > 1


@dataclass(frozen=True, slots=True)
class ZigZagMemory:
    """One memory of the hierarchy: size, operands held, ports, served array dimensions."""

    name: str
    size_bits: int
    latency_cycles: int
    operands: tuple[MemoryOperand, ...]
    ports: tuple[ZigZagPort, ...]
    served_dimensions: tuple[str, ...]
    read_energy: float
    write_energy: float

    def port_for(self, operand: MemoryOperand, direction: DataDirection) -> ZigZagPort | None:
        """The port that serves (operand, direction) here, or None."""
        for port in self.ports:
            if PortAllocation(operand, direction) in port.allocation:
                return port
        return None

    @property
    def used_ports(self) -> tuple[ZigZagPort, ...]:
        """Ports with at least one allocation for an operand this memory holds (ZigZag drops the rest)."""
        return tuple(
            p for p in self.ports if any(a.memory_operand in self.operands for a in p.allocation)
        )


@dataclass(frozen=True, slots=True)
class ZigZagAccelerator:
    """A ZigZag accelerator: memories innermost first and the operational (PE) array."""

    name: str
    memories: tuple[ZigZagMemory, ...]
    array_dimensions: tuple[str, ...]
    array_sizes: tuple[int, ...]
    systolic_dimensions: tuple[str, ...]
    mac_energy: float
    file: str

    def levels(self, operand: MemoryOperand) -> tuple[ZigZagMemory, ...]:
        """The memories that hold a memory operand, innermost first (its memory levels)."""
        return tuple(m for m in self.memories if operand in m.operands)

    def level_of(self, memory: ZigZagMemory, operand: MemoryOperand) -> int:
        """The memory level index of a memory for one operand (0 = innermost)."""
        return self.levels(operand).index(memory)

    def array_size(self, dimension: str) -> int:
        """The size of one array dimension (D1, D2, ...)."""
        return self.array_sizes[self.array_dimensions.index(dimension)]

    @property
    def pe_count(self) -> int:
        """Total number of PEs (MAC units)."""
        return prod(self.array_sizes)


@dataclass(frozen=True, slots=True)
class DimensionRelation:
    """An input index as an affine sum of two loop dims, e.g. ix = 2*ox + 1*fx."""

    target: str
    first_dim: str
    first_coefficient: int
    second_dim: str
    second_coefficient: int


@dataclass(frozen=True, slots=True)
class ZigZagLayer:
    """One workload layer: equation operands with their dims, loop sizes, precisions."""

    name: str
    layer_id: int
    operator_type: str
    equation: str
    operands: tuple[str, ...]  # equation order: output first, then the inputs
    operand_dims: tuple[tuple[str, ...], ...]  # per operand, upper-case, as in the equation
    loop_dims: tuple[str, ...]
    loop_sizes: tuple[int, ...]
    relations: tuple[DimensionRelation, ...]
    precision_bits: tuple[
        tuple[str, int], ...
    ]  # per operand; the output's is its partial-sum width
    final_output_precision_bits: int
    file: str
    padding: tuple[tuple[str, int, int], ...] = ()  # (relation target, before, after)
    input_extents: tuple[tuple[str, int], ...] = ()  # pr_loop_sizes: (relation target, size)

    def padding_of(self, target: str) -> int:
        """Total padding of a relation target (e.g. IX)."""
        return sum(before + after for dim, before, after in self.padding if dim == target)

    def extent_limit(self, target: str, full: int) -> int:
        """The input's extent along a relation target, as ZigZag clips tiles to it
        (LayerNode.pr_layer_dim_sizes): `pr_loop_sizes` when given, else the extent the loops
        span minus the padding."""
        given = dict(self.input_extents)
        return given[target] if target in given else full - self.padding_of(target)

    @property
    def output_operand(self) -> str:
        """The output (first operand of the equation)."""
        return self.operands[0]

    @property
    def input_operands(self) -> tuple[str, ...]:
        """The inputs, in equation order."""
        return self.operands[1:]

    def dims_of(self, operand: str) -> tuple[str, ...]:
        """The dims an operand is indexed by in the equation (may include relation targets)."""
        return self.operand_dims[self.operands.index(operand)]

    def loop_size(self, dim: str) -> int:
        """The size of one loop dim."""
        return self.loop_sizes[self.loop_dims.index(dim)]

    def precision(self, operand: str) -> int:
        """Bits per value of an operand (the output's partial-sum width)."""
        return dict(self.precision_bits)[operand]

    @property
    def mac_count(self) -> int:
        """Total number of MACs of the layer."""
        return prod(self.loop_sizes)


Loop = tuple[str, int]
FractionalLoop = tuple[str, float]


@dataclass(frozen=True, slots=True)
class ZigZagMapping:
    """The mapping entry chosen for the layer: spatial unrolling, operand links, optional ordering."""

    entry_name: str
    spatial: tuple[tuple[str, tuple[Loop, ...]], ...]  # per array dimension, the unrolled loops
    memory_operand_links: tuple[tuple[str, MemoryOperand], ...]  # layer operand -> memory operand
    temporal_ordering: tuple[tuple[str, int | None], ...] | None  # innermost first; None = '*'
    file: str
    spatial_complete: bool = True  # False: hints only, ZigZag's search fills the array dims

    def memory_operand(self, layer_operand: str) -> MemoryOperand:
        """The memory operand a layer operand is linked to."""
        return dict(self.memory_operand_links)[layer_operand]

    def layer_operand(self, memory_operand: MemoryOperand) -> str | None:
        """The layer operand linked to a memory operand, or None."""
        for layer_op, mem_op in self.memory_operand_links:
            if mem_op == memory_operand:
                return layer_op
        return None

    def spatial_unrolling(self, dim: str) -> int:
        """The total spatial unrolling of one loop dim over all array dimensions."""
        return prod(f for _, loops in self.spatial for d, f in loops if d == dim)

    def fractional_spatial(
        self, layer: ZigZagLayer
    ) -> tuple[tuple[str, tuple[FractionalLoop, ...]], ...]:
        """The unrolling ZigZag's cost model uses (SpatialMappingConversionStage): on the first
        array dimension with a loop's largest unrolling f, the factor becomes
        size / ceil(size / (f x earlier)) / earlier, `earlier` being its unrolling on the array
        dimensions before; K 1000 over 32 PEs is 31.25, the array under-used over 32 steps."""
        adjusted: dict[str, str] = {}
        for dim in {d for _, loops in self.spatial for d, _ in loops}:
            factors = [(f, a) for a, loops in self.spatial for d, f in loops if d == dim]
            largest = max(f for f, _ in factors)
            adjusted[dim] = next(a for f, a in factors if f == largest)
        earlier: dict[str, int] = {}
        result = []
        for array_dim, loops in self.spatial:
            converted = []
            for dim, factor in loops:
                before = earlier.get(dim, 1)
                if adjusted[dim] == array_dim:
                    steps = ceil(layer.loop_size(dim) / (factor * before))
                    converted.append((dim, layer.loop_size(dim) / steps / before))
                else:
                    converted.append((dim, float(factor)))
                earlier[dim] = before * factor
            result.append((array_dim, tuple(converted)))
        return tuple(result)

    def temporal_size(self, layer: ZigZagLayer, dim: str) -> int:
        """The product of a dim's temporal loops: ceil(loop size / spatial unrolling)."""
        return ceil(layer.loop_size(dim) / self.spatial_unrolling(dim))

    def padded_size(self, layer: ZigZagLayer, dim: str) -> int:
        """A loop size rounded up to whole spatial steps: the iterations the array runs."""
        return self.temporal_size(layer, dim) * self.spatial_unrolling(dim)


@dataclass(frozen=True, slots=True)
class TemporalMapping:
    """A fixed temporal mapping (tm_*_setting form): per operand, per memory level, loops innermost first."""

    levels: tuple[tuple[str, tuple[tuple[Loop, ...], ...]], ...]
    file: str

    def of(self, operand: str) -> tuple[tuple[Loop, ...], ...]:
        """The per-level loop lists of one layer operand."""
        return dict(self.levels)[operand]

    def flat_order(self, operand: str) -> tuple[Loop, ...]:
        """All temporal loops of one operand, innermost first."""
        return tuple(loop for level in self.of(operand) for loop in level)

    @property
    def total_cycles(self) -> int:
        """Product of all temporal loops (one operand suffices; they all agree)."""
        return prod(f for _, f in self.flat_order(self.levels[0][0]))


@dataclass(frozen=True, slots=True)
class ZigZagInputs:
    """Everything one ZigZag evaluation needs; temporal_mapping None = let ZigZag choose."""

    accelerator: ZigZagAccelerator
    layer: ZigZagLayer
    mapping: ZigZagMapping
    temporal_mapping: TemporalMapping | None


def served_transfers(
    inputs: ZigZagInputs, memory: ZigZagMemory, port: ZigZagPort
) -> list[tuple[str, int, DataDirection]]:
    """A port's (layer operand, level, direction) in ZigZag's served_op_lv_dir order (linked operands only)."""
    result = []
    for mem_op in memory.operands:
        layer_op = inputs.mapping.layer_operand(mem_op)
        if layer_op is None:
            continue
        level = inputs.accelerator.level_of(memory, mem_op)
        result += [
            (layer_op, level, a.direction) for a in port.allocation if a.memory_operand == mem_op
        ]
    return result
