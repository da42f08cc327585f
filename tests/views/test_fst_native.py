"""The FST writer's compiled change loop (views/fst_native.py) writes the file the Python loop
writes, byte for byte, and is used only while it is built from its current source."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from random_cases import schedules
from view_cases import CASES, load_case

from cyclesim.analysis.simulate import replay
from cyclesim.views import fst_native
from cyclesim.views.fst import write_fst

pytest.importorskip("pylibfst", reason="the C loop drives pylibfst's libfst")


def _compiled():
    module, why = fst_native.load()
    if module is None:
        pytest.skip(f"the FST C loop is not in use here: {why}")
    return module


def _both(res, tmp_path, monkeypatch, **kwargs) -> tuple[bytes, bytes]:
    """The FST of res written by the C loop, then by the Python loop."""
    write_fst(res, tmp_path / "c.fst", **kwargs)
    with monkeypatch.context() as m:
        m.setattr(fst_native, "load", lambda: (None, "the Python loop, for this test"))
        write_fst(res, tmp_path / "py.fst", **kwargs)
    return (tmp_path / "c.fst").read_bytes(), (tmp_path / "py.fst").read_bytes()


@pytest.mark.parametrize("case", sorted(CASES))
def test_shipped_cases_same_bytes_from_the_c_loop_and_the_python_loop(case, tmp_path, monkeypatch):
    _compiled()
    res = replay(*load_case(case), trace=True, progress=False)
    c, py = _both(res, tmp_path, monkeypatch)
    assert c == py
    # a window starting and ending inside the run: the values at its start come first
    c, py = _both(res, tmp_path, monkeypatch, window=(res.cycles // 3, 2 * res.cycles // 3))
    assert c == py


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])  # fmt: skip
@given(schedules())
def test_random_schedules_same_bytes_from_the_c_loop_and_the_python_loop(
    tmp_path, monkeypatch, spec
):
    _compiled()
    res = replay(*spec, trace=True, progress=False)
    c, py = _both(res, tmp_path, monkeypatch)
    assert c == py


def test_a_stale_or_refused_build_is_not_used(monkeypatch):
    _compiled()
    # the source changed since it was built: another stamp than the build's
    changed = dataclasses.replace(fst_native.LOOP, source=fst_native.SOURCE + "/* edited */")
    monkeypatch.setattr(fst_native, "LOOP", changed)
    module, why = fst_native.load()
    assert module is None and "stale" in why
    monkeypatch.undo()
    monkeypatch.setenv("CYCLESIM_PURE_PYTHON", "1")
    module, why = fst_native.load()
    assert module is None and "CYCLESIM_PURE_PYTHON" in why


@pytest.mark.parametrize("case", ["dma_two_tensors", "pipeline_holds_slot"])
def test_blocks_of_changes_same_bytes_from_both_loops_and_the_same_waves(
    case, tmp_path, monkeypatch
):
    """Ended every few changes (fst.BLOCK_CHANGES, a stretch of 8 cycles at a time), the FST's
    blocks are the same bytes from both loops, and read back as the one-block file."""
    _compiled()
    pywellen = pytest.importorskip("pywellen")
    from cyclesim.views import change_stream, fst

    res = replay(*load_case(case), trace=True, progress=False)
    write_fst(res, tmp_path / "one.fst")
    monkeypatch.setattr(change_stream, "MIN_STRETCH", 8)
    monkeypatch.setattr(fst, "BLOCK_CHANGES", 5)
    res = replay(*load_case(case), trace=True, progress=False)  # a new Activity, a new stream
    c, py = _both(res, tmp_path, monkeypatch)
    assert c == py
    assert c != (tmp_path / "one.fst").read_bytes()  # in blocks
    waves = [pywellen.Waveform(str(tmp_path / n)) for n in ("one.fst", "c.fst")]
    one, blocks = ({v.full_name: list(v.tv) for v in w.all_vars()} for w in waves)
    assert blocks == one
