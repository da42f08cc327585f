"""The chip architecture: several cores (each an architecture as today), an off-chip memory
shared by all of them, and the interconnect (point-to-point links and buses) between them.

Loaded from one YAML file into frozen dataclasses; every fault is one SpecError naming file,
field and line. A core's architecture is inline or a file of hw_models/ (relative to the chip
file); it is validated by cyclesim.spec as any single-core architecture is.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from cyclesim.errors import SpecError
from cyclesim.spec.arch import architecture_from_dict, load_architecture
from cyclesim.spec.arch_schema import _DramBlock, _Port
from cyclesim.spec.arch_types import Architecture, DramModel, Port, PortKind
from cyclesim.spec.field_errors import NAME_PATTERN
from cyclesim.spec.limits import MAX_CLOCK_MHZ, MAX_LATENCY_CYCLES, MAX_WIDTH_BITS
from cyclesim.spec.yamlio import Lines, StrictModel, format_path, line_of, read_yaml, validate


class MediumKind(enum.Enum):
    """What carries a transfer between two ends of the chip."""

    LINK = "link"  # point-to-point, one direction
    BUS = "bus"  # one arbitrated medium shared by all its members, both directions


class _Core(StrictModel):
    name: str = Field(pattern=NAME_PATTERN, description="letters, digits, _ and -")
    architecture: str | dict[str, Any] = Field(
        description="a single-core architecture: a file (relative to this one) or inline"
    )


class _Offchip(StrictModel):
    name: str = Field("dram", pattern=NAME_PATTERN, description="letters, digits, _ and -")
    ports: list[_Port] = Field(min_length=1, max_length=2)
    dram: _DramBlock | None = None


class _LinkDecl(StrictModel):
    name: str
    cores: list[str] = Field(min_length=2, max_length=2, description="[from, to]")
    width_bits: int = Field(gt=0, le=MAX_WIDTH_BITS, description="bits per cycle")
    latency_cycles: int = Field(0, ge=0, le=MAX_LATENCY_CYCLES)
    burst_bits: int | None = Field(None, gt=0, le=MAX_WIDTH_BITS)
    bidirectional: bool = Field(False, description="also a second link of its own, to -> from")


class _BusDecl(StrictModel):
    name: str
    cores: list[str] = Field(min_length=2)
    width_bits: int = Field(gt=0, le=MAX_WIDTH_BITS)
    latency_cycles: int = Field(0, ge=0, le=MAX_LATENCY_CYCLES)
    burst_bits: int | None = Field(None, gt=0, le=MAX_WIDTH_BITS)


class _Interconnect(StrictModel):
    links: list[_LinkDecl] = []
    buses: list[_BusDecl] = []
    prefer: Literal["link", "bus"] | None = Field(
        None, description="which medium a pair joined by both a link and a bus uses"
    )


class _Chip(StrictModel):
    name: str
    clock_mhz: float | None = Field(None, gt=0, le=MAX_CLOCK_MHZ, allow_inf_nan=False)
    description: str | None = None
    cores: list[_Core] = Field(min_length=1)
    offchip: _Offchip
    interconnect: _Interconnect = _Interconnect()


@dataclass(frozen=True, slots=True)
class Core:
    """One core: its name and its single-core architecture (memories outermost first; the
    outermost is the core's top memory, where transfers between cores land and leave)."""

    name: str
    architecture: Architecture

    @property
    def top_memory(self) -> str:
        return self.architecture.memories[0].name


@dataclass(frozen=True, slots=True)
class Medium:
    """A link (one direction, ends = (from, to)) or a bus (ends = its members), arbitrated per
    burst. `path` is its field path in the file (for messages)."""

    name: str
    kind: MediumKind
    ends: tuple[str, ...]
    width_bits: int
    latency_cycles: int
    burst_bits: int
    path: str = ""

    def joins(self, a: str, b: str) -> bool:
        if self.kind is MediumKind.LINK:
            return self.ends == (a, b)
        return a in self.ends and b in self.ends and a != b


@dataclass(frozen=True, slots=True)
class Offchip:
    """The off-chip memory (DRAM) all cores share: its ports and optional DRAM timing block."""

    name: str
    ports: tuple[Port, ...]
    dram: DramModel | None = None  # banks, rows and timing behind the ports (`dram:`)

    def port(self, read: bool) -> Port:
        """The port that moves data out of (read) or into (write) the off-chip memory."""
        for p in self.ports:
            if p.kind is PortKind.READ_WRITE or (p.kind is PortKind.READ) == read:
                return p
        raise KeyError("read" if read else "write")


@dataclass(frozen=True, slots=True)
class Chip:
    name: str
    cores: tuple[Core, ...]
    offchip: Offchip
    media: tuple[Medium, ...]  # links (each direction its own) then buses, in file order
    prefer: MediumKind | None = None
    clock_mhz: float | None = None
    source: str = "<chip>"
    lines: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def core_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.cores)

    def core(self, name: str) -> Core:
        for c in self.cores:
            if c.name == name:
                return c
        raise KeyError(name)

    def medium(self, name: str) -> Medium:
        for m in self.media:
            if m.name == name:
                return m
        raise KeyError(name)

    def error(self, message: str, loc: tuple = (), **kw: Any) -> SpecError:
        return SpecError(
            message, file=self.source, field=format_path(loc) or None,
            line=line_of(self.lines, loc), **kw,
        )  # fmt: skip


