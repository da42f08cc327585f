"""Run the real accelforge (its own Python >= 3.12 environment) on a spec, as a subprocess.

The interpreter is `$CYCLESIM_ACCELFORGE_PYTHON`, else `<repo>/.venv-af/bin/python` (built by
`make peers`). The runner script evaluates the spec's fixed mapping from a temporary directory
and prints one JSON object, parsed here into long tables.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from cyclesim.checks.accelforge.spec import AfActionCost
from cyclesim.checks.peer_python import cache_folder, environment_stamp, peer_python, run_runner
from cyclesim.errors import CyclesimError, PeerUnavailable
from cyclesim.outputs import write_atomically

ENVIRONMENT_VARIABLE = "CYCLESIM_ACCELFORGE_PYTHON"
RUNNER = Path(__file__).with_name("peer_runner.py")
DEFAULT_TIMEOUT_SECONDS = 300.0
ACCESS_COLUMNS = ["einsum", "memory", "tensor", "action", "bits", "actions", "column"]
SEPARATOR = "<SEP>"  # AccelForge joins the parts of its result column names with it


class AccelForgeRejected(CyclesimError):
    """The real accelforge ran but refused the spec (e.g. InvalidMappingError); has its message."""


@dataclass(frozen=True, slots=True, eq=False)
class CopyBookkeeping:
    """A copy Einsum: AccelForge books its moves under `booked_under` (its source tensor)."""

    einsum: str
    booked_under: str
    destinations: tuple[str, ...]


@dataclass(frozen=True, slots=True, eq=False)
class AccelForgeRun:
    """What the real accelforge reported for one spec."""

    accesses: pd.DataFrame  # einsum, memory, tensor, action, bits, actions, column (raw name)
    component_latency: pd.DataFrame  # einsum, component, latency_cycles
    total_latency_cycles: float
    energy: pd.DataFrame  # einsum, memory, tensor, action (read/write/compute/leak), energy
    total_energy: float | None
    dynamic_energy: float | None
    copies: tuple[CopyBookkeeping, ...]
    accelforge_version: str
    python_version: str
    seconds: float

    def in_cycles(self, clock_hz: float) -> AccelForgeRun:
        """This run with its latencies (seconds, when throughputs come from hwcomponents
        models) expressed in cycles of a `clock_hz` clock."""
        latency = self.component_latency.assign(
            latency_cycles=self.component_latency.latency_cycles * clock_hz
        )
        return replace(
            self,
            component_latency=latency,
            total_latency_cycles=self.total_latency_cycles * clock_hz,
        )

    def einsum_latency_cycles(self, einsum: str) -> float:
        """AccelForge's latency of one Einsum: max over its components."""
        rows = self.component_latency[self.component_latency.einsum == einsum]
        return float(rows.latency_cycles.max()) if len(rows) else 0.0


_CACHE: dict[tuple, AccelForgeRun] = {}
_COSTS: dict[str, dict[str, AfActionCost]] = {}


def accelforge_python() -> Path:
    """The AccelForge interpreter. Raise PeerUnavailable saying how to get one if there is none."""
    return peer_python(
        "AccelForge",
        ENVIRONMENT_VARIABLE,
        ".venv-af",
        "accelforge needs Python >= 3.12 in its own environment, .venv-af",
    )


def accelforge_examples() -> Path:
    """The `examples/` folder the accelforge wheel installs into its environment's site-packages.

    Raise PeerUnavailable if there is no AccelForge environment or it has no examples.
    """
    environment = accelforge_python().parent.parent
    for folder in sorted(environment.glob("lib/python3*/site-packages/examples")):
        if (folder / "arches").is_dir():
            return folder
    raise PeerUnavailable(f"accelforge's shipped examples are not installed under {environment}")


def run_accelforge(
    spec_files: Sequence[str | Path],
    jinja_data: Mapping[str, Any] | None = None,
    *,
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
) -> AccelForgeRun:
    """Evaluate the spec's fixed mapping with the real accelforge and return its numbers.

    Raise PeerUnavailable if accelforge cannot be run (no environment, import failure,
    timeout), AccelForgeRejected if it refuses the spec.
    """
    files = tuple(str(Path(f).resolve()) for f in spec_files)
    data = json.dumps(dict(jinja_data or {}), sort_keys=True)
    python = accelforge_python()
    key = (str(python), files, tuple(_mtime(f) for f in files), data)
    if key in _CACHE:
        return _CACHE[key]
    result = _parse(_run_runner(python, [*files, "--jinja-data", data], files, timeout_seconds))
    _CACHE[key] = result
    return result


MAPPER_TIMEOUT_SECONDS = 3600.0  # the mapper takes minutes even on a small spec
# the mapper's objectives `rank accelforge` may ask for (accelforge's Metrics, lower case); by
# default all three: latency and energy alone often leave a single mapping in the Pareto set
MAPPER_OBJECTIVES = ("latency", "energy", "resource_usage")


