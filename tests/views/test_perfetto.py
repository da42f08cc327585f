"""The Perfetto JSON is valid Trace Event format with no overlapping slices on a track."""

from __future__ import annotations

import json
from collections import defaultdict
from decimal import Decimal

import numpy as np
import pytest
from view_cases import CASES

from cyclesim.engine import TraceFilter
from cyclesim.views.perfetto_json import write_chrome_json
from cyclesim.views.perfetto_proto import perfetto_available, write_perfetto_proto

PHASES = {"X", "C", "i", "M"}


def load(path) -> dict:
    return json.loads(path.read_text(), parse_float=Decimal)


def check_trace_event_format(doc: dict) -> list[dict]:
    """Assert the Trace Event rules Perfetto relies on; return the events."""
    assert (
        "traceEvents" in doc and "displayTimeUnit" not in doc
    )  # ts stays in microseconds everywhere
    evs = doc["traceEvents"]
    for e in evs:
        assert e["ph"] in PHASES, e
        assert (
            isinstance(e["name"], str) and isinstance(e["pid"], int) and isinstance(e["tid"], int)
        ), e
        if e["ph"] == "M":
            assert e["name"] in ("process_name", "thread_name", "thread_sort_index")
            continue
        assert e["ts"] >= 0
        if e["ph"] == "X":
            assert e["dur"] > 0, e
        if e["ph"] == "C":
            assert e["args"] and all(isinstance(v, int) for v in e["args"].values()), e
        if e["ph"] == "i":
            assert e["s"] in ("t", "p", "g")
    return evs


def assert_no_overlap(evs: list[dict]) -> None:
    by_tid = defaultdict(list)
    for e in evs:
        if e["ph"] == "X":
            by_tid[e["tid"]].append((e["ts"], e["ts"] + e["dur"]))
    for tid, spans in by_tid.items():
        spans.sort()
        for (a0, a1), (b0, _) in zip(spans, spans[1:], strict=False):
            assert b0 >= a1, f"track {tid}: [{a0}, {a1}) overlaps a slice starting at {b0}"


@pytest.mark.parametrize("case", sorted(CASES))
def test_json_is_valid_trace_event_format_without_overlaps(case, traced, tmp_path):
    res = traced(case)
    write_chrome_json(res, tmp_path / "t.json")
    evs = check_trace_event_format(load(tmp_path / "t.json"))
    assert_no_overlap(evs)
    names = {e["args"]["name"] for e in evs if e["name"] == "thread_name"}
    assert "PE array" in names and all(f"port {p.key}" in names for p in res.raw.plan.ports)


def test_times_are_cycles_on_a_nanosecond_ruler(traced, tmp_path):
    """1 cycle = 1 ns: ts (microseconds) is cycles / 1000, written exactly."""
    res = traced("03_single_buffer")
    write_chrome_json(res, tmp_path / "t.json")
    evs = load(tmp_path / "t.json")["traceEvents"]
    pe = [e for e in evs if e["ph"] == "X" and e["tid"] == 1]
    compute = [(e["ts"] * 1000, e["dur"] * 1000) for e in pe if e["cat"] == "compute"]
    assert compute == [(8, 4), (20, 4), (32, 4), (44, 4)]
    assert sum(e["dur"] * 1000 for e in pe if e["cat"] == "stall") == 36
    assert '"ts":0.012' in (tmp_path / "t.json").read_text()


def test_dma_channel_track_and_occupancy_counters(traced, tmp_path):
    res = traced("dma_two_tensors")
    write_chrome_json(res, tmp_path / "t.json")
    evs = load(tmp_path / "t.json")["traceEvents"]
    tid = next(
        e["tid"] for e in evs if e["name"] == "thread_name" and e["args"]["name"] == "DMA dma0 ch0"
    )
    dma = [e for e in evs if e["ph"] == "X" and e["tid"] == tid]
    assert len(dma) == 8 and {e["name"] for e in dma} == {"A fill", "B fill"}
    counters = {e["name"] for e in evs if e["ph"] == "C"}
    assert counters == {"A@sram_a occupancy", "B@sram_b occupancy", "Z@acc occupancy"}
    assert any(e["ph"] == "X" and e["tid"] == 1 and e["cat"] == "stall" for e in evs)


def test_window_keeps_only_its_cycles(traced, tmp_path):
    res = traced("03_single_buffer", TraceFilter(10, 34))
    write_chrome_json(res, tmp_path / "t.json")
    evs = check_trace_event_format(load(tmp_path / "t.json"))
    for e in evs:
        if e["ph"] in ("X", "C", "i"):
            assert 10 <= e["ts"] * 1000 and e["ts"] * 1000 + e.get("dur", 0) * 1000 <= 34, e


