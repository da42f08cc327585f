"""Result: one replay, the one place numbers are read from. Long pandas tables, one fact per row.

The rows are plain tuples, computed in Python; the pandas tables are built from them on first
access, so a replay that only prints its report never imports pandas (a lean start). What needs
a view or another replay (the text report, trace files, a traced re-run) is a function of
analysis/simulate.py, re-exported by the package: `cyclesim.report_text(result)` and the like.

Over 400 lines: one class whose properties are every table a user reads, each built on first
access; split, the tables would be reached through another object.
"""

from __future__ import annotations

import json
from collections import namedtuple
from dataclasses import asdict, dataclass, field
from functools import cached_property
from operator import attrgetter
from typing import TYPE_CHECKING, Any, NoReturn

from cyclesim.engine.run import RawRun
from cyclesim.errors import TraceError
from cyclesim.results.schema import as_is, json_rows, versioned
from cyclesim.results.spans import SpanList
from cyclesim.results.stall_span import CAUSES

if TYPE_CHECKING:
    from pathlib import Path

    import pandas as pd

    from cyclesim.spec import Architecture, Mapping, Workload


def cause_column(cause: str) -> str:
    """A cause's column in the tables of runs: cause_<cause>_cycles."""
    return f"cause_{cause}_cycles"


ACCESS_KEYS = ["einsum", "tensor", "memory", "action", "direction"]
PHASES = ("onload", "ideal_compute", "stall", "offload")  # the rows of `phases`, in order
STALL_KEYS = ["phase", "cause", "action", "memory", "tensor", "port", "port_memory", "competitor"]
_stall_key = attrgetter(*STALL_KEYS)  # a span's group in `stalls`, read in one C call
StallRow = namedtuple("StallRow", STALL_KEYS + ["cycles", "first_cycle", "last_cycle"])
AccessRow = namedtuple("AccessRow", ["einsum", "tensor", "memory", "action", "values", "bits"])
# the JSON objects of `run --json`'s stalls and accesses: fields in order, with their types
_STALL_JSON = {
    **dict.fromkeys(
        ["cause", "phase", "action", "memory", "tensor", "port", "port_memory", "competitor"], as_is
    ),
    "cycles": int,
}
_ACCESS_JSON = {
    **dict.fromkeys(["einsum", "tensor", "memory", "action"], as_is),
    "values": int,
    "bits": int,
}


# what the Python API had on its wrapper of the result before Result was the one result type
_MOVED = {
    "sim": "the result itself (result.cycles, result.stalls, ...)",
    "report": "cyclesim.report_text(result)",
    "to_vcd": "cyclesim.write_vcd(result, path)",
    "to_perfetto": "cyclesim.write_perfetto(result, path)",
    "to_csv": "cyclesim.write_csv(result, folder)",
    "traced": "cyclesim.traced(result)",
    "events_table": "result.events (a traced result) or cyclesim.traced(result).events",
}


