"""Shared fixtures: replay inputs built from dicts or worked-example folders."""

from __future__ import annotations

import os

import pytest
from replay_helpers import WORKED, inputs_from_dicts, inputs_from_folder

from cyclesim.analysis.simulate import replay
from cyclesim.engine import fastforward
from cyclesim.engine.space import LEDGER_ENVIRONMENT_VARIABLE
from cyclesim.engine.verify import VERIFY_ENVIRONMENT_VARIABLE

# Every replay in the suite (the CLI's subprocesses included) that fast-forwards is replayed
# once more in full and must leave identical records (engine/verify.py): fast-forward is
# proved exact on every test case, not only on tests/test_fast_forward_identity.py's.
os.environ.setdefault(VERIFY_ENVIRONMENT_VARIABLE, "1")
# ... and every replay checks that no memory instance ever held more than its size_bits
# (engine/space.py's ledger; CapacityOverflow otherwise)
os.environ.setdefault(LEDGER_ENVIRONMENT_VARIABLE, "1")


@pytest.fixture
def replay_dicts():
    """replay_dicts(arch, workload, mapping, **policy) -> Result."""

    def run(arch: dict, workload: dict, mapping: dict, **kw):
        return replay(*inputs_from_dicts(arch, workload, mapping), progress=False, **kw)

    return run


@pytest.fixture
def replay_case():
    """replay_case('01_compute_bound', **policy) -> Result for a worked example folder."""

    def run(name: str, **kw):
        return replay(*inputs_from_folder(WORKED / name), progress=False, **kw)

    return run


@pytest.fixture
def look_at_every_loop(monkeypatch):
    """Fast-forward looks at every loop, however few events an iteration costs: in production
    a loop of small iterations is not worth a snapshot, but the fast-forward property tests'
    cases are small and the point is to make it fire (and prove it exact) as often as it can."""
    monkeypatch.setattr(fastforward, "MIN_EVENTS", 0)
