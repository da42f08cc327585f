"""How far an output's entries keep their class of visits past the loop above a fast-forward
level (engine/fastforward_classes.py), and the jumps that this and periods from iteration 0
allow on the memory-size example (the replay stays identical: the suite verifies every jump)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from cyclesim.engine import replay_plan
from cyclesim.engine.fastforward import FastForward
from cyclesim.engine.fastforward_classes import same_class_until
from cyclesim.schedule import build_plan
from cyclesim.spec import load_architecture, load_mapping, load_workload

ROOT = Path(__file__).resolve().parents[2]

# O[B, K] under C5 K5 B20 (the memory-size example's O@sram_1M): C does not index O
O_NODE = SimpleNamespace(counted=(5, 5, 20), relevant=(False, True, True), entries=500)


def test_a_fill_runs_on_through_the_k_iterations_of_one_c_iteration():
    # level B (pos 2): blocks are K iterations of 20 entries; C0's are all first visits
    assert same_class_until(O_NODE, 2, 23, True, 10**9) == 99
    # from C1 on: revisits, the previous visit 100 entries back, through C4
    assert same_class_until(O_NODE, 2, 123, True, 10**9) == 499
    # it looks no further than the block of `need`
    assert same_class_until(O_NODE, 2, 23, True, 45) == 59


def test_a_write_back_runs_on_until_the_final_visits():
    # partial write-backs in C0 .. C3 are one class; C4's are final
    assert same_class_until(O_NODE, 2, 23, False, 10**9) == 399
    assert same_class_until(O_NODE, 2, 423, False, 10**9) == 499
    # level K (pos 1): blocks are C iterations of 100 entries
    assert same_class_until(O_NODE, 1, 99, False, 10**9) == 399


def test_with_no_loop_above_that_skips_the_tensor_everything_is_one_class():
    node = SimpleNamespace(counted=(4, 5), relevant=(True, True), entries=20)
    assert same_class_until(node, 1, 3, True, 10**9) == 19
    assert same_class_until(node, 0, 3, False, 10**9) == 19


def test_memsize_small_jumps_from_iteration_zero_and_past_the_loop_above(monkeypatch):
    a = load_architecture(ROOT / "hw_models/eyeriss_like_small.yaml")
    w = load_workload(ROOT / "examples/eyeriss_memsize/workload.yaml")
    plan = build_plan(
        a, w, load_mapping(ROOT / "examples/eyeriss_memsize/mapping_small.yaml", a, w)
    )
    jumps = []
    jump = FastForward._jump

    def spy(self, lv, prev, snap, periods):
        jumps.append((lv.pos, prev.g // lv.period % lv.bound, snap.g, periods, lv.period))
        return jump(self, lv, prev, snap, periods)

    monkeypatch.setattr(FastForward, "_jump", spy)
    raw = replay_plan(plan, progress=False, fast_forward=True)
    # K (pos 1) from iteration 0 of C1: K1 .. K3 skipped, not only K2 .. K3
    assert (1, 0, 15000, 3, 2500) in jumps
    # B (pos 2) lands at the start of B19 while O's fill is already in the next K iteration
    assert (2, 1, 2750, 17, 125) in jumps
    assert raw.env_events < 40_000  # 47,597 before either
