"""The VCD and Perfetto JSON writers' C loops (views/text_native.py) write the bytes their
numpy and Python code writes, and are used only while built from their current source."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from random_cases import schedules
from view_cases import CASES, load_case

from cyclesim.analysis.simulate import replay
from cyclesim.views import text_native
from cyclesim.views.perfetto_json import write_chrome_json
from cyclesim.views.vcd import write_vcd


def _compiled():
    module = text_native.load()
    if module is None:
        pytest.skip("the trace text C loops are not in use here (make native)")
    return module


def _both(res, tmp_path, monkeypatch, **kwargs) -> list[tuple[bytes, bytes]]:
    """The VCD and the JSON of res written with the C loops, then without them."""
    written = []
    for write, name in ((write_vcd, "run.vcd"), (write_chrome_json, "run.json")):
        write(res, tmp_path / f"c-{name}", **kwargs)
        with monkeypatch.context() as m:
            m.setattr(text_native, "load", lambda: None)
            write(res, tmp_path / f"py-{name}", **kwargs)
        written.append(((tmp_path / f"c-{name}").read_bytes(), (tmp_path / f"py-{name}").read_bytes()))  # fmt: skip
    return written


@pytest.mark.parametrize("case", sorted(CASES))
def test_shipped_cases_same_bytes_with_and_without_the_c_loops(case, tmp_path, monkeypatch):
    _compiled()
    res = replay(*load_case(case), trace=True, progress=False)
    for c, py in _both(res, tmp_path, monkeypatch):
        assert c == py
    # a window starting and ending inside the run: the values at its start come first
    for c, py in _both(res, tmp_path, monkeypatch, window=(res.cycles // 3, 2 * res.cycles // 3)):
        assert c == py


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])  # fmt: skip
@given(schedules())
def test_random_schedules_same_bytes_with_and_without_the_c_loops(tmp_path, monkeypatch, spec):
    _compiled()
    res = replay(*spec, trace=True, progress=False)
    for c, py in _both(res, tmp_path, monkeypatch):
        assert c == py


def test_a_stale_or_refused_build_is_not_used(monkeypatch):
    _compiled()
    # the source changed since it was built: another stamp than the build's
    changed = dataclasses.replace(text_native.LOOP, source=text_native.SOURCE + "/* edited */")
    monkeypatch.setattr(text_native, "LOOP", changed)
    assert text_native.load() is None
    monkeypatch.undo()
    monkeypatch.setenv("CYCLESIM_PURE_PYTHON", "1")
    assert text_native.load() is None
