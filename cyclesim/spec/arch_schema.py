"""The architecture YAML's validation models (pydantic, extra="forbid", strict): the fields a
file may hold, their types, bounds and defaults. spec/arch.py validates a file against them and
builds the frozen spec (spec/arch_types.py). The models keep their leading underscore: pydantic
names them in the messages users read ('a valid dictionary or instance of _Port')."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from cyclesim.spec.energy_units import DEFAULT_ENERGY_UNIT, EnergyUnit
from cyclesim.spec.limits import (
    MAX_ARRAY_DIM,
    MAX_CHANNELS,
    MAX_CLOCK_MHZ,
    MAX_LATENCY_CYCLES,
    MAX_MACS_PER_PE,
    MAX_SIZE_BITS,
    MAX_WIDTH_BITS,
)
from cyclesim.spec.yamlio import StrictModel


class _Serve(StrictModel):
    tensor: str = Field(description="tensor name, or '*' for every tensor of the memory")
    direction: Literal["write_from_above", "read_to_above", "read_to_below", "write_from_below"]


class _Port(StrictModel):
    name: str
    kind: Literal["read", "write", "read_write"]
    width_bits: int = Field(gt=0, le=MAX_WIDTH_BITS, description="bits per cycle")
    latency_cycles: int = Field(
        0, ge=0, le=MAX_LATENCY_CYCLES, description="paid once per transfer, after its last burst"
    )
    burst_bits: int | None = Field(
        None, gt=0, le=MAX_WIDTH_BITS, description="arbitration unit; default width_bits"
    )
    serves: list[_Serve] | None = Field(None, description="default: all that its kind allows")


class _MemoryEnergy(StrictModel):
    bits_per_action: float = Field(
        1, gt=0, allow_inf_nan=False, description="bits one action moves"
    )
    read: float = Field(0, ge=0, allow_inf_nan=False, description="energy per read action")
    write: float = Field(0, ge=0, allow_inf_nan=False, description="energy per write action")
    update: float | None = Field(
        None,
        ge=0,
        allow_inf_nan=False,
        description="per write of an output from below; default: write",
    )
    leak_per_cycle: float = Field(0, ge=0, allow_inf_nan=False, description="per instance")


class _ComputeEnergy(StrictModel):
    mac: float = Field(0, ge=0, allow_inf_nan=False, description="energy per MAC")
    leak_per_cycle: float = Field(0, ge=0, allow_inf_nan=False, description="per PE")


class _Placement(StrictModel):
    base: int | None = Field(
        None, ge=0, le=1 << 48, description="byte address of its first value; default: packed"
    )
    order: list[str] | None = Field(None, description="tensor dims, outermost first")


class _DramBlock(StrictModel):
    config: str = Field(description="a preset name or a DRAMsim3 .ini path")
    channels: int | None = Field(None, ge=1, le=256)
    ranks: int | None = Field(None, ge=1, le=16)
    address_mapping: str | None = None
    placements: dict[str, _Placement] = {}
    timing: Literal["timer", "controller"] = Field(
        "timer",
        description="the replay's DRAM timing: the closed-form timer, or the controller "
        "`cyclesim dram` runs, in the loop (docs/dram_causes.md)",
    )


class _Memory(StrictModel):
    name: str
    size_bits: int | None = Field(
        None, gt=0, le=MAX_SIZE_BITS, description="per instance; null = unbounded"
    )
    shared_across: list[str] | None = Field(None, description="array dims; default: all")
    tensors: list[str] | None = Field(None, description="tensors it may hold; default: all")
    double_buffered: bool | list[str] = False
    ports: list[_Port] = Field(min_length=1)
    allocator: dict[str, Any] | None = None
    energy: _MemoryEnergy | None = None
    dram: _DramBlock | None = None


class _Systolic(StrictModel):
    dataflow: Literal["weight_stationary", "output_stationary", "input_stationary"]
    overlap_folds: bool = Field(
        False, description="the next fold's preload and skew hide under this one's stream"
    )


class _PEArray(StrictModel):
    dims: dict[str, Annotated[int, Field(le=MAX_ARRAY_DIM)]] = Field(min_length=1)
    macs_per_pe_per_cycle: int = Field(1, gt=0, le=MAX_MACS_PER_PE)
    pipeline_depth_cycles: int = Field(0, ge=0, le=MAX_LATENCY_CYCLES)
    systolic: _Systolic | None = Field(None, description="time folds like a systolic array")
    energy: _ComputeEnergy | None = None
    no_multicast: dict[str, list[str]] = Field(
        {},
        description="dim -> tensors each position along it moves on its own (no multicast or reduction)",
    )


class _Link(StrictModel):
    parent: str
    child: str


class _Dma(StrictModel):
    name: str
    links: list[_Link] = Field(min_length=1)
    channels: int = Field(1, gt=0, le=MAX_CHANNELS)
    setup_cycles: int = Field(0, ge=0, le=MAX_LATENCY_CYCLES)


class _Arch(StrictModel):
    name: str
    clock_mhz: float | None = Field(None, gt=0, le=MAX_CLOCK_MHZ, allow_inf_nan=False)
    description: str | None = None
    pe_array: _PEArray
    memories: list[_Memory] = Field(min_length=1)
    dma_engines: list[_Dma] = []
    energy_unit: EnergyUnit = Field(
        DEFAULT_ENERGY_UNIT, description="the unit of every energy in memories and pe_array"
    )
