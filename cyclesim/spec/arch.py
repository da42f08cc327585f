"""Architecture spec: load and validate an architecture YAML (against spec/arch_schema.py) into
the frozen dataclasses of spec/arch_types.py (PE array, memory levels with ports, DMA engines),
every fault one SpecError naming file, field and line. The dataclasses are importable from here
too."""

from __future__ import annotations

from typing import Any

from cyclesim.errors import SpecError
from cyclesim.spec.arch_schema import _Arch, _Memory, _MemoryEnergy, _PEArray
from cyclesim.spec.arch_types import (
    Architecture,
    ComputeEnergy,
    Direction,
    DmaEngine,
    DramModel,
    Memory,
    MemoryEnergy,
    PEArray,
    Port,
    PortKind,
)
from cyclesim.spec.systolic import Dataflow, Systolic
from cyclesim.spec.yamlio import Lines, format_path, line_of, read_yaml, validate


def load_architecture(path: str) -> Architecture:
    """Read and validate an architecture YAML file; raise SpecError naming file and field."""
    data, lines, name = read_yaml(path)
    return architecture_from_dict(data, name, lines)


def architecture_from_dict(
    data: Any, name: str = "<architecture>", lines: Lines | None = None
) -> Architecture:
    """Validate a parsed architecture; every fault is one SpecError.

    Over 80 lines: the checks in the order of the file's fields, each refusing with the file,
    field and line; they share err and the memories read so far.
    """
    lines = lines or {}
    if isinstance(data, dict) and "cores" in data and "pe_array" not in data:
        raise SpecError(
            "this is a chip of several cores (cores:, interconnect:), not one core's architecture",
            file=name, field="cores", line=line_of(lines, ("cores",)),
            expected="`cyclesim chip ARCH WORKLOAD MAPPING` for a chip (docs/multicore.md)",
        )  # fmt: skip
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

    from cyclesim.dram.load import load_dram_config
    from cyclesim.dram.presets import PRESET_NAMES

    block = m.dram
    loc = loc + ("dram",)
    if clock_mhz is None:
        raise err(
            f"memory '{m.name}' has a DRAM model but the architecture has no clock",
            ("clock_mhz",),
            expected="clock_mhz: the accelerator clock, to convert DRAM cycles exactly",
        )
    source = block.config
    tried = [source]  # a path that names no file: each place looked in, in the error
    if source not in PRESET_NAMES and not Path(source).is_absolute() and name.endswith(".yaml"):
        beside = Path(name).parent / source
        tried = [f"{beside} (beside the architecture)", f"{source} (in the working directory)"]
        if beside.is_file():
            source = str(beside)
    if not Path(source).is_file() and (Path(source).suffix or "/" in source or "\\" in source):
        places = f"neither {tried[0]} nor {tried[1]} exists" if len(tried) > 1 else tried[0]
        raise err(
            f"no such DRAM config file: {places}",
            loc + ("config",),
            found=block.config,
            expected=f"a DRAMsim3 .ini relative to {name} (or absolute), or a preset: "
            + ", ".join(PRESET_NAMES),
        )
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
        if block.timing == "controller":
            config = config.with_changes(replay_controller=True)
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
    if config.refresh_policy == "BANK_LEVEL_STAGGERED" and not config.replay_controller:
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