def mapper_candidates(
    spec_files: Sequence[str | Path],
    jinja_data: Mapping[str, Any] | None = None,
    objectives: Sequence[str] = MAPPER_OBJECTIVES,
    *,
    timeout_seconds: float = MAPPER_TIMEOUT_SECONDS,
) -> dict[str, Any]:
    """Run AccelForge's mapper on the spec (its own mapping is ignored) and return its Pareto
    set by the objectives (names of accelforge's Metrics): {'einsums': [...],
    'candidates': [{'order',
    'latency', 'energy', 'einsums': {name: {'latency', 'energy'}}, 'mapping': YAML}, ...]},
    latencies as AccelForge gives them (seconds when the arch has a clock).

    Raise PeerUnavailable / AccelForgeRejected as run_accelforge does.
    """
    files = tuple(str(Path(f).resolve()) for f in spec_files)
    data = json.dumps(dict(jinja_data or {}), sort_keys=True)
    return _run_runner(
        accelforge_python(),
        [*files, "--jinja-data", data, "--candidates", "--objectives", ",".join(objectives)],
        files,
        timeout_seconds,
    )


def component_costs(
    spec_files: Sequence[str | Path],
    jinja_data: Mapping[str, Any] | None = None,
    *,
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
) -> dict[str, dict[str, AfActionCost]]:
    """Per component and action, the energy and throughput AccelForge's
    `calculate_component_costs` gives (from the spec, else hwcomponents' models).

    Cached per spec: in this process, and on disk under the user's cache folder keyed by the
    interpreter, accelforge's environment and the spec files' bytes and Jinja data (the
    models run CACTI, seconds per component). Raise PeerUnavailable / AccelForgeRejected as
    run_accelforge does.
    """
    files = tuple(str(Path(f).resolve()) for f in spec_files)
    data = json.dumps(dict(jinja_data or {}), sort_keys=True)
    python = accelforge_python()
    digest = hashlib.sha256()
    for part in (*environment_stamp(python), data, RUNNER.read_text()):
        digest.update(part.encode() + b"\0")
    for file in files:
        digest.update(Path(file).read_bytes() + b"\0")
    key = digest.hexdigest()
    if key in _COSTS:
        return _COSTS[key]
    cached = cache_folder("accelforge-component-costs") / f"{key}.json"
    try:
        payload = json.loads(cached.read_text())
    except (OSError, ValueError):
        payload = _run_runner(
            python, [*files, "--jinja-data", data, "--component-costs"], files, timeout_seconds
        )
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(cached, json.dumps(payload))
        except OSError:
            pass  # a read-only home: no disk cache, the answer is still right
    costs = {
        component["name"]: {
            action["name"]: AfActionCost(
                energy=float(action["energy"] if action["energy"] is not None else math.nan),
                throughput=float(
                    action["throughput"] if action["throughput"] is not None else math.inf
                ),
                model=component["model"],
            )
            for action in component["actions"]
        }
        for component in payload["components"]
    }
    _COSTS[key] = costs
    return costs


def _run_runner(
    python: Path, arguments: list[str], files: tuple[str, ...], timeout_seconds: float
) -> dict[str, Any]:
    """Run peer_runner.py with `arguments` in a scratch folder; its JSON, or raise."""
    return run_runner(
        python,
        RUNNER,
        arguments,
        peer="accelforge",
        package="accelforge",
        timeout_seconds=timeout_seconds,
        rejected=lambda why: AccelForgeRejected(f"accelforge rejected {', '.join(files)}: {why}"),
    )


def _mtime(file: str) -> float:
    try:
        return os.stat(file).st_mtime
    except OSError:
        return -1.0


def _parse(payload: dict[str, Any]) -> AccelForgeRun:
    accesses = pd.DataFrame(
        [
            {
                "einsum": row["einsum"],
                "memory": row["component"],
                "tensor": row["tensor"],
                "action": row["action"],
                "bits": row["bits"] if row["bits"] is not None else float("nan"),
                "actions": row["actions"],
                "column": row["column"],
            }
            for row in payload["accesses"]
        ],
        columns=ACCESS_COLUMNS,
    )
    latency = pd.DataFrame(
        [
            {"einsum": r["einsum"], "component": r["component"], "latency_cycles": r["cycles"]}
            for r in payload["latency"]
        ],
        columns=["einsum", "component", "latency_cycles"],
    )
    energy = pd.DataFrame(
        [_energy_row(row) for row in payload.get("energy", [])],
        columns=["einsum", "memory", "tensor", "action", "energy"],
    )
    totals = payload.get("totals", {})
    copies = tuple(
        CopyBookkeeping(
            einsum=e["name"], booked_under=e["booked_under"], destinations=tuple(e["outputs"])
        )
        for e in payload["einsums"]
        if e["is_copy_operation"]
    )
    return AccelForgeRun(
        accesses=accesses,
        component_latency=latency,
        total_latency_cycles=float(totals.get("latency") or 0),
        energy=energy,
        total_energy=totals.get("energy"),
        dynamic_energy=totals.get("dynamic_energy"),
        copies=copies,
        accelforge_version=str(payload["accelforge_version"]),
        python_version=str(payload["python"]),
        seconds=float(payload.get("seconds", 0.0)),
    )


def _energy_row(row: dict[str, Any]) -> dict[str, Any]:
    """An energy column `component<SEP>tensor<SEP>action` or `component<SEP>leak` as a row."""
    parts = row["key"].split(SEPARATOR)
    if len(parts) == 3:
        memory, tensor, action = parts
    else:
        memory, tensor, action = parts[0], "", SEPARATOR.join(parts[1:])
    return {
        "einsum": row["einsum"],
        "memory": memory,
        "tensor": "" if tensor == "None" else tensor,
        "action": action,
        "energy": float(row["energy"] or 0.0),
    }
