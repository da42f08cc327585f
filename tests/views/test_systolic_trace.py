"""A systolic PE array's waveform: each fold's fill and drain drawn where it happens.

The stall tables keep one systolic_fill and one systolic_drain span per leaf (first fold to
last); drawn as they were, they overlapped the compute between the folds and the VCD's times
went backwards (a reader skips such changes). The trace now draws each fold's own fill and
drain, which the engine records when tracing; read back, the waveform equals the tables.
"""

from __future__ import annotations

import pytest
from test_trace_properties import check_waveform, read_waves

from cyclesim.analysis.simulate import replay
from cyclesim.spec import load_architecture, load_mapping, load_workload
from cyclesim.views.vcd import write_vcd

EXAMPLE = "examples/resnet50_dram"


@pytest.mark.parametrize("arch", ["tpu_like", "tpu_like_ddr4"])
def test_the_resnet50_layer_on_tpu_like_reads_back_as_its_tables(arch, tmp_path):
    from replay_helpers import ROOT

    a = load_architecture(str(ROOT / "hw_models" / f"{arch}.yaml"))
    w = load_workload(str(ROOT / EXAMPLE / "workload.yaml"))
    res = replay(a, w, load_mapping(str(ROOT / EXAMPLE / "mapping.yaml"), a, w), trace=True)
    # 32 folds (2 halves of the pixels x 8 n-tiles x 2 k-tiles), each with a fill and a drain
    folds = res.raw.rec.systolic_spans
    assert len(folds) == 64 and {kind for *_, kind in folds} == {"fill", "drain"}
    write_vcd(res, tmp_path / "run.vcd")
    text = (tmp_path / "run.vcd").read_text()
    times = [int(line[1:]) for line in text.splitlines() if line.startswith("#")]
    assert times == sorted(times)
    check_waveform(res, tmp_path / "run.vcd")
    state = dict(read_waves(tmp_path / "run.vcd"))["cyclesim.pe_array.state"]
    assert sum(1 for _, s in state if s == "systolic_fill") == 32