def load_chip(path: str) -> Chip:
    """Read and validate a chip architecture YAML file; raise SpecError naming file and field."""
    data, lines, name = read_yaml(path)
    return chip_from_dict(data, name, lines)


def chip_from_dict(data: Any, name: str = "<chip>", lines: Lines | None = None) -> Chip:
    """Validate a parsed chip architecture; every fault is one SpecError."""
    lines = lines or {}
    if isinstance(data, dict) and "pe_array" in data and "cores" not in data:
        raise SpecError(
            "this is one core's architecture (pe_array:, memories:), not a chip", file=name,
            field="pe_array", line=line_of(lines, ("pe_array",)),
            expected="a chip listing it as a core: cores: [{name: c0, architecture: FILE}], "
            "offchip:, interconnect: (docs/multicore.md), or `cyclesim run` for one core",
        )  # fmt: skip
    raw: _Chip = validate(_Chip, data, lines, name, "chip architecture")  # type: ignore[assignment]

    def err(msg: str, loc: tuple, **kw: Any) -> SpecError:
        return SpecError(msg, file=name, field=format_path(loc), line=line_of(lines, loc), **kw)

    cores = []
    for ci, c in enumerate(raw.cores):
        if c.name in [x.name for x in cores]:
            raise err("duplicate core name", ("cores", ci, "name"), found=c.name)
        cores.append(Core(c.name, _core_architecture(c.architecture, ("cores", ci), name, lines)))
    off = raw.offchip
    if off.name in [c.name for c in cores]:
        raise err("the off-chip memory has a core's name", ("offchip", "name"), found=off.name)
    ports = tuple(
        Port(p.name, PortKind(p.kind), p.width_bits, p.latency_cycles, p.burst_bits or p.width_bits,
             None)
        for p in off.ports
    )  # fmt: skip
    kinds = sorted(p.kind.value for p in ports)
    if kinds not in (["read_write"], ["read", "write"]):
        raise err(
            "the off-chip memory needs one read_write port, or one read and one write port",
            ("offchip", "ports"),
            found=kinds,
        )
    ends = [c.name for c in cores] + [off.name]
    media: list[Medium] = []

    def add(m: Medium, loc: tuple) -> None:
        if m.name in [x.name for x in media]:
            raise err("duplicate link or bus name", loc + ("name",), found=m.name)
        media.append(m)

    ic = raw.interconnect
    for li, link in enumerate(ic.links):
        loc = ("interconnect", "links", li)
        _check_ends(link.cores, ends, loc, err)
        a, b = link.cores
        if a == b:
            raise err("a link joins a core to itself", loc + ("cores",), found=link.cores)
        burst = link.burst_bits or link.width_bits
        path = format_path(loc)
        if link.bidirectional:
            for x, y in ((a, b), (b, a)):
                add(Medium(f"{link.name}[{x}>{y}]", MediumKind.LINK, (x, y), link.width_bits,
                           link.latency_cycles, burst, path), loc)  # fmt: skip
        else:
            add(Medium(link.name, MediumKind.LINK, (a, b), link.width_bits, link.latency_cycles,
                       burst, path), loc)  # fmt: skip
    for bi, bus in enumerate(ic.buses):
        loc = ("interconnect", "buses", bi)
        _check_ends(bus.cores, ends, loc, err)
        if len(set(bus.cores)) != len(bus.cores):
            raise err("a bus lists a member twice", loc + ("cores",), found=bus.cores)
        add(Medium(bus.name, MediumKind.BUS, tuple(bus.cores), bus.width_bits, bus.latency_cycles,
                   bus.burst_bits or bus.width_bits, format_path(loc)), loc)  # fmt: skip
    dram = None
    if off.dram is not None:  # validated as a memory's `dram:` block is (spec/arch.py)
        from types import SimpleNamespace

        from cyclesim.spec.arch import _dram_model

        memory = SimpleNamespace(name=off.name, dram=off.dram, tensors=None)
        dram = _dram_model(memory, ("offchip",), raw.clock_mhz, name, err)
    chip = Chip(raw.name, tuple(cores), Offchip(off.name, ports, dram), tuple(media),
                MediumKind(ic.prefer) if ic.prefer else None, raw.clock_mhz, name, lines)  # fmt: skip
    _check_pairs(chip, err)
    return chip