@dataclass(frozen=True)
class Result:
    """One replay: cycles, phases, stalls by cause, accesses, energy and (when traced) events.

    The inputs it was replayed from are `architecture`, `workload` and `mapping`; `raw` is the
    engine's run (plan, options, records) that every number is computed from.
    """

    cycles: int
    ideal_compute_cycles: int
    onload_cycles: int
    offload_cycles: int
    stall_cycles: int
    macs: int
    reuse: str
    isolate_einsums: bool
    wall_seconds: float
    engine_events: int  # events the engine stepped (`events` is the traced table)
    spans: SpanList  # StallSpans, fast-forward's repeated stretches as repeats (spans.py)
    access_counts: tuple[tuple, ...] = field(repr=False)  # (*ACCESS_KEYS, values, bits)
    raw: RawRun = field(repr=False)

    def __getattr__(self, name: str) -> NoReturn:
        """Only for names no attribute has: those the API had before Result was the one result
        type say where they went, instead of a bare AttributeError in a user's script."""
        moved = _MOVED.get(name)
        if moved is None:
            raise AttributeError(f"'Result' object has no attribute {name!r}")
        raise AttributeError(f"Result.{name} is gone: use {moved}")

    def __repr__(self) -> str:
        return (
            f"Result(cycles={self.cycles}, {self.workload.name} on {self.architecture.name}, "
            f"mapping {self.mapping.name}, reuse={self.reuse})"
        )

    # ------------------------------------------------------------ the inputs
    @property
    def architecture(self) -> Architecture:
        """The architecture replayed (kept by the plan)."""
        return self.raw.plan.architecture

    @property
    def workload(self) -> Workload:
        """The workload replayed (kept by the plan)."""
        return self.raw.plan.workload

    @property
    def mapping(self) -> Mapping:
        """The mapping replayed (kept by the plan)."""
        return self.raw.plan.mapping

    @property
    def title(self) -> str:
        """'<workload> on <architecture>, mapping <mapping>': the heading of the text report."""
        return f"{self.workload.name} on {self.architecture.name}, mapping {self.mapping.name}"

    # ------------------------------------------------------------ rows (plain Python)
    @cached_property
    def stall_groups(self) -> dict[tuple, list[int]]:
        """(*STALL_KEYS) -> [cycles, first start, last end], in order of first appearance: the
        one pass over the spans that the stall rows, the causes and the check all read.

        A key's '' and None are one group (pandas' groupby would drop None; the rows have
        always read both as None)."""
        out: dict[tuple, list[int]] = {}
        for key, (cycles, first, last) in self.spans.groups(_stall_key).items():
            key = tuple(None if v == "" else v for v in key)
            g = out.get(key)
            if g is None:
                out[key] = [cycles, first, last]
            else:
                g[0], g[1], g[2] = g[0] + cycles, min(g[1], first), max(g[2], last)
        return out

    @cached_property
    def stall_rows(self) -> tuple[StallRow, ...]:
        """The rows of `stalls`: cycles per (phase, cause, where, competitor), largest first.

        Groups in order of first appearance; ties keep that order (a stable sort), as pandas'
        groupby(sort=False) then sort_values(kind="stable") would.
        """
        rows = [StallRow(*key, *agg) for key, agg in self.stall_groups.items()]
        rows.sort(key=lambda r: -r.cycles)
        return tuple(rows)

    @cached_property
    def access_rows(self) -> tuple[AccessRow, ...]:
        """The rows of `accesses`: both directions of an action summed, in first-use order."""
        sums: dict[tuple, list[int]] = {}
        for einsum, tensor, memory, action, _direction, values, bits in self.access_counts:
            cur = sums.setdefault((einsum, tensor, memory, action), [0, 0])
            cur[0] += values
            cur[1] += bits
        return tuple(AccessRow(*key, *v) for key, v in sums.items())

    # ------------------------------------------------------------ tables
    @cached_property
    def detailed_accesses(self) -> pd.DataFrame:
        """Values and bits per (einsum, tensor, memory, action, direction), as counted."""
        import pandas as pd

        return pd.DataFrame(self.access_counts, columns=ACCESS_KEYS + ["values", "bits"]).astype(
            {"values": "int64", "bits": "int64"}
        )

    @cached_property
    def totals(self) -> pd.DataFrame:
        """One row: cycles split as onload + ideal + stall + offload, with the policy."""
        import pandas as pd

        return pd.DataFrame(
            [
                dict(
                    cycles=self.cycles,
                    onload_cycles=self.onload_cycles,
                    ideal_compute_cycles=self.ideal_compute_cycles,
                    stall_cycles=self.stall_cycles,
                    offload_cycles=self.offload_cycles,
                    macs=self.macs,
                    events=self.engine_events,
                    reuse=self.reuse,
                    isolate_einsums=self.isolate_einsums,
                )
            ]
        ).astype(
            {
                "cycles": "int64",
                "onload_cycles": "int64",
                "ideal_compute_cycles": "int64",
                "stall_cycles": "int64",
                "offload_cycles": "int64",
                "macs": "int64",
            }
        )

    @cached_property
    def stall_spans(self) -> pd.DataFrame:
        """Every attributed span: start, end, cycles, phase, cause, memory, tensor, port, competitor, chain."""
        cols = [
            "start",
            "end",
            "cycles",
            "phase",
            "cause",
            "action",
            "memory",
            "tensor",
            "port",
            "port_memory",
            "competitor",
            "chain",
        ]
        import pandas as pd

        spans = self.spans
        df = pd.DataFrame({c: [getattr(s, c) for s in spans] for c in cols}, columns=cols)
        df["reuse"] = self.reuse
        df["isolate_einsums"] = self.isolate_einsums
        return df.astype({"start": "int64", "end": "int64", "cycles": "int64"})

    @cached_property
    def stalls(self) -> pd.DataFrame:
        """Non-compute cycles by (phase, cause, memory, tensor, port, competitor), largest first."""
        import pandas as pd

        columns = STALL_KEYS + ["cycles", "first_cycle", "last_cycle"]
        if not self.stall_rows:
            return pd.DataFrame(columns=columns)
        by_column = list(zip(*self.stall_rows, strict=True))
        return pd.DataFrame(
            {  # keys stay objects: a missing port or competitor is None, not NaN
                c: pd.Series(v, dtype="int64" if c in columns[-3:] else object)
                for c, v in zip(columns, by_column, strict=True)
            }
        )

    @cached_property
    def accesses(self) -> pd.DataFrame:
        """Values and bits per (einsum, tensor, memory, action), both directions of an action summed."""
        import pandas as pd

        g = pd.DataFrame(self.access_rows, columns=list(AccessRow._fields)).astype(
            {"values": "int64", "bits": "int64"}
        )
        g["reuse"] = self.reuse
        g["isolate_einsums"] = self.isolate_einsums
        return g

    def stall_cycles_by_cause(self, phases: tuple[str, ...] = ("compute",)) -> dict[str, int]:
        """Cycles per cause over the given phases (default: the stall between first and last step)."""
        out = {c: 0 for c in CAUSES}
        for (phase, cause, *_), (cycles, _, _) in self.stall_groups.items():
            if phase in phases:
                out[cause] = out.get(cause, 0) + cycles
        return {k: v for k, v in out.items() if v}

    def cycle_columns(self) -> dict[str, int]:
        """The run's cycles, its phases and every cause's non-compute cycles (0 where none),
        named as the tables of runs name them (`run --csv`, a sweep's table)."""
        by_cause = self.stalls_by_cause
        return dict(
            cycles=self.cycles,
            onload_cycles=self.onload_cycles,
            ideal_compute_cycles=self.ideal_compute_cycles,
            stall_cycles=self.stall_cycles,
            offload_cycles=self.offload_cycles,
            **{cause_column(c): by_cause.get(c, 0) for c in CAUSES},
        )

    @property
    def stalls_by_cause(self) -> dict[str, int]:
        """Non-compute cycles of every phase summed per cause."""
        return self.stall_cycles_by_cause(("onload", "compute", "offload"))

    @property
    def phases(self) -> pd.DataFrame:
        """Cycles per phase (onload, ideal_compute, stall, offload), one row each; they sum to cycles."""
        import pandas as pd

        values = [
            self.onload_cycles,
            self.ideal_compute_cycles,
            self.stall_cycles,
            self.offload_cycles,
        ]
        return pd.DataFrame({"phase": list(PHASES), "cycles": values}).astype({"cycles": "int64"})

    @cached_property
    def energy(self) -> Any:
        """Energy of the replayed counts by Einsum, component, tensor and action (the `energy`
        column, in `architecture.energy_unit`, default pJ, also `.attrs["energy_unit"]`); None
        without per-action energies."""
        from cyclesim.results.energy import energy_table, has_energies

        if not has_energies(self.architecture):
            return None
        return energy_table(self, self.architecture)

    def to_dict(self) -> dict:
        """The `cyclesim run --json` object (with schema_version, and `energy` as `run` has it)."""
        from cyclesim.results.energy import energy_json

        out = versioned(self.to_json_dict())
        energy = self.energy
        if energy is not None:
            out["energy"] = energy_json(energy, self.architecture.energy_unit)
        return out

    def to_json(self, path: str | Path | None = None) -> str:
        """The `cyclesim run --json` text; also written to path when given."""
        text = json.dumps(self.to_dict(), indent=1) + "\n"
        if path is not None:
            from cyclesim.outputs import write_atomically

            write_atomically(path, text)
        return text

    def activity(self, window: tuple[int, int] | None = None, on_stage=None):
        """The traced run as one Activity over window (ports, DMA, PE array, buffers), built once.

        Every trace view (VCD, FST, Perfetto, plots) draws from it. Raise TraceError if untraced.
        on_stage(name) hears each stage of building it (results.activity_build.ACTIVITY_STAGES).
        """
        from cyclesim.results.activity_build import build_activity

        cache = self.__dict__.setdefault("_activity", {})
        if window not in cache:
            cache.clear()  # one window at a time: an Activity of a long run is large
            cache[window] = build_activity(self, window, on_stage)
        return cache[window]

    def port_table(self, window: tuple[int, int] | None = None) -> pd.DataFrame:
        """Per port: busy cycles and bits of transfers, of the PE array, and in all (traced runs)."""
        import pandas as pd

        from cyclesim.results.port_use import PORT_COLUMNS, port_rows

        df = pd.DataFrame(port_rows(self.activity(window)), columns=PORT_COLUMNS)
        return df.astype({c: "int64" for c in PORT_COLUMNS[2:]})

    @cached_property
    def events(self) -> pd.DataFrame:
        """Every transfer and PE segment with its start and end cycle, of a traced run.

        Raise TraceError if the run was not traced: `simulate(..., trace=True)` traces it, and
        `cyclesim.traced(result).events` replays an untraced one with tracing."""
        if self.raw.rec.transfers is None:
            raise TraceError(
                "events are recorded by a traced run: simulate(..., trace=True), or "
                "cyclesim.traced(result).events to replay this one with tracing"
            )
        from cyclesim.results.events import events_table

        return events_table(self.raw)

    @cached_property
    def l1_log(self) -> pd.DataFrame:
        """L1 allocator events at their cycles (buffer, kind, region, address, bytes in use); empty without one."""
        from cyclesim.results.l1_tables import l1_log_table

        return l1_log_table(self.raw)

    @cached_property
    def l1_peak(self) -> pd.DataFrame:
        """Per allocator memory: peak bytes in use and its cycle, CB region's peak end, headroom."""
        from cyclesim.results.l1_tables import l1_peak_table

        return l1_peak_table(self.raw, self.l1_log)

    @property
    def dram_summary(self) -> list[dict]:
        """Per DRAM-modelled memory, from its timer: which timed it ('timer', the closed-form
        row-run timer, or 'controller', cyclesim dram's controller in the loop), requests, row
        hits and their rate, activates and refreshes (empty without a DRAM model). The rate is
        over the column commands issued: with the controller, writes still in its write buffer
        when the run ended were accepted (complete) but not yet issued, as `cyclesim dram`
        counts them over its trace drained."""
        configs = {name: config for name, config, _, _ in self.raw.plan.dram}
        out = []
        for memory, counts in self.raw.rec.dram_counts.items():
            requests = counts["requests"]
            issued = counts.get("column_commands", requests)
            rate = round(counts["row_hits"] / issued, 6) if issued else 0.0
            config = configs[memory]
            timing = "controller" if config.replay_controller else "timer"
            out.append(
                dict(memory=memory, config=config.name, timing=timing, **counts, row_hit_rate=rate)
            )
        return out

    def to_json_dict(self) -> dict:
        """The `cyclesim run --json` object."""
        stalls = json_rows(self.stall_rows, _STALL_JSON)
        accesses = json_rows(self.access_rows, _ACCESS_JSON)
        out = dict(
            cycles=self.cycles,
            ideal_compute_cycles=self.ideal_compute_cycles,
            stall_cycles=self.stall_cycles,
            onload_cycles=self.onload_cycles,
            offload_cycles=self.offload_cycles,
            macs=self.macs,
            reuse=self.reuse,
            isolate_einsums=self.isolate_einsums,
            stalls=stalls,
            accesses=accesses,
            events=self.engine_events,
            wall_seconds=round(self.wall_seconds, 6),
            fast_forward=asdict(self.raw.fast_forward),
        )
        if self.raw.rec.dram_counts:  # a DRAM model timed the DRAM-modelled memories
            out["dram"] = self.dram_summary
        if self.raw.plan.allocators:  # L1 placement was modelled
            from cyclesim.engine.l1 import LOG_COLUMNS

            log = [dict(zip(LOG_COLUMNS, row, strict=True)) for row in self.raw.rec.l1_log or ()]
            out["l1"] = dict(peak=self.l1_peak.to_dict("records"), log=log)
        return out
