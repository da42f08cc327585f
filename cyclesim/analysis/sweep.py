"""Run a sweep: every point of a sweep file replayed (on Dask by default), one tidy table.

Each point's inputs are resolved by sweep_point.py (base files, whole-input axes, field overrides,
re-validated) and hashed with the simulator's own source; a point whose hash is in the cache
is read back, the others go through `map_tasks`. A point that fails (bad value, does not fit,
engine error) is a row with its error. The table has one row per point: the axes' values,
cycles, the phases, non-compute cycles per cause, DRAM traffic, energy when the results carry
it, and the hook's extra columns.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cyclesim.analysis.parallel import TaskOutcome, check_scheduler_address, map_tasks
from cyclesim.analysis.sweep_point import (
    PointTask,
    code_fingerprint,
    point_key,
    resolve_point,
    result_columns,
    run_point,
)
from cyclesim.analysis.sweep_spec import Point, SweepSpec, load_sweep
from cyclesim.errors import CyclesimError
from cyclesim.outputs import atomic_path, write_atomically
from cyclesim.results.schema import versioned

log = logging.getLogger(__name__)

TABLE_NAME = "sweep"
LAST_COLUMNS = ("error", "point_seconds", "cached")  # bookkeeping after the results
FAILURES_LISTED = 5  # failed points whose error the summary prints


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


# ------------------------------------------------------------------ resolving points (main process)


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

    Over 80 lines: one pass in order (read, split cached from new points, run the new ones in
    parallel, tabulate, write) sharing the cache and the counts the run reports.
    """
    from cyclesim.spec import load_architecture, load_workload

    started = time.perf_counter()
    if scheduler is not None:  # refused before the output folder is made
        check_scheduler_address(scheduler)
    spec = load_sweep(sweep_file)
    out = Path(out)
    cache_dir = out / "cache"  # made when the first point arrives: a sweep that cannot start
    # (an unreachable scheduler) leaves no folder behind
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
    checked = _check_hook_columns(spec, rows.values(), checked=False)

    def arrived(outcome: TaskOutcome, _finished: int) -> None:
        """Each point into the cache as it finishes: an interrupted sweep keeps what it did."""
        task, key = todo[outcome.index]
        if outcome.ok:
            row = outcome.value
            if row["status"] != "ok" or row.get("error") is None:  # a failed hook is retried
                cache_dir.mkdir(parents=True, exist_ok=True)
                write_atomically(cache_dir / f"{key}.json", json.dumps(row))  # keeps column order
        else:  # the worker itself failed (not an input fault): not cached, retried next time
            row = {"status": "error", "error": outcome.error}
        rows[task.index] = row | {"cached": False}
        nonlocal checked
        checked = _check_hook_columns(spec, [row], checked=checked)

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
    out.mkdir(parents=True, exist_ok=True)
    run.files = write_table(table, out)
    if plots and spec.plots:
        from cyclesim.views.sweep_plot import write_sweep_plots

        run.files += write_sweep_plots(table, spec.plots, out, title=spec.name)
    run.wall_seconds = time.perf_counter() - started
    return run


def _check_hook_columns(spec: SweepSpec, rows: Any, *, checked: bool) -> bool:
    """Once the columns hook has returned a row, refuse a plot column it lacks (the sweep
    file's line); True once checked."""
    if checked or not spec.hook_plot_columns:
        return True
    for row in rows:
        if row.get("status") == "ok" and row.get("error") is None:
            spec.check_hook_columns(row)
            return True
    return False


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
    failed = table[table["status"] != "ok"]
    for _, row in failed.head(FAILURES_LISTED).iterrows():
        lines.append(f"point {row['point']} failed: {row['error']}")
    if len(failed) > FAILURES_LISTED:
        more = len(failed) - FAILURES_LISTED
        lines.append(
            f"... {more} more failed point{'s' if more > 1 else ''} (the table's error column)"
        )
    lines.append("wrote " + ", ".join(str(p) for p in run.files))
    return "\n".join(lines)


def _is_standard(column: str) -> bool:
    return column in ("point", "error", "point_seconds", "cached", "macs") or column.endswith(
        ("_cycles", "_bits")
    )
