"""Run the real SCALE-Sim 3.0.0 (its own environment, numpy < 2.4) as a subprocess.

The interpreter is `$CYCLESIM_SCALESIM_PYTHON`, else `<repo>/.venv-scalesim/bin/python`
(built by `make peers`). runner.py runs each layer alone and prints one JSON object.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from cyclesim.errors import CyclesimError, PeerUnavailable
from cyclesim.outputs import run_peer

log = logging.getLogger("cyclesim")
ENVIRONMENT_VARIABLE = "CYCLESIM_SCALESIM_PYTHON"
RUNNER = Path(__file__).with_name("runner.py")
REPO_ROOT = Path(__file__).resolve().parents[3]
DEFAULT_TIMEOUT_SECONDS = 1800.0
HEARTBEAT_SECONDS = 30.0  # a line saying SCALE-Sim still runs (a layer can take minutes)


@dataclass(frozen=True, slots=True)
class ScaleSimLayer:
    """SCALE-Sim's report for one layer (cycles are its own: compute + stall, 0-based end)."""

    name: str
    total_cycles_incl_prefetch: int
    total_cycles: int
    stall_cycles: int
    overall_util_percent: float
    mapping_efficiency_percent: float
    compute_util_percent: float
    dram_reads_ifmap: int
    dram_reads_filter: int
    dram_writes_ofmap: int
    seconds: float
    cpu_seconds: float

    @property
    def compute_cycles(self) -> int:
        """Cycles without stalls, counted like ours: its Total Cycles is the last cycle's index."""
        return self.total_cycles - self.stall_cycles + 1


@dataclass(frozen=True, slots=True)
class ScaleSimRun:
    layers: tuple[ScaleSimLayer, ...]
    peak_rss_mib: float
    numpy_version: str
    python_version: str


def interpreter() -> str:
    """SCALE-Sim's Python; raise PeerUnavailable saying how to install it."""
    python = os.environ.get(ENVIRONMENT_VARIABLE) or str(REPO_ROOT / ".venv-scalesim/bin/python")
    if not Path(python).exists():
        raise PeerUnavailable(
            f"SCALE-Sim's environment is not installed ({python} not found): run `make peers`, "
            f"or point {ENVIRONMENT_VARIABLE} at a Python with scalesim==3.0.0 and numpy<2.4"
        )
    return python


def run_scalesim(
    config: str | Path,
    topology: str | Path,
    *,
    gemm: bool,
    layers: tuple[str, ...] = (),
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
) -> ScaleSimRun:
    """Run SCALE-Sim on the named layers (all when empty); raise CyclesimError if it fails."""
    command = [interpreter(), str(RUNNER), str(Path(config).resolve())]
    command += [str(Path(topology).resolve()), "gemm" if gemm else "conv", *layers]
    try:
        what = f"{len(layers)} layer{'s' if len(layers) != 1 else ''}" if layers else "every layer"
        log.warning("running SCALE-Sim 3.0.0 on %s of %s (its own process)", what, topology)
        done = run_peer(
            command,
            text=True,
            timeout=timeout,
            heartbeat=lambda s: log.warning("SCALE-Sim still running on %s (%.0f s)", what, s),
            every=HEARTBEAT_SECONDS,
        )
    except subprocess.TimeoutExpired:
        raise CyclesimError(f"SCALE-Sim did not finish within {timeout:.0f} s") from None
    if done.returncode != 0:  # its last line says why (its traceback is not ours to show)
        last = (done.stderr.strip().splitlines() or ["no message"])[-1].strip()[:300]
        raise CyclesimError(
            f"SCALE-Sim 3.0.0 failed on {config} and {topology} (exit {done.returncode}): {last}"
        )
    try:
        data = json.loads(done.stdout)
    except ValueError:
        raise CyclesimError(
            f"SCALE-Sim 3.0.0 printed no result for {config} and {topology}"
        ) from None
    return ScaleSimRun(
        tuple(ScaleSimLayer(**layer) for layer in data["layers"]),
        data["peak_rss_mib"],
        data["numpy_version"],
        data["python_version"],
    )
