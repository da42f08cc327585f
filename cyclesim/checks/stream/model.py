"""Stream's inputs as frozen dataclasses: the multi-core accelerator (cores, connections, the
off-chip core), the mapping (allocation, inter-core tiling, fused groups) and the ONNX nodes."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from cyclesim.checks.zigzag.inputs import ZigZagAccelerator


class CoreKind(enum.Enum):
    """What a Stream core is for: it computes, it is the DRAM, or it is an on-chip memory."""

    COMPUTE = "compute"
    OFFCHIP = "offchip"
    MEMORY = "memory"


class ConnectionKind(enum.Enum):
    """A `core_connectivity` entry: a point-to-point link (one per direction) or a shared bus."""

    LINK = "link"
    BUS = "bus"


@dataclass(frozen=True, slots=True)
class StreamCore:
    """One core: its file, Stream's type and fields, and (for a compute core) its ZigZag model."""

    id: int
    file: str
    name: str
    kind: CoreKind
    type: str
    operator_types: tuple[str, ...] | None  # None: every operator
    zigzag: ZigZagAccelerator | None  # None for the off-chip core and memory cores
    top_memory: str  # the memory that serves every operand: transfers land there
    top_port_bits: int  # its widest port, bits per cycle


@dataclass(frozen=True, slots=True)
class Connection:
    """One `core_connectivity` entry as written (index = its position in the list)."""

    index: int
    kind: ConnectionKind
    cores: tuple[int, ...]
    bandwidth: float  # bits per cycle
    unit_energy_cost: float


@dataclass(frozen=True, slots=True)
class StreamAccelerator:
    """A Stream accelerator YAML, with its connections resolved the way Stream's core graph does."""

    name: str
    file: str
    cores: tuple[StreamCore, ...]
    offchip_core_id: int
    connections: tuple[Connection, ...]
    channels: tuple[
        tuple[int, int, int], ...
    ]  # (source, target, index of the connection that wins)
    unmodelled: tuple[str, ...]  # top-level fields present that the replay does not model

    def core(self, core_id: int) -> StreamCore:
        """The core with this id."""
        return next(c for c in self.cores if c.id == core_id)

    def dead_connections(self) -> tuple[Connection, ...]:
        """Connections that carry nothing: every ordered pair they join is won by a later entry."""
        alive = {index for _, _, index in self.channels}
        return tuple(c for c in self.connections if c.index not in alive)


@dataclass(frozen=True, slots=True)
class LayerMapping:
    """A `layers:` entry: candidate cores and the inter-core split of the layer's dims."""

    name: str
    core_allocation: tuple[tuple[int, ...], ...]
    inter_core_tiling: tuple[tuple[tuple[str, int], ...], ...]  # per allocation: (dim, split)


@dataclass(frozen=True, slots=True)
class FusedGroup:
    """A `fused_groups:` entry: one MILP, its layers and its steady-state step per core."""

    name: str
    layers: tuple[str, ...]
    intra_core_tiling: tuple[tuple[str, str, int], ...]  # (layer, dim, tile)


@dataclass(frozen=True, slots=True)
class StreamMapping:
    """A Stream mapping YAML."""

    file: str
    layers: tuple[LayerMapping, ...]
    groups: tuple[FusedGroup, ...]


@dataclass(frozen=True, slots=True)
class OnnxNode:
    """One node of the ONNX workload: what the mapping refers to by name or operator type."""

    name: str
    op_type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
