"""Architecture spec: PE array, memory levels with ports, DMA engines (frozen dataclasses)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from cyclesim.errors import SpecError
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
from cyclesim.spec.systolic import Dataflow, Systolic
from cyclesim.spec.yamlio import Lines, format_path, line_of, read_yaml, validate


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


# ---------------------------------------------------------------- validation models (YAML edge)
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class _Serve(_Strict):
    tensor: str = Field(description="tensor name, or '*' for every tensor of the memory")
    direction: Literal["write_from_above", "read_to_above", "read_to_below", "write_from_below"]


class _Port(_Strict):
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


class _MemoryEnergy(_Strict):
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


class _ComputeEnergy(_Strict):
    mac: float = Field(0, ge=0, allow_inf_nan=False, description="energy per MAC")
    leak_per_cycle: float = Field(0, ge=0, allow_inf_nan=False, description="per PE")


class _Placement(_Strict):
    base: int | None = Field(
        None, ge=0, le=1 << 48, description="byte address of its first value; default: packed"
    )
    order: list[str] | None = Field(None, description="tensor dims, outermost first")


class _DramBlock(_Strict):
    config: str = Field(description="a preset name or a DRAMsim3 .ini path")
    channels: int | None = Field(None, ge=1, le=256)
    ranks: int | None = Field(None, ge=1, le=16)
    address_mapping: str | None = None
    placements: dict[str, _Placement] = {}


class _Memory(_Strict):
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


class _Systolic(_Strict):
    dataflow: Literal["weight_stationary", "output_stationary", "input_stationary"]
    overlap_folds: bool = Field(
        False, description="the next fold's preload and skew hide under this one's stream"
    )


class _PEArray(_Strict):
    dims: dict[str, Annotated[int, Field(le=MAX_ARRAY_DIM)]] = Field(min_length=1)
    macs_per_pe_per_cycle: int = Field(1, gt=0, le=MAX_MACS_PER_PE)
    pipeline_depth_cycles: int = Field(0, ge=0, le=MAX_LATENCY_CYCLES)
    systolic: _Systolic | None = Field(None, description="time folds like a systolic array")
    energy: _ComputeEnergy | None = None
    no_multicast: dict[str, list[str]] = Field(
        {},
        description="dim -> tensors each position along it moves on its own (no multicast or reduction)",
    )


class _Link(_Strict):
    parent: str
    child: str


class _Dma(_Strict):
    name: str
    links: list[_Link] = Field(min_length=1)
    channels: int = Field(1, gt=0, le=MAX_CHANNELS)
    setup_cycles: int = Field(0, ge=0, le=MAX_LATENCY_CYCLES)


class _Arch(_Strict):
    name: str
    clock_mhz: float | None = Field(None, gt=0, le=MAX_CLOCK_MHZ, allow_inf_nan=False)
    description: str | None = None
    pe_array: _PEArray
    memories: list[_Memory] = Field(min_length=1)
    dma_engines: list[_Dma] = []
    energy_unit: EnergyUnit = Field(
        DEFAULT_ENERGY_UNIT, description="the unit of every energy in memories and pe_array"
    )


# ---------------------------------------------------------------- the spec the rest of cyclesim uses
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


def load_architecture(path: str) -> Architecture:
    """Read and validate an architecture YAML file; raise SpecError naming file and field."""
    data, lines, name = read_yaml(path)
    return architecture_from_dict(data, name, lines)


def architecture_from_dict(
    data: Any, name: str = "<architecture>", lines: Lines | None = None
) -> Architecture:
    """Validate a parsed architecture; every fault is one SpecError."""
    lines = lines or {}
    raw: _Arch = validate(_Arch, data, lines, name, "architecture")  # type: ignore[assignment]

    def err(msg: str, loc: tuple, **kw: Any) -> SpecError:
        return SpecError(msg, file=name, field=format_path(loc), line=line_of(lines, loc), **kw)

    dims = raw.pe_array.dims
    for dim, size in dims.items():
        if size <= 0:
            raise err(
                "array dimension sizes must be positive", ("pe_array", "dims", dim), found=size
            )
    _unique([m.name for m in raw.memories], ("memories",), "memory", err)
    memories = []
    for mi, m in enumerate(raw.memories):
        loc = ("memories", mi)
        shared = tuple(m.shared_across) if m.shared_across is not None else tuple(dims)
        for si, d in enumerate(shared):
            if d not in dims:
                raise err(
                    f"memory '{m.name}' is shared across an unknown array dimension",
                    loc + ("shared_across", si),
                    found=d,
                    expected=f"one of {sorted(dims)}",
                )
        _unique([p.name for p in m.ports], loc + ("ports",), "port", err)
        ports = []
        for pi, p in enumerate(m.ports):
            serves = None
            if p.serves is not None:
                serves = tuple((s.tensor, Direction(s.direction)) for s in p.serves)
                for si, (tensor, _) in enumerate(serves):
                    if tensor != "*" and m.tensors is not None and tensor not in m.tensors:
                        raise err(
                            f"port '{p.name}' serves a tensor memory '{m.name}' does not hold",
                            loc + ("ports", pi, "serves", si, "tensor"),
                            found=tensor,
                            expected=f"one of {m.tensors}",
                        )
            port = Port(
                p.name,
                PortKind(p.kind),
                p.width_bits,
                p.latency_cycles,
                p.burst_bits or p.width_bits,
                serves,
            )
            for si, (_, direction) in enumerate(serves or ()):
                if not port.can_serve("*", direction) and not any(
                    port.can_serve(t, direction) for t, _ in serves
                ):
                    raise err(
                        f"a {p.kind} port cannot serve direction {direction.value}",
                        loc + ("ports", pi, "serves", si, "direction"),
                    )
            ports.append(port)
        db = m.double_buffered
        if isinstance(db, list):
            for di, t in enumerate(db):
                if m.tensors is not None and t not in m.tensors:
                    raise err(
                        f"double_buffered names a tensor memory '{m.name}' does not hold",
                        loc + ("double_buffered", di),
                        found=t,
                    )
            db = tuple(db)
        if m.allocator is not None:  # the L1 model's own schema, checked here as `l1` does
            from cyclesim.l1.config import L1Config

            L1Config.from_dict(m.allocator, file=name, lines=lines, loc=loc + ("allocator",))
        mem = Memory(
            m.name,
            m.size_bits,
            shared,
            tuple(m.tensors) if m.tensors is not None else None,
            db,
            tuple(ports),
            m.allocator,
            _memory_energy(m.energy),
            _dram_model(m, loc, raw.clock_mhz, name, err) if m.dram is not None else None,
        )
        _check_port_ambiguity(mem, loc, err)
        memories.append(mem)
    names = [m.name for m in memories]
    dmas = []
    for di, d in enumerate(raw.dma_engines):
        links = []
        for li, link in enumerate(d.links):
            for end in ("parent", "child"):
                value = getattr(link, end)
                if value not in names:
                    raise err(
                        f"DMA engine '{d.name}' names an unknown memory",
                        ("dma_engines", di, "links", li, end),
                        found=value,
                        expected=f"one of {names}",
                    )
            if names.index(link.parent) >= names.index(link.child):
                raise err(
                    f"DMA engine '{d.name}' links '{link.parent}' to '{link.child}', which is not "
                    "a level below it",
                    ("dma_engines", di, "links", li),
                    expected="parent: an outer memory, child: a memory listed after it "
                    f"(outermost first: {names})",
                )
            links.append((link.parent, link.child))
        dmas.append(DmaEngine(d.name, tuple(links), d.channels, d.setup_cycles))
    for dim in raw.pe_array.no_multicast:
        if dim not in dims:
            raise err(
                "no_multicast names an unknown array dimension",
                ("pe_array", "no_multicast", dim),
                found=dim,
                expected=f"one of {sorted(dims)}",
            )
    pe = PEArray(
        tuple(dims.items()),
        raw.pe_array.macs_per_pe_per_cycle,
        raw.pe_array.pipeline_depth_cycles,
        tuple((d, tuple(ts)) for d, ts in raw.pe_array.no_multicast.items()),
        None
        if raw.pe_array.energy is None
        else ComputeEnergy(raw.pe_array.energy.mac, raw.pe_array.energy.leak_per_cycle),
        _systolic(raw.pe_array, err),
    )
    return Architecture(
        raw.name,
        pe,
        tuple(memories),
        tuple(dmas),
        raw.clock_mhz,
        name,
        lines,
        energy_unit=raw.energy_unit,
    )


def _memory_energy(raw: _MemoryEnergy | None) -> MemoryEnergy | None:
    if raw is None:
        return None
    update = raw.write if raw.update is None else raw.update
    return MemoryEnergy(raw.bits_per_action, raw.read, raw.write, update, raw.leak_per_cycle)


def _dram_model(m: _Memory, loc: tuple, clock_mhz: float | None, name: str, err: Any) -> DramModel:
    """Load the memory's DRAM config (preset or .ini, relative to the architecture file)."""
    from pathlib import Path

    from cyclesim.dram.config import PRESET_NAMES, load_dram_config

    block = m.dram
    loc = loc + ("dram",)
    if clock_mhz is None:
        raise err(
            f"memory '{m.name}' has a DRAM model but the architecture has no clock",
            ("clock_mhz",),
            expected="clock_mhz: the accelerator clock, to convert DRAM cycles exactly",
        )
    source = block.config
    if source not in PRESET_NAMES and not Path(source).is_absolute() and name.endswith(".yaml"):
        beside = Path(name).parent / source
        if beside.is_file():
            source = str(beside)
    overrides = {}
    if block.channels is not None:
        overrides["channels"] = block.channels
    if block.address_mapping is not None:
        overrides["address_mapping"] = block.address_mapping
    try:
        config = load_dram_config(source, overrides)
        if block.ranks is not None:
            if block.ranks & (block.ranks - 1):
                raise err("ranks must be a power of two", loc + ("ranks",), found=block.ranks)
            config = config.with_changes(ranks=block.ranks)
    except SpecError as e:
        field = {"channels": "channels", "address_mapping": "address_mapping"}.get(e.field or "")
        if e.line is not None and field is None:  # a fault inside the .ini: name its line
            raise SpecError(
                f"{e.detail} (the DRAM config of memory '{m.name}' in {name})",
                file=e.file,
                field=e.field,
                line=e.line,
                found=e.found,
                expected=e.expected,
            ) from None
        where = loc + ((field,) if field else ("config",))
        raise err(e.detail, where, found=e.found, expected=e.expected) from None
    if config.refresh_policy == "BANK_LEVEL_STAGGERED":
        raise err(
            "the replay's DRAM timer refreshes whole ranks; per-bank refresh is timed only by "
            "`cyclesim dram`",
            loc + ("config",),
            found=config.refresh_policy,
            expected="RANK_LEVEL_STAGGERED or RANK_LEVEL_SIMULTANEOUS",
        )
    placements = []
    for tensor, p in block.placements.items():
        if m.tensors is not None and tensor not in m.tensors:
            raise err(
                f"placement of a tensor memory '{m.name}' does not hold",
                loc + ("placements", tensor),
                found=tensor,
                expected=f"one of {list(m.tensors)}",
            )
        placements.append((tensor, p.base, tuple(p.order) if p.order is not None else None))
    written = block.model_dump(exclude_none=True, exclude_defaults=True)
    written["config"] = source
    return DramModel(config, tuple(placements), written)


