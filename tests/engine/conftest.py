"""Fixtures of the component tests, as SimPy's own tests have them: a fresh environment (the
replay's, whose end-of-cycle decisions the fabric, DMA channels and room use) and an event log
that tiny processes append (cycle, what happened) to."""

from __future__ import annotations

import pytest

from cyclesim.engine.environment import ReplayEnvironment


@pytest.fixture
def env() -> ReplayEnvironment:
    return ReplayEnvironment()


@pytest.fixture
def log() -> list:
    return []
