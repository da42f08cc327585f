"""Regenerate traces/: VCD + .gtkw + Perfetto JSON of the example cases over small windows.

`make traces` runs `python -m cyclesim.analysis.regen_traces traces`; tests compare fresh dumps
with these files byte for byte.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from cyclesim.analysis.simulate import replay
from cyclesim.engine import TraceFilter
from cyclesim.results import Result
from cyclesim.spec import load_architecture, load_mapping, load_workload

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True, slots=True)
class TraceCase:
    """One example case and the window of it kept in traces/."""

    name: str
    directory: str  # relative to the repository root
    start: int = 0
    end: int | None = None
    files: tuple[str, str, str] = ("arch.yaml", "workload.yaml", "mapping.yaml")  # in directory


CASES = (
    TraceCase("01_compute_bound", "tests/cases/worked/01_compute_bound"),
    TraceCase("03_single_buffer", "tests/cases/worked/03_single_buffer"),
    TraceCase("03_single_buffer_window", "tests/cases/worked/03_single_buffer", 10, 34),
    TraceCase("05_narrow_innermost_port", "tests/cases/worked/05_narrow_innermost_port"),
    TraceCase("dma_two_tensors", "tests/views/cases/dma_two_tensors", 0, 60),
    # ZigZag's memory-size case, small SRAMs: the steady stretch, spatial and latency stalls
    TraceCase("eyeriss_memsize_small_window", ".", 419, 474,
              ("hw_models/eyeriss_like_small.yaml", "examples/eyeriss_memsize/workload.yaml",
               "examples/eyeriss_memsize/mapping_small.yaml")),
)  # fmt: skip


def run_case(case: TraceCase, root: Path = ROOT) -> tuple[Result, float | None]:
    """Replay a case with its trace window; return the result and the architecture's clock."""
    d = root / case.directory
    arch_file, workload_file, mapping_file = (str(d / f) for f in case.files)
    arch = load_architecture(arch_file)
    workload = load_workload(workload_file)
    mapping = load_mapping(mapping_file, arch, workload)
    f = TraceFilter(case.start, case.end)
    return replay(arch, workload, mapping, trace_filter=f, progress=False), arch.clock_mhz


def write_case(case: TraceCase, out_dir: Path, root: Path = ROOT) -> list[Path]:
    """trace.vcd, trace.gtkw and trace.json of one case into out_dir/<name>/."""
    from cyclesim.views.gtkw import write_gtkw
    from cyclesim.views.perfetto_json import write_chrome_json
    from cyclesim.views.vcd import write_vcd

    res, clock = run_case(case, root)
    d = out_dir / case.name
    d.mkdir(parents=True, exist_ok=True)
    vcd, gtkw, js = d / "trace.vcd", d / "trace.gtkw", d / "trace.json"
    signals = write_vcd(res, vcd, clock_mhz=clock)
    write_gtkw(signals, vcd, gtkw, start=case.start)
    write_chrome_json(res, js, title=f"cyclesim: {case.name}")
    return [vcd, gtkw, js]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out = Path(argv[0] if argv else "traces")
    for case in CASES:
        for path in write_case(case, out):
            print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
