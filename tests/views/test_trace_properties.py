"""The traces say what the report says: on random schedules and the shipped examples, per-cause
stall cycles and per-port busy cycles and bits read back from the VCD (with pywellen, the reader
Surfer is built on; vcdvcd where pywellen is missing), the FST and the Perfetto JSON equal the
results tables."""

from __future__ import annotations

import json
from collections import Counter
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from random_cases import schedules
from view_cases import CASES, load_case

from cyclesim.analysis.simulate import replay
from cyclesim.views.fst import write_fst
from cyclesim.views.fst_native import fst_writer
from cyclesim.views.perfetto import trace_events
from cyclesim.views.perfetto_json import _dump, _json_lines, write_chrome_json
from cyclesim.views.vcd import write_vcd

try:
    import pywellen
except ImportError:  # the independent reader of last resort
    pywellen = None


def read_waves(path) -> dict[str, list[tuple[int, object]]]:
    """Every variable's full name -> its (time, value) changes, ints for wires and integers."""
    if pywellen is not None:
        wave = pywellen.Waveform(str(path))
        return {v.full_name: list(v.tv) for v in wave.all_vars()}
    import vcdvcd

    v = vcdvcd.VCDVCD(str(path))
    out = {}
    for name in v.signals:
        tv = v[name].tv
        out[name] = [(t, int(x, 2) if set(x) <= {"0", "1"} else x) for t, x in tv]
    return out


def held(tv: list[tuple[int, object]], end: int) -> Counter:
    """Cycles each value is held, from the changes, up to end."""
    out: Counter = Counter()
    for (t, val), (t_next, _) in zip(tv, tv[1:] + [(end, None)], strict=True):
        out[val] += min(t_next, end) - t
    return out


def stall_table(res) -> Counter:
    """The report's stall table summed per (phase, cause)."""
    out: Counter = Counter()
    for r in res.stalls.itertuples():
        out[(r.phase, r.cause)] += int(r.cycles)
    return out


def check_waveform(res, path) -> None:
    waves = read_waves(path)
    end = res.cycles
    state, phase = waves["cyclesim.pe_array.state"], waves["cyclesim.pe_array.phase"]
    # (phase, state) per cycle: merge the two signals' changes
    times = sorted({t for t, _ in state} | {t for t, _ in phase} | {end})
    got: Counter = Counter()
    s_i = p_i = 0
    for a, b in zip(times, times[1:], strict=False):
        while s_i + 1 < len(state) and state[s_i + 1][0] <= a:
            s_i += 1
        while p_i + 1 < len(phase) and phase[p_i + 1][0] <= a:
            p_i += 1
        got[(phase[p_i][1], state[s_i][1])] += b - a
    compute = got.pop(("compute", "compute"), 0)
    assert compute == res.ideal_compute_cycles
    assert +got == +stall_table(res)
    for r in res.port_table().itertuples():
        mem, port = r.port.split(".", 1)
        base = f"cyclesim.{mem}.{port}"
        assert held(waves[f"{base}.busy"], end)[1] == r.busy_cycles, r.port
        assert waves[f"{base}.bits_total"][-1][1] == r.bits, r.port
        if r.pe_bits:  # the PE array's share: busy wherever it takes bits per cycle
            share = held(waves[f"{base}.pe_share"], end)
            assert end - share[0] == r.pe_busy_cycles, r.port


def check_json(res, path) -> None:
    doc = json.loads(path.read_text(), parse_float=Decimal)
    got: Counter = Counter()
    compute = 0
    for e in doc["traceEvents"]:
        if e["ph"] == "X" and e["tid"] == 1:
            cycles = int(e["dur"] * 1000)
            if e["cat"] == "compute":
                compute += cycles
            else:
                got[(e["args"]["phase"], e["args"]["cause"])] += cycles
    assert compute == res.ideal_compute_cycles
    assert got == +stall_table(res)
    names = {e["tid"]: e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "thread_name"}
    bits: Counter = Counter()
    for e in doc["traceEvents"]:
        if e["ph"] == "X" and e["cat"] in ("port", "pe_port"):
            bits[names[e["tid"]].removeprefix("port ").removesuffix(" (PE array)")] += e["args"][
                "bits"
            ]
    for r in res.port_table().itertuples():
        assert bits[r.port] == r.bits, r.port


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])  # fmt: skip
@given(schedules())
def test_random_schedules_waveform_and_json_equal_the_results_tables(tmp_path, spec):
    res = replay(*spec, trace=True, progress=False)
    write_vcd(res, tmp_path / "r.vcd")
    check_waveform(res, tmp_path / "r.vcd")
    write_chrome_json(res, tmp_path / "r.json")
    check_json(res, tmp_path / "r.json")


@pytest.mark.parametrize("case", sorted(CASES))
def test_shipped_cases_fst_and_gzipped_json_equal_the_results_tables(case, tmp_path):
    if fst_writer() is None or pywellen is None:
        pytest.skip("needs pywellen and an FST writer (pylibfst or vcd2fst)")
    res = replay(*load_case(case), trace=True, progress=False)
    write_fst(res, tmp_path / "r.fst")
    check_waveform(res, tmp_path / "r.fst")
    write_chrome_json(res, tmp_path / "r.json.gz")
    import gzip

    (tmp_path / "r.json").write_bytes(gzip.decompress((tmp_path / "r.json.gz").read_bytes()))
    check_json(res, tmp_path / "r.json")


@pytest.mark.parametrize("case", sorted(CASES))
def test_hand_formatted_json_equals_the_generic_encoder(case):
    """The fast JSON path writes the same events, keys and values as trace_events + _dump."""
    res = replay(*load_case(case), trace=True, progress=False)
    act = res.activity()
    names: dict[str, str] = {}
    generic = [_dump(e, names) for e in trace_events(act) if e.get("dur", 1) > 0]
    assert list(_json_lines(act, "cyclesim")) == generic


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schedules())
def test_random_schedules_hand_formatted_json_equals_the_generic_encoder(spec):
    """As above on random schedules (DMA channels among them): every track's lines as numpy
    makes them, event for event."""
    act = replay(*spec, trace=True, progress=False).activity()
    names: dict[str, str] = {}
    generic = [_dump(e, names) for e in trace_events(act) if e.get("dur", 1) > 0]
    assert list(_json_lines(act, "cyclesim")) == generic


def test_spatial_stalls_show_in_the_state_signal(tmp_path):
    """05: a 32-bit operand through an 8-bit port takes 4 cycles a step: 1 computing, 3 spatial.

    8 steps -> 8 compute cycles and 24 spatial ones, the report's spatial row.
    """
    res = replay(*load_case("05_narrow_innermost_port"), trace=True, progress=False)
    write_vcd(res, tmp_path / "r.vcd")
    states = held(read_waves(tmp_path / "r.vcd")["cyclesim.pe_array.state"], res.cycles)
    assert states["spatial"] == 24 == int(res.stalls.query("cause == 'spatial'")["cycles"].sum())
    assert states["compute"] == res.ideal_compute_cycles