def _check_ends(names: list[str], ends: list[str], loc: tuple, err: Any) -> None:
    for i, n in enumerate(names):
        if n not in ends:
            raise err("names an unknown core", loc + ("cores", i), found=n,
                      expected=f"one of {ends} (the cores and the off-chip memory)")  # fmt: skip


def _check_pairs(chip: Chip, err: Any) -> None:
    """Between an ordered pair of ends there must be one medium to use: two links, or two buses,
    are ambiguous; a link and a bus need `interconnect.prefer`."""
    ends = chip.core_names + (chip.offchip.name,)
    for a in ends:
        for b in ends:
            if a == b:
                continue
            both = [m for m in chip.media if m.joins(a, b)]
            for kind in MediumKind:
                same = [m for m in both if m.kind is kind]
                if len(same) > 1:
                    raise err(
                        f"two {kind.value}s join {a} -> {b}: {[m.name for m in same]}",
                        _loc_of(same[1].path),
                        expected=f"one {kind.value} per pair and direction",
                    )
            if len({m.kind for m in both}) > 1 and chip.prefer is None:
                raise err(
                    f"{a} -> {b} is joined by both a link ({_named(both, MediumKind.LINK)}) and "
                    f"a bus ({_named(both, MediumKind.BUS)}) and no rule says which to use",
                    ("interconnect", "prefer"),
                    expected="interconnect.prefer: link or bus",
                )


def _named(media: list[Medium], kind: MediumKind) -> str:
    return ", ".join(m.name for m in media if m.kind is kind)


def _loc_of(path: str) -> tuple:
    """'interconnect.links[2]' -> ('interconnect', 'links', 2)."""
    out: list = []
    for part in path.replace("]", "").split("."):
        name, *idx = part.split("[")
        out.append(name)
        out.extend(int(i) for i in idx)
    return tuple(out)


def _core_architecture(value: str | dict, loc: tuple, name: str, lines: Lines) -> Architecture:
    if isinstance(value, str):
        path = Path(value)
        if not path.is_absolute():
            path = Path(name).parent / path
        if not path.is_file():
            raise SpecError(
                "no such core architecture file", file=name,
                field=format_path(loc + ("architecture",)),
                line=line_of(lines, loc + ("architecture",)), found=value,
                expected=f"a file relative to {name}",
            )  # fmt: skip
        return load_architecture(str(path))
    prefix = loc + ("architecture",)
    sub = {k[len(prefix) :]: v for k, v in lines.items() if k[: len(prefix)] == prefix}
    try:
        return architecture_from_dict(value, name, sub)
    except SpecError as e:
        line = e.line if e.line is not None else line_of(lines, prefix)
        raise SpecError(
            e.detail, file=name, field=format_path(prefix) + ("." + e.field if e.field else ""),
            line=line, found=e.found, expected=e.expected,
        ) from None  # fmt: skip
