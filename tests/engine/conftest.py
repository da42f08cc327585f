"""Fixtures of the component tests, as SimPy's own tests have them: a fresh environment and an
event log that tiny processes append (cycle, what happened) to."""

from __future__ import annotations

import pytest
import simpy


@pytest.fixture
def env() -> simpy.Environment:
    return simpy.Environment()


@pytest.fixture
def log() -> list:
    return []
