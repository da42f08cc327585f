"""`cyclesim check scalesim`: reading SCALE-Sim's files, and parity with the real SCALE-Sim 3.0.0.

The peer cases run SCALE-Sim in its own environment (`make peers` builds .venv-scalesim;
CYCLESIM_SCALESIM_PYTHON points at it) on small layers, a few seconds in all.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cyclesim.checks.scalesim.check import replay_compute, run_check
from cyclesim.checks.scalesim.peer import ENVIRONMENT_VARIABLE, REPO_ROOT
from cyclesim.checks.scalesim.read import read_config, read_topology
from cyclesim.errors import SpecError

EXAMPLES = REPO_ROOT / "examples" / "scalesim"
SCALESIM_PYTHON = os.environ.get(ENVIRONMENT_VARIABLE) or str(
    REPO_ROOT / ".venv-scalesim/bin/python"
)
needs_scalesim = pytest.mark.skipif(
    not Path(SCALESIM_PYTHON).exists(),
    reason=f"SCALE-Sim's environment is missing ({SCALESIM_PYTHON}): run `make peers`",
)


def cli(*args: str) -> subprocess.CompletedProcess:
    """The command as a user runs it (default progress setting), from the repository root."""
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    return subprocess.run(
        [sys.executable, "-m", "cyclesim", "check", "scalesim", *args],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env=env,
        timeout=600,
    )


# ------------------------------------------------------------------ reading SCALE-Sim's files
def test_shipped_configs_and_topologies_read():
    cfg = read_config(EXAMPLES / "ws_8x16_calc.cfg")
    assert (cfg.rows, cfg.cols, cfg.dataflow.value, cfg.calc) == (8, 16, "weight_stationary", True)
    user = read_config(EXAMPLES / "os_32x32_user_bw10.cfg")
    assert not user.calc and user.ifmap_bandwidth == 10
    layers = read_topology(EXAMPLES / "resnet18.csv")
    assert len(layers) == 21 and not layers[0].gemm
    # SCALE-Sim's output size is ceil((H - R + s) / s): 229x229, 7x7, stride 2 -> 112x112
    assert layers[0].ofmap_pixels == 112 * 112 and layers[0].window == 7 * 7 * 3
    gemm = read_topology(EXAMPLES / "gemm_small.csv")
    assert gemm[0].gemm and (gemm[1].ofmap_pixels, gemm[1].filters, gemm[1].window) == (200, 40, 72)


def test_a_missing_config_key_names_file_section_and_key(tmp_path):
    text = (EXAMPLES / "ws_32x32_calc.cfg").read_text().replace("ArrayWidth:     32\n", "")
    bad = tmp_path / "bad.cfg"
    bad.write_text(text)
    with pytest.raises(SpecError) as err:
        read_config(bad)
    assert err.value.file == str(bad) and err.value.field == "[architecture_presets] ArrayWidth"


def test_a_misspelt_config_key_names_its_line_and_spelling(tmp_path):
    # line 6 of ws_32x32_calc.cfg holds ArrayWidth; a user typed ArrayWidht
    text = (EXAMPLES / "ws_32x32_calc.cfg").read_text().replace("ArrayWidth:", "ArrayWidht:")
    bad = tmp_path / "bad.cfg"
    bad.write_text(text)
    with pytest.raises(SpecError) as err:
        read_config(bad)
    assert (err.value.line, err.value.found) == (6, "arraywidht")
    assert str(err.value).startswith(f"{bad}:6: field '[architecture_presets] ArrayWidth'")
    bad.write_text(text.replace("ArrayWidht:     32", "ArrayWidth: -3"))
    with pytest.raises(SpecError) as err:
        read_config(bad)
    assert (err.value.line, err.value.found) == (6, "-3")


def test_a_bad_topology_row_names_its_line_and_the_cli_exits_2(tmp_path):
    topo = tmp_path / "t.csv"
    topo.write_text("Layer, M, N, K,\ng, 8, 8, 8,\nh, 8, x, 8,\n")
    done = cli(str(EXAMPLES / "ws_32x32_calc.cfg"), str(topo), "--no-peer")
    assert done.returncode == 2
    assert "t.csv:3:" in done.stderr and "positive whole numbers" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("row", "says"),
    [
        # one number over a rank's limit, and three whose product is over an Einsum's: both
        # were refused as '<workload of h (line 3)>: field einsums[0].ranks...', a file that
        # does not exist; they name the topology's line
        ("h, 99999999999, 8, 8,", "t.csv:3: a topology number is larger than a rank may be"),
        ("h, 70000, 70000, 70000,", "t.csv:3: layer h cannot be replayed: Einsum 'h' has"),
    ],
)
def test_a_topology_row_beyond_the_limits_names_its_line(tmp_path, row, says):
    topo = tmp_path / "t.csv"
    topo.write_text(f"Layer, M, N, K,\ng, 8, 8, 8,\n{row}\n")
    done = cli(str(EXAMPLES / "ws_32x32_calc.cfg"), str(topo), "--no-peer")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert says in done.stderr and "<workload of" not in done.stderr


def test_an_unknown_layer_is_refused_with_the_choices():
    done = cli(
        str(EXAMPLES / "ws_32x32_calc.cfg"),
        str(EXAMPLES / "gemm_small.csv"),
        "--layer",
        "nope",
        "--no-peer",
    )
    assert done.returncode == 2 and "square64" in done.stderr


@pytest.mark.slow
def test_the_replay_equals_the_fold_formula_on_every_shipped_layer():
    # every shipped topology, 3 dataflows, 2 array shapes: replay compute = model (no peer)
    for cfg in sorted(EXAMPLES.glob("*_calc.cfg")):
        for topo in sorted(EXAMPLES.glob("*.csv")):
            check = run_check(cfg, topo, use_peer=False, progress=False)
            for o in check.layers:
                assert replay_compute(o.replay) == o.model_compute_cycles, (cfg.name, o.layer.name)


# ------------------------------------------------------------------ the real SCALE-Sim
@pytest.mark.peer
@needs_scalesim
@pytest.mark.parametrize("flow", ["ws", "os", "is"])
@pytest.mark.parametrize("shape", ["32x32", "8x16"])
def test_compute_cycles_equal_scalesim_on_small_gemms(flow, shape):
    check = run_check(
        EXAMPLES / f"{flow}_{shape}_calc.cfg", EXAMPLES / "gemm_small.csv", progress=False
    )
    assert check.peer_run is not None
    assert check.parity() == {"square64": True, "tall": True, "wide": True, "odd": True}


@pytest.mark.peer
@needs_scalesim
@pytest.mark.parametrize("flow", ["ws", "os", "is"])
def test_compute_cycles_equal_scalesim_on_a_strided_conv(flow):
    # ResNet-18's 1x1 stride-2 downsample: SCALE-Sim's ceil output size, W = 64 < 2 folds
    check = run_check(
        EXAMPLES / f"{flow}_32x32_calc.cfg",
        EXAMPLES / "resnet18.csv",
        layer="Conv3_ds",
        progress=False,
    )
    assert check.parity() == {"Conv3_ds": True}


@pytest.mark.peer
@needs_scalesim
def test_user_mode_shows_both_stalls_and_explains_them(tmp_path):
    # 1 KiB SRAMs at 10 words/cycle: A (200 x 96 words) is streamed per fold, both stall
    cfg = tmp_path / "ws_user_1k.cfg"
    cfg.write_text(
        (EXAMPLES / "ws_32x32_user_bw10.cfg").read_text().replace("SramSzkB:  64", "SramSzkB:  1")
    )
    check = run_check(cfg, EXAMPLES / "gemm_small.csv", layer="tall", progress=False)
    (o,) = check.layers
    assert check.parity() == {"tall": True}  # stalls aside, the folds are the same
    assert o.peer.stall_cycles > 0 and o.replay.stall_cycles > 0
    table = check.table().set_index(["term", "source"]).value
    assert table["dram_reads_filter", "replay"] == 96 * 64  # B once, padded to whole folds
    assert table["dram_reads_ofmap", "scalesim"] == 0  # it never reads partial sums back
    notes = " ".join(check.notes())
    assert "im2col" in notes and "private DRAM port" in notes and "never reads it back" in notes
    assert "tall: replay's non-compute cycles by root cause" in notes and "DRAM.rd_ifmap" in notes


@pytest.mark.peer
@needs_scalesim
def test_cli_default_path_prints_the_table_and_json():
    args = (str(EXAMPLES / "os_8x16_calc.cfg"), str(EXAMPLES / "gemm_small.csv"), "--layer", "odd")
    done = cli(*args)
    assert done.returncode == 0, done.stderr
    assert "compute cycles equal to SCALE-Sim's on 1 of 1 layers" in done.stdout
    assert "scalesim" in done.stdout and "DRAM rd ifmap" in done.stdout
    data = json.loads(cli(*args, "--json").stdout)
    assert next(iter(data)) == "schema_version"  # like every JSON document cyclesim prints
    assert data["compute_cycles_equal"] == {"odd": True} and data["mode"] == "CALC"


@pytest.mark.peer
@needs_scalesim
def test_scalesim_reports_the_hand_derived_4x4_folds_minus_one(tmp_path):
    # tests/test_systolic.py derives, for GEMM M=8, N=12, K=8 on a 4x4 array, compute cycles
    # of 108 (ws: 6 folds x 18), 84 (os: 6 x 14) and 88 (is: 4 x 22); SCALE-Sim prints the
    # 0-based index of its last cycle, one less
    from cyclesim.checks.scalesim.peer import run_scalesim

    topo = tmp_path / "g.csv"
    topo.write_text("Layer, M, N, K,\ng, 8, 12, 8,\n")
    for flow, expected in (("ws", 107), ("os", 83), ("is", 87)):
        cfg = tmp_path / f"{flow}.cfg"
        text = (EXAMPLES / f"{flow}_8x16_calc.cfg").read_text()
        cfg.write_text(
            text.replace("ArrayHeight:    8", "ArrayHeight:    4").replace(
                "ArrayWidth:     16", "ArrayWidth:     4"
            )
        )
        (layer,) = run_scalesim(cfg, topo, gemm=True).layers
        assert (layer.total_cycles, layer.stall_cycles) == (expected, 0), flow


@pytest.mark.parametrize("header", ["Layer, M, N, K,\n", "Layer, M, N, K,\ng, 8, 8, 8,\n"])
def test_a_short_gemm_row_is_called_a_gemm_row(tmp_path, header):
    # found: 'g1, 8, 16,' under a GEMM header was "a conv topology row has 7 numbers"
    topo = tmp_path / "t.csv"
    topo.write_text(f"{header}g1, 8, 16,\n")
    done = cli(str(EXAMPLES / "ws_32x32_calc.cfg"), str(topo), "--no-peer")
    line = header.count("\n") + 1
    assert (done.returncode, done.stderr) == (2, (
        f"cyclesim check scalesim: {topo}:{line}: this row has 2 numbers after the name; a GEMM "
        "topology row has 3 (found 'g1, 8, 16,'); expected name, M, N, K,\n"))  # fmt: skip
