"""The example cases the view tests replay, by name."""

from __future__ import annotations

from pathlib import Path

from cyclesim.spec import load_architecture, load_mapping, load_workload

ROOT = Path(__file__).resolve().parents[2]
CASES = {
    "01_compute_bound": ROOT / "tests/cases/worked/01_compute_bound",
    "03_single_buffer": ROOT / "tests/cases/worked/03_single_buffer",
    "05_narrow_innermost_port": ROOT / "tests/cases/worked/05_narrow_innermost_port",
    "dma_two_tensors": ROOT / "tests/views/cases/dma_two_tensors",
    "slow_write_back": ROOT / "tests/views/cases/slow_write_back",
    "pipeline_holds_slot": ROOT / "tests/views/cases/pipeline_holds_slot",
}


def load_case(name: str):
    d = CASES[name]
    arch = load_architecture(str(d / "arch.yaml"))
    workload = load_workload(str(d / "workload.yaml"))
    return arch, workload, load_mapping(str(d / "mapping.yaml"), arch, workload)