def test_same_run_same_bytes(traced, tmp_path):
    write_chrome_json(traced("dma_two_tensors"), tmp_path / "a.json")
    write_chrome_json(traced("dma_two_tensors"), tmp_path / "b.json")
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()


def test_same_run_same_gzipped_bytes_under_any_name(traced, tmp_path):
    # the gzip header once held the temporary file's name (with the writer's pid): two runs of
    # one trace, or one trace under two names, gave different .json.gz bytes
    write_chrome_json(traced("dma_two_tensors"), tmp_path / "a.json.gz")
    write_chrome_json(traced("dma_two_tensors"), tmp_path / "b.json.gz")
    assert (tmp_path / "a.json.gz").read_bytes() == (tmp_path / "b.json.gz").read_bytes()


@pytest.mark.skipif(
    not perfetto_available(), reason="the `perfetto` Python package is not installed"
)
def test_protobuf_form_has_balanced_slices(traced, tmp_path):
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    write_perfetto_proto(traced("dma_two_tensors"), tmp_path / "t.pftrace")
    trace = pb.Trace()
    trace.ParseFromString((tmp_path / "t.pftrace").read_bytes())
    depth: dict[int, int] = defaultdict(int)
    last_ts: dict[int, int] = defaultdict(int)  # written track by track; Perfetto sorts on load
    names = set()
    for p in trace.packet:
        if p.HasField("track_event"):
            te = p.track_event
            assert p.timestamp >= last_ts[te.track_uuid]
            last_ts[te.track_uuid] = p.timestamp
            names |= {n.name for n in p.interned_data.debug_annotation_names}
            assert all(a.name_iid for a in te.debug_annotations)  # names sent once, by number
            if te.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
                depth[te.track_uuid] += 1
                assert depth[te.track_uuid] == 1
            elif te.type == pb.TrackEvent.TYPE_SLICE_END:
                depth[te.track_uuid] -= 1
    assert all(d == 0 for d in depth.values())
    assert {"cause", "phase", "where", "bits"} <= names  # the events keep their arguments


def test_numbers_and_microseconds_read_as_python_writes_them():
    """The digit tables: every width of number, 0 and the largest int64 included."""
    from cyclesim.views.perfetto_json import _us
    from cyclesim.views.text_lines import TextLines

    edges = [0, 1, 9, 10, 99, 100, 999, 1000, 1001, 10**6, 10**6 + 7, 10**18, 2**63 - 1]
    values = np.array(edges + np.random.default_rng(1).integers(0, 10**12, 500).tolist())
    shown = np.arange(len(values)) % 3 > 0

    def lines(made) -> list[str]:
        return b"".join(made.render("\n", 1)).decode("ascii").split("\n")[:-1]

    assert lines(TextLines(len(values)).number(values)) == [str(v) for v in values.tolist()]
    assert lines(TextLines(len(values)).micros(values)) == [_us(v) for v in values.tolist()]
    assert lines(TextLines(len(values)).number(values, shown)) == [
        str(v) if s else "" for v, s in zip(values.tolist(), shown.tolist(), strict=True)
    ]


def test_file_is_the_events_joined_in_chunks_across_blocks(traced, tmp_path, monkeypatch):
    """The events (as the generic encoder writes them) separated by ",\n" or, after every
    CHUNK-th, by ","; the same bytes whether a block holds all the lines or one."""
    from cyclesim.views import perfetto_json, text_lines
    from cyclesim.views.perfetto_json import _json_lines

    res = traced("dma_two_tensors")
    lines = list(_json_lines(res.activity(), "cyclesim"))

    def events_of(path) -> str:
        head, events = path.read_text().split('"traceEvents":[\n')
        assert head.startswith('{"otherData":{') and events.endswith("\n]}\n")
        return events.removesuffix("\n]}\n")

    write_chrome_json(res, tmp_path / "t.json")
    assert len(lines) < perfetto_json.CHUNK and events_of(tmp_path / "t.json") == ",\n".join(lines)
    monkeypatch.setattr(perfetto_json, "CHUNK", 7)
    monkeypatch.setattr(text_lines, "BLOCK_BYTES", 1)  # a line at a time
    write_chrome_json(res, tmp_path / "t.json")
    seps = [",\n"[: 1 if i % 7 == 0 else 2] for i in range(1, len(lines))] + [""]
    assert events_of(tmp_path / "t.json") == "".join(map(str.__add__, lines, seps))
