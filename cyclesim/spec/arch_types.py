"""The architecture spec the rest of cyclesim uses: PE array, memory levels with ports, DMA
engines, as frozen dataclasses with full names and units (spec/arch.py loads them from YAML)."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import Any

from cyclesim.errors import SpecError
from cyclesim.spec.energy_units import DEFAULT_ENERGY_UNIT
from cyclesim.spec.systolic import Systolic
from cyclesim.spec.yamlio import format_path, line_of


class PortKind(enum.Enum):
    READ = "read"
    WRITE = "write"
    READ_WRITE = "read_write"


class Direction(enum.Enum):
    """The four directions a memory's port can serve (ZigZag's fh, th, tl, fl, in words)."""

    WRITE_FROM_ABOVE = "write_from_above"  # a fill or partial-sum reload arriving from the parent
    READ_TO_ABOVE = "read_to_above"  # a write-back leaving for the parent
    READ_TO_BELOW = "read_to_below"  # read by the level below or by the PE array
    WRITE_FROM_BELOW = "write_from_below"  # written by the level below or by the PE array

    @property
    def is_read(self) -> bool:
        return self in (Direction.READ_TO_ABOVE, Direction.READ_TO_BELOW)


@dataclass(frozen=True, slots=True)
class Port:
    name: str
    kind: PortKind
    width_bits: int
    latency_cycles: int
    burst_bits: int
    serves: tuple[tuple[str, Direction], ...] | None  # None: everything its kind allows

    def can_serve(self, tensor: str, direction: Direction) -> bool:
        if direction.is_read and self.kind is PortKind.WRITE:
            return False
        if not direction.is_read and self.kind is PortKind.READ:
            return False
        if self.serves is None:
            return True
        return any(t in ("*", tensor) and d is direction for t, d in self.serves)


@dataclass(frozen=True, slots=True)
class MemoryEnergy:
    """Energy per action of a memory (an action moves `bits_per_action` bits) and leak per cycle."""

    bits_per_action: float
    read: float
    write: float
    update: float  # a write of an output's partial sums from below (Timeloop's update)
    leak_per_cycle: float  # per instance


@dataclass(frozen=True, slots=True)
class ComputeEnergy:
    """Energy per MAC and leak per PE per cycle."""

    mac: float
    leak_per_cycle: float


@dataclass(frozen=True, slots=True)
class DramModel:
    """A memory's DRAM device (cyclesim.dram.config) and where its tensors are placed."""

    config: Any  # DramConfig, loaded and validated
    placements: tuple[
        tuple[str, int | None, tuple[str, ...] | None], ...
    ] = ()  # tensor, base, order
    block: dict | None = field(default=None, compare=False)  # the YAML block, config path resolved


@dataclass(frozen=True, slots=True)
class Memory:
    name: str
    size_bits: int | None
    shared_across: tuple[str, ...]
    tensors: tuple[str, ...] | None  # None: any tensor
    double_buffered: tuple[str, ...] | bool
    ports: tuple[Port, ...]
    allocator: dict | None = None
    energy: MemoryEnergy | None = None  # None: no energies given
    dram: DramModel | None = None  # banks, rows and timing behind this memory's ports

    def holds(self, tensor: str) -> bool:
        return self.tensors is None or tensor in self.tensors

    def slots_for(self, tensor: str) -> int:
        """Two slots when the tensor is double-buffered here, otherwise one."""
        if isinstance(self.double_buffered, bool):
            return 2 if self.double_buffered else 1
        return 2 if tensor in self.double_buffered else 1

    def port_for(self, tensor: str, direction: Direction) -> Port | None:
        """The single port that serves (tensor, direction), or None if no port does."""
        for port in self.ports:
            if port.can_serve(tensor, direction):
                return port
        return None


@dataclass(frozen=True, slots=True)
class PEArray:
    dims: tuple[tuple[str, int], ...]
    macs_per_pe_per_cycle: int
    pipeline_depth_cycles: int
    no_multicast: tuple[
        tuple[str, tuple[str, ...]], ...
    ] = ()  # (dim, tensors) — AccelForge's may_reuse
    energy: ComputeEnergy | None = None  # None: no energies given
    systolic: Systolic | None = None  # None: one iteration per cycle, no wavefront

    @property
    def dim_sizes(self) -> dict[str, int]:
        return dict(self.dims)

    def no_multicast_dims(self, tensor: str) -> frozenset[str]:
        """Array dims along which this tensor is neither multicast nor reduced for free."""
        return frozenset(d for d, ts in self.no_multicast if tensor in ts)


@dataclass(frozen=True, slots=True)
class DmaEngine:
    name: str
    links: tuple[tuple[str, str], ...]  # (parent memory, child memory)
    channels: int
    setup_cycles: int


@dataclass(frozen=True, slots=True)
class Architecture:
    name: str
    pe_array: PEArray
    memories: tuple[Memory, ...]  # outermost first
    dma_engines: tuple[DmaEngine, ...] = ()
    clock_mhz: float | None = None
    source: str = "<architecture>"
    lines: dict = field(default_factory=dict, compare=False, hash=False, repr=False)
    energy_unit: str = DEFAULT_ENERGY_UNIT  # of every energy in memories and pe_array

    def memory(self, name: str) -> Memory:
        for mem in self.memories:
            if mem.name == name:
                return mem
        raise KeyError(name)

    def instances_of(self, memory: Memory) -> int:
        """How many copies of a memory the chip has: one per position of every array dimension
        it is not shared across (accesses and port traffic are totals over them)."""
        dims = self.pe_array.dim_sizes
        return math.prod(n for d, n in dims.items() if d not in memory.shared_across)

    def memory_index(self, name: str) -> int:
        return [m.name for m in self.memories].index(name)

    def dma_for(self, parent: str, child: str) -> DmaEngine | None:
        for dma in self.dma_engines:
            if (parent, child) in dma.links:
                return dma
        return None

    def with_field(self, path: str, value: Any) -> Architecture:
        """A copy with one field changed by its YAML path ('memories.sram.size_bits'), re-validated."""
        from cyclesim.spec.override import architecture_with_field

        return architecture_with_field(self, path, value)

    def with_port_width(self, memory: str, port: str, width_bits: int) -> Architecture:
        """A copy with one port's width changed (a defaulted burst_bits follows it)."""
        return self.with_field(f"memories.{memory}.ports.{port}.width_bits", width_bits)

    def error(self, message: str, loc: tuple = (), **kw: Any) -> SpecError:
        """A SpecError pointing into this architecture file."""
        return SpecError(
            message,
            file=self.source,
            field=format_path(loc) or None,
            line=line_of(self.lines, loc),
            **kw,
        )
