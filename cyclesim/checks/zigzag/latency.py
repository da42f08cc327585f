"""The results of ZigZag 3.9.1's latency model as frozen dataclasses, one named term per field.

`model.evaluate` and `loading.loading_latency` fill them; `peer` reads zigzag-dse's own evaluation
into the same shapes, so the two can be compared field by field.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from cyclesim.checks.zigzag.inputs import DataDirection

DIRECTIONS = tuple(DataDirection)


@dataclass(frozen=True, slots=True)
class Transfer:
    """One periodic transfer and its window on a port (ZigZag's PortActivity)."""

    layer_operand: str
    memory: str
    level: int
    direction: DataDirection
    real_cycles: int
    allowed_cycles: int
    period_cycles: int
    period_count: int

    @property
    def stall_cycles(self) -> int:
        """(real - allowed) x (N - 1); negative = slack. The first period belongs to on/offloading."""
        return (self.real_cycles - self.allowed_cycles) * (self.period_count - 1)

    @property
    def updating_window_cycles(self) -> int:
        """allowed x (N - 1): the memory updating window (MUW) over the layer."""
        return self.allowed_cycles * (self.period_count - 1)


@dataclass(frozen=True, slots=True)
class PortStall:
    """Combined stall (+) or slack (-) of one physical port (SScomb), with its transfers."""

    memory: str
    port: str
    transfers: tuple[Transfer, ...]
    window_union_cycles: int
    stall_cycles: int


@dataclass(frozen=True, slots=True)
class DoubleBuffer:
    """ZigZag's inferred double buffering of one operand in one memory (there is no user switch)."""

    layer_operand: str
    memory: str
    level: int
    double_buffered: bool


class LinkSharing(enum.Enum):
    """Whether both ends of an onloading link sit on ports shared by the two inputs."""

    SEPARATE = "separate"
    HALF_SHARED = "half shared"
    SHARED = "shared"


@dataclass(frozen=True, slots=True)
class LoadingEntry:
    """The first (onloading) or last (offloading) period of one transfer, after the N == 1 reduction."""

    layer_operand: str
    memory: str
    level: int
    direction: DataDirection
    port: str
    cycles: float
    unreduced_cycles: int
    port_shared_by_both_inputs: bool


@dataclass(frozen=True, slots=True)
class LinkLoad:
    """One link between two memory levels of an operand, in on- or offloading: the slower end counts."""

    layer_operand: str
    lower_memory: str
    upper_memory: str
    cycles: float
    sharing: LinkSharing


@dataclass(frozen=True, slots=True)
class OnloadingParts:
    """Per input operand: onloading on its own ports, on half-shared and on fully shared links."""

    layer_operand: str
    individual_cycles: float
    half_shared_cycles: float
    shared_cycles: float


@dataclass(frozen=True, slots=True)
class WordAccess:
    """Port-width words moved in one direction at one memory level, summed over its instances."""

    layer_operand: str
    memory: str
    level: int
    direction: DataDirection
    words: int


@dataclass(frozen=True, slots=True)
class ZigZagLatency:
    """ZigZag's latency terms and word accesses for one layer and one fixed mapping."""

    latency_total_cycles: float
    ideal_cycles: int
    ideal_temporal_cycles: float
    temporal_stall_cycles: float
    onloading_cycles: float
    offloading_cycles: float
    systolic_drain_cycles: int
    borrowed_cycles: float
    double_buffers: tuple[DoubleBuffer, ...]
    port_stalls: tuple[PortStall, ...]
    onloading_entries: tuple[LoadingEntry, ...]
    offloading_entries: tuple[LoadingEntry, ...]
    onloading_links: tuple[LinkLoad, ...]
    offloading_links: tuple[LinkLoad, ...]
    onloading_parts: tuple[OnloadingParts, ...]
    word_accesses: tuple[WordAccess, ...]

    @property
    def spatial_stall_cycles(self) -> float:
        """Cycles lost because the spatial mapping leaves PEs idle (ideal temporal - ideal)."""
        return self.ideal_temporal_cycles - self.ideal_cycles

    @property
    def latency_with_stall_cycles(self) -> float:
        """ZigZag's latency_total0: computation plus the worst port's stall."""
        return self.ideal_temporal_cycles + self.temporal_stall_cycles

    @property
    def latency_with_onloading_cycles(self) -> float:
        """ZigZag's latency_total1: latency_total0 plus onloading."""
        return self.latency_with_stall_cycles + self.onloading_cycles

    def words(self, layer_operand: str, memory: str, direction: DataDirection) -> int:
        """Word accesses of one operand, memory and direction."""
        for access in self.word_accesses:
            if (access.layer_operand, access.memory, access.direction) == (
                layer_operand,
                memory,
                direction,
            ):
                return access.words
        raise KeyError((layer_operand, memory, direction))
