"""The real accelforge (1.0.467, its own Python 3.12 environment) agrees with our model, row by row.

Each spec runs once through `cyclesim/checks/peers/accelforge_runner.py` (a subprocess in a
temporary directory); every (einsum, memory, tensor, action) count AccelForge reports must equal
our reimplementation exactly, with the same set of rows, and so must the per-component latency,
the total latency and the dynamic energy. Without an AccelForge environment these tests skip,
unless CYCLESIM_ACCELFORGE_PYTHON is set (as `make test` does), in which case they fail.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cyclesim.checks.accelforge import peer
from cyclesim.checks.accelforge.model import evaluate_model
from cyclesim.checks.accelforge.read import load_accelforge_spec
from cyclesim.errors import PeerUnavailable, SpecError

SEEDS = (
    Path(__file__).resolve().parents[2] / "examples" / "accelforge_persist"
)  # = examples/accelforge_persist
SPECS = Path(__file__).with_name("accelforge_specs")
PEER_SPECS = [
    SEEDS / "seed_repro.yaml",
    SEEDS / "seed_ao_above_split.yaml",
    SEEDS / "seed_fused_n1.yaml",
    SEEDS / "seed_copy_workaround.yaml",
    SPECS / "matmul_3level.yaml",  # finite GLB / Reg: tiling matters
    SPECS / "matmul_spatial_4x4.yaml",  # spatial fan-out with multicast
    SPECS / "matmul_spatial_multicast.yaml",  # per-PE Reg keeps every operand; multicast fills
    SPECS / "matmul_spatial_reduction.yaml",  # spatial reduction, may_reuse, bits_per_action 8
    SPECS / "matmul_irrelevant_above.yaml",
    SPECS / "matmul_weight_stationary.yaml",
    SPECS / "conv1d_halo.yaml",  # p + r projection
    SPECS / "fused_tiled_finite_sram.yaml",  # fused m loop, finite SRAM with throughput
    SPECS / "copy_prefetch.yaml",  # a copy from DRAM into SRAM
]
KEY = ["einsum", "memory", "tensor", "action"]


@pytest.fixture(scope="module")
def accelforge_runs():
    """Run the real accelforge once per spec (two at a time)."""
    try:
        peer.accelforge_python()
    except PeerUnavailable as error:
        if os.environ.get(peer.ENVIRONMENT_VARIABLE):
            raise
        pytest.skip(f"accelforge unavailable: {error}")
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = dict(
            zip(PEER_SPECS, pool.map(lambda f: peer.run_accelforge([f]), PEER_SPECS), strict=True)
        )
    return runs


def _table(frame) -> dict[tuple, float]:
    return {tuple(row[k] for k in KEY): float(row["actions"]) for _, row in frame.iterrows()}


@pytest.mark.peer
@pytest.mark.parametrize("spec", PEER_SPECS, ids=lambda p: p.stem)
def test_real_accelforge_equals_our_model_for_every_row(accelforge_runs, spec):
    ours = _table(evaluate_model(load_accelforge_spec([spec])).accesses)
    theirs = _table(accelforge_runs[spec].accesses)
    assert set(ours) == set(theirs)
    assert ours == theirs


@pytest.mark.peer
@pytest.mark.parametrize("spec", PEER_SPECS, ids=lambda p: p.stem)
def test_real_accelforge_latency_and_energy_equal_our_model(accelforge_runs, spec):
    model = evaluate_model(load_accelforge_spec([spec]))
    run = accelforge_runs[spec]
    ours = {(r.einsum, r.component): r.latency_cycles for r in model.component_latency.itertuples()}
    theirs = {(r.einsum, r.component): r.latency_cycles for r in run.component_latency.itertuples()}
    assert ours == theirs
    assert model.total_latency_cycles == run.total_latency_cycles
    assert model.dynamic_energy == run.dynamic_energy


# AccelForge's DRAM traffic of AO per seed (bits): what the case README quotes.
#   (DRAM write AO, DRAM read AO) summed over Einsums; the copy workaround books its write
#   under AO in Einsum `copy`.
SEED_DRAM_AO = {
    "seed_repro": (2048, 2048),
    "seed_ao_above_split": (2048, 2048),
    "seed_fused_n1": (2048, 2048),
    "seed_copy_workaround": (2048, 0),
}


@pytest.mark.peer
@pytest.mark.parametrize("seed", sorted(SEED_DRAM_AO))
def test_seed_dram_ao_traffic_as_the_case_readme_states(accelforge_runs, seed):
    rows = accelforge_runs[SEEDS / f"{seed}.yaml"].accesses
    ao = rows[(rows.memory == "dram") & (rows.tensor == "AO")]
    found = (ao[ao.action == "write"].bits.sum(), ao[ao.action == "read"].bits.sum())
    assert found == SEED_DRAM_AO[seed]


@pytest.mark.peer
def test_copy_einsum_rows_keep_accelforges_own_names(accelforge_runs):
    run = accelforge_runs[SEEDS / "seed_copy_workaround.yaml"]
    copy_rows = run.accesses[run.accesses.einsum == "copy"]
    assert "copy<SEP>action<SEP>dram<SEP>AO<SEP>write" in set(copy_rows.column)
    assert "AO_DRAM" not in set(run.accesses.tensor)
    assert [(c.einsum, c.booked_under, c.destinations) for c in run.copies] == [
        ("copy", "AO", ("AO_DRAM",))
    ]


@pytest.mark.peer
def test_copy_toward_sram_is_booked_as_a_move_toward_dram(accelforge_runs):
    # prefetch: X_SRAM[m, n] = X[m, n], X in DRAM, X_SRAM in SRAM. Physically 512 bits leave
    # DRAM and land in SRAM; AccelForge 1.0.467 books SRAM X read 512 and DRAM X write 512
    # (a copy's holders are all renamed to the source and data only flows upward).
    rows = accelforge_runs[SPECS / "copy_prefetch.yaml"].accesses
    prefetch = _table(rows[rows.einsum == "prefetch"])
    assert prefetch[("prefetch", "dram", "X", "write")] == 512
    assert prefetch[("prefetch", "sram", "X", "read")] == 512
    assert prefetch[("prefetch", "dram", "X", "read")] == 0


@pytest.mark.peer
def test_runner_leaves_its_working_directory_and_the_spec_folder_untouched(tmp_path):
    try:
        python = peer.accelforge_python()
    except PeerUnavailable as error:
        pytest.skip(str(error))
    import subprocess

    before = sorted(os.listdir(SPECS))
    spec = SPECS / "matmul_3level.yaml"
    subprocess.run(
        [str(python), "-I", "-B", str(peer.RUNNER), str(spec)],
        cwd=tmp_path,
        check=True,
        capture_output=True,
        timeout=300,
    )
    assert os.listdir(tmp_path) == []
    assert sorted(os.listdir(SPECS)) == before


@pytest.mark.peer
def test_accelforge_and_our_reader_both_refuse_tiles_that_overflow_a_buffer(tmp_path):
    # GLB of 8192 bits cannot hold the 32x32 Z block (8192 bits) plus the B and A tiles.
    spec = tmp_path / "overflow.yaml"
    spec.write_text((SPECS / "matmul_3level.yaml").read_text().replace("size: 16384", "size: 8192"))
    with pytest.raises(SpecError, match="tiles kept in GLB need 12416 bits but its size is 8192"):
        evaluate_model(load_accelforge_spec([spec]))
    try:
        peer.accelforge_python()
    except PeerUnavailable as error:
        pytest.skip(str(error))
    with pytest.raises(peer.AccelForgeRejected, match="12416"):
        peer.run_accelforge([spec])


def test_missing_accelforge_interpreter_is_reported_as_unavailable(monkeypatch):
    monkeypatch.setenv(peer.ENVIRONMENT_VARIABLE, "/nonexistent/python3.12")
    with pytest.raises(PeerUnavailable, match="does not exist"):
        peer.run_accelforge([SPECS / "matmul_3level.yaml"])
