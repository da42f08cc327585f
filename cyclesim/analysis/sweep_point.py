"""One sweep point: its inputs resolved (base files, whole-input axes, field overrides,
re-validated), hashed with the simulator's own source for the cache, replayed, and turned into
one row of the sweep's table (sweep.py runs every point and writes the table).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from cyclesim.analysis.sweep_spec import Point, SweepSpec
from cyclesim.errors import CyclesimError
from cyclesim.spec.energy_units import DEFAULT_ENERGY_UNIT, to_picojoules


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

    dram = result.architecture.memories[0].name  # the outermost memory is the backing store
    acc = result.accesses
    dram_acc = acc[acc["memory"] == dram]
    row: dict[str, Any] = dict(
        status="ok",
        error=None,
        **result.cycle_columns(),
        macs=result.macs,
        dram_read_bits=int(dram_acc[dram_acc["action"] == "read"]["bits"].sum()),
        dram_write_bits=int(dram_acc[dram_acc["action"] == "write"]["bits"].sum()),
    )
    energy = energy_total_pj(result.energy, result.architecture.energy_unit)
    if energy is not None:
        row["energy_pj"] = energy
    return row


def result_columns() -> list[str]:
    """The result columns of a sweep row, in table order (energy_pj only when present)."""
    from cyclesim.results.result import cause_column
    from cyclesim.results.stall_span import CAUSES

    return [
        "cycles",
        "onload_cycles",
        "ideal_compute_cycles",
        "stall_cycles",
        "offload_cycles",
        *(cause_column(c) for c in CAUSES),
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
