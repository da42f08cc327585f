"""Looks fast-forward leaves out (FastForward._cannot_jump) change none of its decisions.

A snapshot at a boundary that can end no jump is not taken. Replayed with every look taken
instead, the same plans make the same jumps over the same periods, so SimPy's event count is
the same too (the results are the same either way: tests/test_fast_forward_identity.py).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import given
from replay_helpers import inputs_from_dicts
from test_fast_forward_identity import CASES as IDENTITY_CASES
from test_fast_forward_identity import PROPERTY, STEADY_GEMMS

from cyclesim.engine import replay_plan
from cyclesim.engine.fastforward import FastForward
from cyclesim.engine.verify import VERIFY_ENVIRONMENT_VARIABLE
from cyclesim.schedule import ReusePolicy, build_plan
from cyclesim.spec import load_architecture, load_mapping, load_workload

ROOT = Path(__file__).resolve().parents[1]
# the identity test's cases (every shipped example and worked case) as their files build them
CASES = {name: case[:3] for name, case in IDENTITY_CASES.items() if not case[3]}


def _plan(arch: str, workload: str, mapping: str):
    a = load_architecture(ROOT / arch)
    w = load_workload(ROOT / workload)
    return build_plan(a, w, load_mapping(ROOT / mapping, a, w))


def _same_decisions(plan, monkeypatch) -> list[bool]:
    """Replay with looks left out, then with every look taken: the same jumps, periods and
    SimPy events; return whether each look was left out."""
    monkeypatch.delenv(VERIFY_ENVIRONMENT_VARIABLE, raising=False)  # decisions, not records
    left_out = []
    cannot_jump = FastForward._cannot_jump

    def counted(self, lv, g):
        out = cannot_jump(self, lv, g)
        left_out.append(out)
        return out

    with monkeypatch.context() as m:
        m.setattr(FastForward, "_cannot_jump", counted)
        lean = replay_plan(plan, progress=False, fast_forward=True)
    with monkeypatch.context() as m:
        m.setattr(FastForward, "_cannot_jump", lambda self, lv, g: False)
        every = replay_plan(plan, progress=False, fast_forward=True)
    assert dataclasses.astuple(lean.fast_forward) == dataclasses.astuple(every.fast_forward)
    assert lean.env_events == every.env_events
    assert (lean.cycles, lean.counts) == (every.cycles, every.counts)
    return left_out


@pytest.mark.parametrize("case", sorted(CASES))
def test_looks_left_out_change_no_jump(case, monkeypatch):
    left_out = _same_decisions(_plan(*CASES[case]), monkeypatch)
    if case == "memsize small":  # the case this is for: it leaves looks out
        assert any(left_out)


@PROPERTY
@given(STEADY_GEMMS)
def test_looks_left_out_change_no_jump_in_random_steady_gemms(look_at_every_loop, case):
    arch, workload, mapping, reuse, _ = case
    plan = build_plan(*inputs_from_dicts(arch, workload, mapping), ReusePolicy(reuse))
    with pytest.MonkeyPatch.context() as monkeypatch:
        _same_decisions(plan, monkeypatch)
