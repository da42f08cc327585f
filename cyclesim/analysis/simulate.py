"""The Python API: `simulate(architecture, workload, mapping)` -> `Result`, one replay from
paths or spec objects, with the tables, trace writers and JSON of `cyclesim run`.

    import cyclesim
    arch = cyclesim.load_architecture("hw_models/tpu_like.yaml").with_port_width("dram", "rd", 256)
    result = cyclesim.simulate(arch, "examples/tpu_gemm/workload.yaml", "examples/tpu_gemm/mapping.yaml")
    result.cycles, result.phases, result.stalls, result.accesses

`simulate` is the one facade: the one place inputs become a plan, the engine replays it and
results are built from its records (the engine does not import results). `replay` is its core
for the project's own callers that hold spec objects and need only the SimResult (the command
lines, the checks, the chip, tests): same replay, no loading, no Result around it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cyclesim.errors import CyclesimError, OptionError
from cyclesim.outputs import write_atomically
from cyclesim.results.schema import versioned

if TYPE_CHECKING:
    import pandas as pd

    from cyclesim.engine import RunOptions
    from cyclesim.results import SimResult
    from cyclesim.spec import Architecture, Mapping, Workload

PHASES = ("onload", "ideal_compute", "stall", "offload")


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
    trace: record transfers and PE segments now (otherwise `.events`, `.to_vcd()` and
    `.to_perfetto()` replay once more with tracing when first asked).
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
    return Result(replay(arch, work, mapp, options), arch, work, mapp)


def replay(
    arch: Architecture,
    workload: Workload,
    mapping: Mapping,
    options: RunOptions | None = None,
    **choices: Any,
) -> SimResult:
    """Plan and replay three validated spec objects; return the SimResult (counts checked
    unless options say otherwise) — simulate's core, for callers that need no Result.

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


@dataclass(frozen=True)
class Result:
    """One replay: cycles, phases, stalls by cause, accesses and events as pandas tables.

    `sim` is the underlying SimResult (every number comes from it); the inputs are kept so a
    trace or a what-if can be made from the result alone.
    """

    sim: SimResult = field(repr=False)
    architecture: Architecture = field(repr=False)
    workload: Workload = field(repr=False)
    mapping: Mapping = field(repr=False)

    def __repr__(self) -> str:
        return (
            f"Result(cycles={self.cycles}, {self.workload.name} on {self.architecture.name}, "
            f"mapping {self.mapping.name}, reuse={self.sim.reuse})"
        )

    def __str__(self) -> str:
        return self.report()

    @property
    def cycles(self) -> int:
        """Total cycles of the run (first fill to last write-back)."""
        return self.sim.cycles

    @property
    def phases(self) -> pd.DataFrame:
        """Cycles per phase (onload, ideal_compute, stall, offload), one row each; they sum to cycles."""
        import pandas as pd

        values = [
            self.sim.onload_cycles,
            self.sim.ideal_compute_cycles,
            self.sim.stall_cycles,
            self.sim.offload_cycles,
        ]
        return pd.DataFrame({"phase": list(PHASES), "cycles": values}).astype({"cycles": "int64"})

    @property
    def stalls(self) -> pd.DataFrame:
        """Non-compute cycles by (phase, cause, memory, tensor, port, competitor), largest first."""
        return self.sim.stalls

    @property
    def stalls_by_cause(self) -> dict[str, int]:
        """Non-compute cycles of every phase summed per cause."""
        return self.sim.stall_cycles_by_cause(("onload", "compute", "offload"))

    @property
    def accesses(self) -> pd.DataFrame:
        """Values and bits per (einsum, tensor, memory, action)."""
        return self.sim.accesses

    @cached_property
    def traced(self) -> SimResult:
        """The SimResult with trace records: this one if traced, else the plan replayed with tracing."""
        if self.sim.raw.rec.transfers is not None and self.sim.raw.rec.trace_filter is None:
            return self.sim
        from cyclesim.engine import replay_plan
        from cyclesim.results import build_result

        options = replace(self.sim.raw.options, trace=True, trace_filter=None, progress=False)
        return build_result(replay_plan(self.sim.raw.plan, options), check_counts=False)

    @property
    def events(self) -> pd.DataFrame:
        """Every transfer and PE segment with its start and end cycle (traces the run if needed)."""
        return self.traced.events_table

    @property
    def energy(self) -> Any:
        """Energy of the replayed counts by Einsum, component, tensor and action (the `energy`
        column, in `architecture.energy_unit`, default pJ, also `.attrs["energy_unit"]`); None
        without per-action energies."""
        from cyclesim.results.energy import energy_table, has_energies

        if not has_energies(self.architecture):
            return None
        return energy_table(self.sim, self.architecture)

    def report(self) -> str:
        """The text report of `cyclesim run`."""
        from cyclesim.report import energy_section, text_report

        title = f"{self.workload.name} on {self.architecture.name}, mapping {self.mapping.name}"
        text = text_report(self.sim, title)
        energy = self.energy
        if energy is not None:  # as `run` prints it
            text += "\n" + energy_section(energy, self.architecture.energy_unit)
        return text

    def to_dict(self) -> dict:
        """The `cyclesim run --json` object (with schema_version, and `energy` as `run` has it)."""
        from cyclesim.results.energy import energy_json

        out = versioned(self.sim.to_json_dict())
        energy = self.energy
        if energy is not None:
            out["energy"] = energy_json(energy, self.architecture.energy_unit)
        return out

    def to_json(self, path: str | Path | None = None) -> str:
        """The `cyclesim run --json` text; also written to path when given."""
        text = json.dumps(self.to_dict(), indent=1) + "\n"
        if path is not None:
            write_atomically(path, text)
        return text

    def to_vcd(self, path: str | Path) -> list[Path]:
        """Write a VCD waveform and its GTKWave save file (.gtkw) beside it; return both paths."""
        from cyclesim.views import write_vcd_files

        return write_vcd_files(self.traced, path, clock_mhz=self.architecture.clock_mhz)

    def to_perfetto(self, path: str | Path) -> list[Path]:
        """Write a Perfetto trace (JSON, or protobuf when path ends in .pftrace); return the paths."""
        from cyclesim.views import write_perfetto_files

        title = f"cyclesim: {self.workload.name} / {self.mapping.name}"
        return write_perfetto_files(self.traced, path, title=title)

    def to_csv(self, directory: str | Path) -> list[Path]:
        """SCALE-Sim-like summary tables (run summary, per-memory traffic) into directory."""
        from cyclesim.views.summary_csv import write_summary_csv

        return write_summary_csv(self.sim, self.architecture, directory, run=self.mapping.name)
