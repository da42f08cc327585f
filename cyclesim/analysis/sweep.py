"""Run a sweep: every point of a sweep file replayed (on Dask by default), one tidy table.

Each point's inputs are resolved here (base files, whole-input axes, field overrides,
re-validated) and hashed with the simulator's own source; a point whose hash is in the cache
is read back, the others go through `map_tasks`. A point that fails (bad value, does not fit,
engine error) is a row with its error. The table has one row per point: the axes' values,
cycles, the phases, non-compute cycles per cause, DRAM traffic, energy when the results carry
it, and the hook's extra columns.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import time
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from cyclesim.analysis.parallel import TaskOutcome, map_tasks
from cyclesim.analysis.sweep_spec import Point, SweepSpec, load_sweep
from cyclesim.errors import CyclesimError
from cyclesim.outputs import atomic_path, write_atomically
from cyclesim.results.schema import versioned
from cyclesim.spec.energy_units import DEFAULT_ENERGY_UNIT, to_picojoules

log = logging.getLogger(__name__)

CAUSE_COLUMNS_PREFIX = "cause_"
TABLE_NAME = "sweep"
LAST_COLUMNS = ("error", "point_seconds", "cached")  # bookkeeping after the results


@dataclass(frozen=True)
class PointTask:
    """Everything a worker needs for one point: the resolved spec objects and the policy."""

    index: int
    architecture: Any
    workload: Any
    mapping: Any
    reuse: str
    isolate_einsums: bool
    values: tuple[tuple[str, Any], ...]
    columns_hook: tuple[str, str] | None = None


@dataclass
class SweepRun:
    """A finished sweep: the table, the files written, and what was computed vs read back."""

    spec: SweepSpec
    table: Any  # pandas.DataFrame
    files: list[Path] = field(default_factory=list)
    computed: int = 0
    cached: int = 0
    failed: int = 0
    wall_seconds: float = 0.0

    def to_json_dict(self) -> dict:
        """The `cyclesim sweep --json` object."""
        rows = json.loads(self.table.to_json(orient="records"))
        return versioned(
            dict(
                sweep=self.spec.name,
                points=len(self.table),
                computed=self.computed,
                cached=self.cached,
                failed=self.failed,
                wall_seconds=round(self.wall_seconds, 3),
                files=[str(p) for p in self.files],
                rows=rows,
            )
        )


# ------------------------------------------------------------------ one point (runs in a worker)
def run_point(task: PointTask) -> dict:
    """Replay one point; return its metrics row. A CyclesimError becomes the row's error."""
    start = time.perf_counter()
    try:
        from cyclesim.analysis.simulate import replay

        result = replay(
            task.architecture,
            task.workload,
            task.mapping,
            reuse=task.reuse,
            isolate_einsums=task.isolate_einsums,
            progress=False,
        )
        row = metrics_row(result)
        if task.columns_hook is not None:
            try:
                row.update(_call_hook(task.columns_hook, result, dict(task.values)))
            except Exception as exc:  # the replay's numbers stand; the extra columns are missing
                row["error"] = f"columns hook {task.columns_hook[1]}: {type(exc).__name__}: {exc}"
    except CyclesimError as exc:
        row = {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
    row["point_seconds"] = round(time.perf_counter() - start, 3)
    return row


def metrics_row(result: Any) -> dict:
    """The table's result columns for one replay (a Result)."""
    from cyclesim.results.stall_span import CAUSES

    sim = result
    by_cause = result.stalls_by_cause
    dram = result.architecture.memories[0].name  # the outermost memory is the backing store
    acc = sim.accesses
    dram_acc = acc[acc["memory"] == dram]
    row: dict[str, Any] = dict(
        status="ok",
        error=None,
        cycles=sim.cycles,
        onload_cycles=sim.onload_cycles,
        ideal_compute_cycles=sim.ideal_compute_cycles,
        stall_cycles=sim.stall_cycles,
        offload_cycles=sim.offload_cycles,
        **{f"{CAUSE_COLUMNS_PREFIX}{c}_cycles": by_cause.get(c, 0) for c in CAUSES},
        macs=sim.macs,
        dram_read_bits=int(dram_acc[dram_acc["action"] == "read"]["bits"].sum()),
        dram_write_bits=int(dram_acc[dram_acc["action"] == "write"]["bits"].sum()),
    )
    energy = energy_total_pj(result.energy, result.architecture.energy_unit)
    if energy is not None:
        row["energy_pj"] = energy
    return row


def result_columns() -> list[str]:
    """The result columns of a sweep row, in table order (energy_pj only when present)."""
    from cyclesim.results.stall_span import CAUSES

    return [
        "cycles",
        "onload_cycles",
        "ideal_compute_cycles",
        "stall_cycles",
        "offload_cycles",
        *(f"{CAUSE_COLUMNS_PREFIX}{c}_cycles" for c in CAUSES),
        "macs",
        "dram_read_bits",
        "dram_write_bits",
        "energy_pj",
    ]


def energy_total_pj(energy: Any, unit: str = DEFAULT_ENERGY_UNIT) -> float | None:
    """A run's total energy in picojoules, from a number or the sum of an energy table's
    `energy` column in `unit` (the architecture's energy_unit); else None."""
    if energy is None:
        return None
    if isinstance(energy, (int, float)):
        return to_picojoules(float(energy), unit)
    column = getattr(energy, "get", lambda _k: None)("energy")
    return to_picojoules(float(column.sum()), unit) if column is not None else None


def _call_hook(hook: tuple[str, str], result: Any, point: dict) -> dict:
    fn = _load_hook(*hook)
    extra = fn(result, point)
    if not isinstance(extra, dict):
        raise CyclesimError(
            f"the columns hook {hook[1]} returned {type(extra).__name__}, not a dict"
        )
    return extra


@cache
def _load_hook(path: str, function: str) -> Any:
    module_spec = importlib.util.spec_from_file_location(
        f"cyclesim_sweep_hook_{Path(path).stem}", path
    )
    if module_spec is None or module_spec.loader is None:
        raise CyclesimError(f"cannot load the columns hook {path}")
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    fn = getattr(module, function, None)
    if not callable(fn):
        raise CyclesimError(f"{path} has no function {function}")
    return fn


# ------------------------------------------------------------------ resolving points (main process)
def resolve_point(spec: SweepSpec, point: Point, base: dict) -> PointTask:
    """Apply a point's settings to the base inputs; raise SpecError for a bad value."""
    from cyclesim.spec import load_architecture, load_mapping, load_workload
    from cyclesim.spec.override import architecture_with_field, mapping_with_field

    settings = dict(point.settings)
    arch = base["architecture"]
    work = base["workload"]
    if "architecture" in settings:
        arch = load_architecture(str(spec.resolve(str(settings["architecture"]))))
    if "workload" in settings:
        work = load_workload(str(spec.resolve(str(settings["workload"]))))
    for path, value in point.settings:
        if path.startswith("architecture."):
            arch = architecture_with_field(arch, path.removeprefix("architecture."), value)
    mapping_file = spec.resolve(str(settings["mapping"])) if "mapping" in settings else spec.mapping
    mapping = load_mapping(str(mapping_file), arch, work)
    for path, value in point.settings:
        if path.startswith("mapping."):
            mapping = mapping_with_field(mapping, path.removeprefix("mapping."), value, arch, work)
    hook = (str(spec.columns_hook[0]), spec.columns_hook[1]) if spec.columns_hook else None
    return PointTask(
        point.index,
        arch,
        work,
        mapping,
        str(settings.get("reuse", spec.reuse)),
        bool(settings.get("isolate_einsums", spec.isolate_einsums)),
        point.values,
        hook,
    )


def point_key(task: PointTask, code: str) -> str:
    """The content hash of a point: its resolved inputs, policy, hook source and simulator source."""
    from cyclesim.spec.override import architecture_to_dict, mapping_to_dict

    hook_text = Path(task.columns_hook[0]).read_text() if task.columns_hook else ""
    doc = dict(
        architecture=architecture_to_dict(task.architecture),
        workload=repr((task.workload.einsums, task.workload.tensors, task.workload.name)),
        mapping=mapping_to_dict(task.mapping),
        reuse=task.reuse,
        isolate_einsums=task.isolate_einsums,
        hook=[hook_text, task.columns_hook[1] if task.columns_hook else None],
        point=[list(v) for v in task.values] if task.columns_hook else None,
        code=code,
    )
    text = json.dumps(doc, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


@cache
def code_fingerprint() -> str:
    """A hash of the cyclesim package's source: a changed simulator invalidates the cache."""
    import cyclesim

    root = Path(cyclesim.__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


# ------------------------------------------------------------------ the sweep
def sweep(
    sweep_file: str | Path,
    out: str | Path,
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    backend: str = "dask",
    progress: bool | None = None,
    use_cache: bool = True,
    plots: bool = True,
) -> SweepRun:
    """Run every point of a sweep file; write sweep.parquet, sweep.csv and the plots into out.

    Points in the cache (out/cache, keyed by content hash) are read back unless use_cache is
    False. Raise SpecError when the sweep file or its base inputs are wrong; a bad point is a
    row with its error.
    """
    from cyclesim.spec import load_architecture, load_workload

    started = time.perf_counter()
    spec = load_sweep(sweep_file)
    out = Path(out)
    cache_dir = out / "cache"
    cache_dir.mkdir(parents=True, exist_ok=True)
    base = dict(
        architecture=load_architecture(str(spec.architecture)),
        workload=load_workload(str(spec.workload)),
    )
    code = code_fingerprint()
    points = spec.points()
    rows: dict[int, dict] = {}
    todo: list[tuple[PointTask, str]] = []
    cached = 0
    for point in points:
        try:
            task = resolve_point(spec, point, base)
        except CyclesimError as exc:  # this point's value is wrong: a row, not a lost sweep
            rows[point.index] = {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
            continue
        key = point_key(task, code)
        path = cache_dir / f"{key}.json"
        if use_cache and path.is_file():
            rows[point.index] = json.loads(path.read_text()) | {"cached": True}
            cached += 1
        else:
            todo.append((task, key))
    log.info(
        "sweep %s: %d points, %d cached, %d to compute", spec.name, len(points), cached, len(todo)
    )

    def arrived(outcome: TaskOutcome, _finished: int) -> None:
        """Each point into the cache as it finishes: an interrupted sweep keeps what it did."""
        task, key = todo[outcome.index]
        if outcome.ok:
            row = outcome.value
            if row["status"] != "ok" or row.get("error") is None:  # a failed hook is retried
                write_atomically(cache_dir / f"{key}.json", json.dumps(row))  # keeps column order
        else:  # the worker itself failed (not an input fault): not cached, retried next time
            row = {"status": "error", "error": outcome.error}
        rows[task.index] = row | {"cached": False}

    map_tasks(
        run_point,
        [task for task, _ in todo],
        workers=workers,
        progress=progress,
        desc=f"sweep {spec.name}",
        backend=backend,
        scheduler=scheduler,
        on_done=arrived,
    )
    table = _table(spec, points, rows)
    run = SweepRun(spec, table)
    run.computed = len(todo)
    run.cached = cached
    run.failed = int((table["status"] != "ok").sum())
    run.files = write_table(table, out)
    if plots and spec.plots:
        from cyclesim.views.sweep_plot import write_sweep_plots

        run.files += write_sweep_plots(table, spec.plots, out, title=spec.name)
    run.wall_seconds = time.perf_counter() - started
    return run


def _table(spec: SweepSpec, points: list[Point], rows: dict[int, dict]) -> Any:
    """One row per point in point order: point, axes' values, status, results, extra columns."""
    import pandas as pd

    records = []
    for point in points:
        row = rows[point.index]
        records.append({"point": point.index, **dict(point.values), **row})
    table = pd.DataFrame.from_records(records)
    for column in LAST_COLUMNS:
        if column not in table:
            table[column] = None
    first = [c for c in ["point", *spec.axis_columns, "status"] if c in table]
    results = [c for c in result_columns() if c in table]  # then the hook's, in its order
    rest = [c for c in table.columns if c not in first + results and c not in LAST_COLUMNS]
    first += results
    table = table[first + rest + list(LAST_COLUMNS)]
    for column in table.columns:  # counts as integers with gaps (a failed point's row)
        if column in spec.axis_columns:  # an axis holds what the sweep file gave, e.g. 'wide'
            kinds = {type(v) for v in table[column] if v is not None}
            if len(kinds) > 1:  # [4, wide]: parquet takes one type per column, so as text
                table[column] = table[column].map(lambda v: v if v is None else str(v))
            continue
        if column == "cycles" or column.endswith(("_cycles", "_bits")) or column == "macs":
            table[column] = table[column].astype("Int64")
    return table


def write_table(table: Any, out: Path) -> list[Path]:
    """sweep.parquet and sweep.csv in out."""
    parquet, csv = out / f"{TABLE_NAME}.parquet", out / f"{TABLE_NAME}.csv"
    with atomic_path(parquet) as temporary:
        table.to_parquet(temporary, index=False)
    with atomic_path(csv) as temporary:
        table.to_csv(temporary, index=False)
    return [parquet, csv]


def summary_text(run: SweepRun, head: int = 12) -> str:
    """The table's head (axes, status, cycles, phases) and the files written."""
    table = run.table
    columns = [
        c
        for c in [*run.spec.axis_columns, "status", "cycles", "onload_cycles", "stall_cycles"]
        if c in table
    ]
    extra = [c for c in table.columns if c not in columns and not _is_standard(c)]
    # the points that replayed first (in point order), then the failed ones: a failure's
    # rows (its error is listed below) must not hide the one row that has numbers
    ordered = table.iloc[table["status"].ne("ok").argsort(kind="stable")]
    shown = ordered[columns + extra[:3]].head(head)
    lines = [
        f"sweep {run.spec.name}: {len(table)} points ({run.computed} computed, {run.cached} from "
        f"the cache, {run.failed} failed) in {run.wall_seconds:.1f} s",
        shown.to_string(index=False),
    ]
    if len(table) > head:
        lines.append(f"... {len(table) - head} more rows")
    for _, row in table[table["status"] != "ok"].head(5).iterrows():
        lines.append(f"point {row['point']} failed: {row['error']}")
    lines.append("wrote " + ", ".join(str(p) for p in run.files))
    return "\n".join(lines)


def _is_standard(column: str) -> bool:
    return column in ("point", "error", "point_seconds", "cached", "macs") or column.endswith(
        ("_cycles", "_bits")
    )
