"""`replay_chip(arch, workload, mapping)` -> ChipResult: load (paths or spec objects), plan,
replay, results, as `cyclesim chip` does."""

from __future__ import annotations

from pathlib import Path

from cyclesim.chip.arch import Chip, load_chip
from cyclesim.chip.engine import run_chip
from cyclesim.chip.mapping import load_chip_mapping
from cyclesim.chip.mapping_types import ChipMapping
from cyclesim.chip.plan import build_chip_plan
from cyclesim.chip.result import ChipResult
from cyclesim.spec import Workload, load_workload


def replay_chip(
    arch: str | Path | Chip,
    workload: str | Path | Workload,
    mapping: str | Path | ChipMapping,
    *,
    fast_forward: bool = True,
) -> ChipResult:
    """Replay a multi-core mapping on a chip. fast_forward applies inside each core's step
    replay (the chip level moves burst by burst)."""
    chip = arch if isinstance(arch, Chip) else load_chip(str(arch))
    work = workload if isinstance(workload, Workload) else load_workload(str(workload))
    mapp = (
        mapping if isinstance(mapping, ChipMapping) else load_chip_mapping(str(mapping), chip, work)
    )
    return ChipResult(run_chip(build_chip_plan(chip, work, mapp), fast_forward=fast_forward))
