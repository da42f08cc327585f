"""The Python API: `simulate(architecture, workload, mapping)` -> `Result`, one replay from
paths or spec objects, and the functions that turn a Result into what `cyclesim run` prints
and writes (they need a view or another replay, which the results layer may not start).

    import cyclesim
    arch = cyclesim.load_architecture("hw_models/tpu_like.yaml").with_port_width("dram", "rd", 256)
    result = cyclesim.simulate(arch, "examples/tpu_gemm/workload.yaml", "examples/tpu_gemm/mapping.yaml")
    result.cycles, result.phases, result.stalls, result.accesses
    print(cyclesim.report_text(result)); cyclesim.write_vcd(result, "run.vcd")

`simulate` is the one facade: the one place inputs become a plan, the engine replays it and
results are built from its records (the engine does not import results). `replay` is its core
for the project's own callers that hold spec objects (the command lines, the checks, the chip,
tests): the same replay and the same Result, no loading.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cyclesim.errors import CyclesimError, OptionError

if TYPE_CHECKING:
    from cyclesim.engine import RunOptions
    from cyclesim.results import Result
    from cyclesim.spec import Architecture, Mapping, Workload


def load(
    architecture: str | Path | Architecture,
    workload: str | Path | Workload,
    mapping: str | Path | Mapping,
) -> tuple[Architecture, Workload, Mapping]:
    """The three inputs as validated spec objects; each may be a path or already a spec object."""
    from cyclesim.spec import (
        Architecture,
        Mapping,
        Workload,
        load_architecture,
        load_mapping,
        load_workload,
    )

    arch = _as(architecture, Architecture, load_architecture, "architecture")
    work = _as(workload, Workload, load_workload, "workload")
    if isinstance(mapping, Mapping):
        from cyclesim.spec.mapping import check_mapping

        check_mapping(mapping, arch, work)  # a mapping object may come from other inputs
        return arch, work, mapping
    if not isinstance(mapping, (str, Path)):
        raise CyclesimError(f"mapping: expected a path or a Mapping, got {type(mapping).__name__}")
    return arch, work, load_mapping(str(mapping), arch, work)


def _as(value: Any, kind: type, loader: Any, what: str) -> Any:
    if isinstance(value, kind):
        return value
    if isinstance(value, (str, Path)):
        return loader(str(value))
    raise CyclesimError(f"{what}: expected a path or a {kind.__name__}, got {type(value).__name__}")


def simulate(
    architecture: str | Path | Architecture,
    workload: str | Path | Workload,
    mapping: str | Path | Mapping,
    options: RunOptions | None = None,
    **choices: Any,
) -> Result:
    """Replay the three inputs (paths or spec objects) and return the Result.

    options: a RunOptions (cyclesim.engine), by default `cyclesim run`'s without the progress
    bar; choices override its fields, e.g.
    reuse: 'retain' (refill only when a tile changes, hardware) or 'strict' (AccelForge).
    isolate_einsums: each Einsum alone, exchanging tensors through backing stores (AccelForge).
    trace: record transfers and PE segments now (otherwise `.events` stays empty, and
    `traced`, `write_vcd` and `write_perfetto` replay once more with tracing when first asked).
    fast_forward: skip loop iterations that repeat an exactly equal state (the default); False
    replays every one. The result is identical either way.
    Raise SpecError for a bad input or one that cannot be scheduled (tiles that do not fit),
    OptionError (a CyclesimError) for a bad option.
    """
    from cyclesim.engine import RunOptions

    try:
        options = replace(options or RunOptions(progress=False), **choices)
    except TypeError as exc:  # a choice RunOptions has no field for
        raise OptionError(f"simulate: {exc}") from None
    arch, work, mapp = load(architecture, workload, mapping)
    return replay(arch, work, mapp, options)


def replay(
    arch: Architecture,
    workload: Workload,
    mapping: Mapping,
    options: RunOptions | None = None,
    **choices: Any,
) -> Result:
    """Plan and replay three validated spec objects; return the Result (counts checked
    unless options say otherwise) — simulate's core, for callers that hold spec objects.

    options: how (engine/options.py; `cyclesim run`'s defaults when None, progress bar
    included); choices override single fields of it (`replay(a, w, m, trace=True)`).
    fast_forward=False replays every iteration (the result is the same; engine/fastforward.py).
    """
    from cyclesim.engine import RunOptions, replay_plan
    from cyclesim.results import build_result
    from cyclesim.schedule import ReusePolicy, build_plan

    options = replace(options or RunOptions(), **choices)
    plan = build_plan(arch, workload, mapping, ReusePolicy(options.reuse), options.isolate_einsums)
    return build_result(replay_plan(plan, options))


def traced(result: Result) -> Result:
    """The result with trace records (transfers, PE segments): itself if its run was traced
    whole, else its plan replayed once more with tracing (kept on the result, replayed once)."""
    if result.raw.rec.transfers is not None and result.raw.rec.trace_filter is None:
        return result
    seen = result.__dict__.get("_traced")
    if seen is None:
        from cyclesim.engine import replay_plan
        from cyclesim.results import build_result

        options = replace(result.raw.options, trace=True, trace_filter=None, progress=False)
        seen = build_result(replay_plan(result.raw.plan, options), check_counts=False)
        result.__dict__["_traced"] = seen  # a frozen dataclass: cached as cached_property does
    return seen


def report_text(result: Result) -> str:
    """The text report `cyclesim run` prints (with its energy section when there is one)."""
    from cyclesim.report import energy_section, text_report

    text = text_report(result, result.title)
    energy = result.energy
    if energy is not None:  # as `run` prints it
        text += "\n" + energy_section(energy, result.architecture.energy_unit)
    return text


def write_vcd(result: Result, path: str | Path) -> list[Path]:
    """Write a VCD waveform and its GTKWave save file (.gtkw) beside it; return both paths
    (replays with tracing first when the run was not traced)."""
    from cyclesim.views import write_vcd_files

    return write_vcd_files(traced(result), path, clock_mhz=result.architecture.clock_mhz)


def write_perfetto(result: Result, path: str | Path) -> list[Path]:
    """Write a Perfetto trace (JSON, or protobuf when path ends in .pftrace); return the paths
    (replays with tracing first when the run was not traced)."""
    from cyclesim.views import write_perfetto_files

    title = f"cyclesim: {result.workload.name} / {result.mapping.name}"
    return write_perfetto_files(traced(result), path, title=title)


def write_csv(result: Result, directory: str | Path) -> list[Path]:
    """The SCALE-Sim-like summary tables of `run --csv` (run summary, per-memory traffic,
    energy) into directory; return the paths."""
    from cyclesim.views.summary_csv import write_summary_csv

    return write_summary_csv(result, result.architecture, directory, run=result.mapping.name)
