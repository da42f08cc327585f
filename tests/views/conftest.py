"""Shared fixtures for the view tests: replay a case directory (traced) by name."""

from __future__ import annotations

import pytest
from view_cases import load_case

from cyclesim.analysis.simulate import replay
from cyclesim.engine import TraceFilter


@pytest.fixture
def traced():
    """traced(name, trace_filter=None) -> Result of that case with the trace on."""

    def run(name: str, trace_filter: TraceFilter | None = None):
        arch, workload, mapping = load_case(name)
        return replay(
            arch, workload, mapping, trace=True, trace_filter=trace_filter, progress=False
        )

    return run