def _systolic(pe: _PEArray, err: Any) -> Systolic | None:
    """The systolic option; its array is the first dimension (rows) by the second (cols)."""
    if pe.systolic is None:
        return None
    if len(pe.dims) != 2:
        raise err(
            "a systolic array has exactly two dimensions (rows, then cols)",
            ("pe_array", "dims"),
            found=list(pe.dims),
            expected="two dimensions, e.g. {rows: 32, cols: 32}",
        )
    rows, cols = pe.dims.values()
    return Systolic(Dataflow(pe.systolic.dataflow), rows, cols, pe.systolic.overlap_folds)


def _unique(names: list[str], loc: tuple, what: str, err: Any) -> None:
    seen = set()
    for i, n in enumerate(names):
        if n in seen:
            raise err(f"duplicate {what} name", loc + (i, "name"), found=n, expected="unique names")
        seen.add(n)


def _check_port_ambiguity(mem: Memory, loc: tuple, err: Any) -> None:
    """Each (memory, tensor, direction) must be served by at most one port."""
    tensors = list(mem.tensors) if mem.tensors is not None else ["*"]
    for tensor in tensors:
        for direction in Direction:
            serving = [p.name for p in mem.ports if p.can_serve(tensor, direction)]
            if len(serving) > 1:
                what = f"tensor {tensor}" if tensor != "*" else "every tensor"
                raise err(
                    f"memory '{mem.name}': {what}, direction {direction.value} is served by "
                    f"several ports {serving}; give the ports 'serves' lists so exactly one serves it",
                    loc + ("ports",),
                )
