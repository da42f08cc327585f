"""Per-bank DRAM signals in the traces: each bank's state and open row, read back from the VCD
(with pywellen) and the FST, and its slices in Perfetto, agree with the DRAM timer's own counts
and its open rows at the end of the run."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from replay_helpers import case_files, gemm_einsum, memory, port  # noqa: E402
from test_perfetto import assert_no_overlap, check_trace_event_format, load  # noqa: E402

from cyclesim.analysis.simulate import replay  # noqa: E402
from cyclesim.cli import main  # noqa: E402
from cyclesim.engine import TraceFilter  # noqa: E402
from cyclesim.spec import architecture_from_dict, mapping_from_dict, workload_from_dict  # noqa: E402
from cyclesim.views.fst import write_fst
from cyclesim.views.fst_native import fst_writer  # noqa: E402
from cyclesim.views.perfetto import trace_events  # noqa: E402
from cyclesim.views.perfetto_json import _dump, _json_lines, write_chrome_json  # noqa: E402
from cyclesim.views.perfetto_proto import perfetto_available, write_perfetto_proto  # noqa: E402
from cyclesim.views.vcd import write_vcd  # noqa: E402

pywellen = pytest.importorskip("pywellen")

# DDR4-2400 timing at tCK = 1 ns (one DRAM cycle per cycle of the 1000 MHz accelerator) with
# a refresh every 1500 cycles, so a short run refreshes often; 2 ranks of 16 banks (4 groups).
INI = (
    "[dram_structure]\nprotocol = DDR4\nbankgroups = 4\nbanks_per_group = 4\nrows = 65536\n"
    "columns = 1024\ndevice_width = 8\nBL = 8\n\n[timing]\ntCK = 1.0\nAL = 0\nCL = 17\n"
    "CWL = 12\ntRCD = 17\ntRP = 17\ntRAS = 39\ntRFC = 120\ntREFI = 1500\ntRRD_S = 4\n"
    "tRRD_L = 6\ntWTR_S = 3\ntWTR_L = 9\ntFAW = 26\ntWR = 18\ntRTP = 9\ntCCD_S = 4\n"
    "tCCD_L = 6\ntRTRS = 1\n\n[system]\nchannel_size = 16384\nchannels = 1\n"
    "bus_width = 64\naddress_mapping = rochrababgco\n"
)


def gemm(tmp_path: Path):
    """The inputs of gemm_files, loaded."""
    arch, workload, mapping = gemm_files(tmp_path)
    a = architecture_from_dict(arch, str(tmp_path / "arch.yaml"))
    w = workload_from_dict(workload, "workload.yaml")
    return a, w, mapping_from_dict(mapping, a, w, "mapping.yaml")


def gemm_files(tmp_path: Path) -> tuple[dict, dict, dict]:
    """Z[m,n] += A[m,k] * B[k,n], m = 128, n = 64, k = 64 (spatial), 8 bits, DRAM behind a 64 b
    port: B whole in the buffer, A and Z 8 rows at a time. Z is placed in the row after A's in
    the same bank (2 ranks x 16 banks x 8 KiB rows: 256 KiB further), B in the row after, so
    each tile's fill of A and write-back of Z close each other's row."""
    (tmp_path / "ddr4.ini").write_text(INI)
    dram = memory("DRAM", None, None, [port("rd", "read", 64), port("wr", "write", 64)])
    dram["dram"] = {
        "config": "ddr4.ini",
        "placements": {"A": {"base": 0}, "Z": {"base": 256 << 10}, "B": {"base": 512 << 10}},
    }
    arch = {
        "name": "gemm_ddr4",
        "clock_mhz": 1000,
        "pe_array": {"dims": {"X": 64}},
        "memories": [
            dram,
            memory("buf", None, None, [port("rd", "read", 512), port("wr", "write", 512)]),
        ],
    }
    workload = {
        "tensors": {n: {"bits_per_value": 8} for n in "ABZ"},
        "einsums": [gemm_einsum(128, 64, 64)],
    }
    mapping = {
        "loop_tree": [
            {"type": "storage", "memory": "DRAM", "tensors": ["A", "B", "Z"]},
            {"type": "storage", "memory": "buf", "tensors": ["B"]},
            {"type": "temporal", "rank": "m", "bound": 16},
            {"type": "storage", "memory": "buf", "tensors": ["A", "Z"]},
            {"type": "temporal", "rank": "m", "bound": 8},
            {"type": "temporal", "rank": "n", "bound": 64},
            {"type": "spatial", "rank": "k", "bound": 64, "dim": "X"},
            {"type": "compute", "einsum": "gemm"},
        ]
    }
    return arch, workload, mapping


def bank_waves(path) -> dict[str, dict[str, list]]:
    """bank scope -> {'state': changes, 'open_row': changes} of every DRAM bank signal, a
    row number's "no value" as "x" (the reader spells it as one x per bit of the variable,
    whose size is the fewest bits its values need in the trace's window)."""
    out: dict[str, dict[str, list]] = {}
    for v in pywellen.Waveform(str(path)).all_vars():
        scope, _, name = v.full_name.rpartition(".")
        if scope.startswith("cyclesim.DRAM.ch"):
            out.setdefault(scope, {})[name] = [(t, _no_value(x)) for t, x in v.tv]
    return out


def _no_value(x):
    return "x" if isinstance(x, str) and x and set(x) == {"x"} else x


def bank_index(scope: str) -> int:
    """The timer's bank index of 'cyclesim.DRAM.ch0.rank1.bg2.bank3' (16 banks a rank)."""
    _, _, ch, rank, group, bank = scope.split(".")
    number = int(bank.removeprefix("bank"))
    return (int(ch[2:]) * 2 + int(rank[4:])) * 16 + int(group.removeprefix("bg")) * 4 + number


def check_banks(res, path) -> None:
    """The waveform at path shows every activate, refresh and open row of the DRAM timer."""
    counts = res.raw.rec.dram_counts["DRAM"]
    open_rows = res.raw.rec.dram_open_rows["DRAM"]
    waves = bank_waves(path)
    assert waves and all(set(w) == {"state", "open_row"} for w in waves.values())
    activates, refreshes = 0, {}
    for scope, w in waves.items():
        # an activate is the open row becoming a number; the bank is `active` exactly then
        rows = [(t, r) for t, r in w["open_row"] if isinstance(r, int)]
        activates += len(rows)
        assert [t for t, s in w["state"] if s == "active"] == [t for t, _ in rows], scope
        # the row open when the run ends is the timer's (x: none, -1 in the timer)
        last = w["open_row"][-1][1]
        assert (last if isinstance(last, int) else -1) == open_rows[bank_index(scope)], scope
        assert {s for _, s in w["state"]} <= {"idle", "active", "precharge", "refresh"}
        # a refresh holds the bank tRFC = 120 cycles, and holds every bank of its rank
        spans = [
            (t, nxt)
            for (t, s), (nxt, _) in zip(w["state"], w["state"][1:], strict=False)
            if s == "refresh"
        ]
        assert spans and all(b - a == 120 for a, b in spans), scope
        rank = bank_index(scope) // 16
        assert refreshes.setdefault(rank, spans) == spans, scope
    assert activates == counts["activates"]
    assert sum(len(spans) for spans in refreshes.values()) == counts["refreshes"]


def test_bank_signals_read_back_equal_the_timers_counts(tmp_path):
    # the A fills and Z write-backs of 16 tiles close each other's row in bank 0: tens of
    # activates, and a refresh every 1500 cycles of a 13,000-cycle run
    res = replay(*gemm(tmp_path), trace=True, progress=False)
    counts = res.raw.rec.dram_counts["DRAM"]
    assert counts["activates"] >= 32 and counts["refreshes"] >= 5
    write_vcd(res, tmp_path / "run.vcd")
    check_banks(res, tmp_path / "run.vcd")
    if fst_writer() is not None:  # the FST carries the same signals
        write_fst(res, tmp_path / "run.fst")
        check_banks(res, tmp_path / "run.fst")


def test_perfetto_has_a_track_per_bank_with_a_slice_per_row_opened(tmp_path):
    res = replay(*gemm(tmp_path), trace=True, progress=False)
    write_chrome_json(res, tmp_path / "run.json")
    events = load(tmp_path / "run.json")["traceEvents"]  # ts and dur as exact decimals
    check_trace_event_format({"traceEvents": events})
    assert_no_overlap([e for e in events if e.get("cat") == "dram"])
    tracks = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    bank_tids = {tid for tid, name in tracks.items() if name.startswith("DRAM ch0 rank")}
    slices = [e for e in events if e.get("cat") == "dram"]
    assert {e["tid"] for e in slices} == bank_tids
    opened = [e for e in slices if e["args"]["state"] == "active"]
    assert len(opened) == res.raw.rec.dram_counts["DRAM"]["activates"]
    assert all(e["name"] == f"row {e['args']['row']}" for e in opened)
    refreshes = [e for e in slices if e["name"] == "refresh"]
    assert refreshes and all(e["dur"] * 1000 == 120 for e in refreshes)  # tRFC = 120 cycles
    # the hand-formatted JSON equals the generic encoding of the same events
    act, names = res.activity(), {}
    generic = [_dump(e, names) for e in trace_events(act) if e.get("dur", 1) > 0]
    assert list(_json_lines(act, "cyclesim")) == generic


def test_a_window_starts_with_the_rows_open_at_its_first_cycle(tmp_path):
    inputs = gemm(tmp_path)
    whole = replay(*inputs, trace=True, progress=False)
    start = whole.cycles // 2
    part = replay(*inputs, trace_filter=TraceFilter(start=start), progress=False)
    write_vcd(whole, tmp_path / "whole.vcd")
    write_vcd(part, tmp_path / "part.vcd")
    before, after = bank_waves(tmp_path / "whole.vcd"), bank_waves(tmp_path / "part.vcd")
    assert set(before) == set(after)
    for scope, w in after.items():
        for name, changes in w.items():
            at_start = [v for t, v in before[scope][name] if t <= start][-1]
            assert changes[0] == (start, at_start), (scope, name)
            assert changes[1:] == [(t, v) for t, v in before[scope][name] if t > start]


def test_the_protobuf_trace_carries_the_bank_tracks(tmp_path):
    if not perfetto_available():
        pytest.skip("the `perfetto` Python package is not installed")
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    res = replay(*gemm(tmp_path), trace=True, progress=False)
    write_perfetto_proto(res, tmp_path / "run.pftrace")
    trace = pb.Trace()
    trace.ParseFromString((tmp_path / "run.pftrace").read_bytes())
    banks = {
        p.track_descriptor.uuid
        for p in trace.packet
        if p.HasField("track_descriptor") and p.track_descriptor.name.startswith("DRAM ch")
    }
    begins = [
        p
        for p in trace.packet
        if p.HasField("track_event")
        and p.track_event.track_uuid in banks
        and p.track_event.type == pb.TrackEvent.TYPE_SLICE_BEGIN
    ]
    slices = [e for e in trace_events(res.activity()) if e.get("cat") == "dram"]
    assert banks and len(begins) == len(slices)


def test_bank_tracks_name_the_memory_once_and_read_like_the_vcd_scopes(tmp_path, capsys):
    # as a user runs it: `cyclesim run ... --vcd --perfetto`, on a memory named DRAM. One
    # channel, 2 ranks x 4 bank groups x 4 banks (INI); the traces show the banks the run
    # uses: rank 0's 16. Under rochrababgco with 8 KiB rows a rank spans 128 KiB of a row
    # index, so A (8 KiB at 0), Z (8 KiB at 256 KiB) and B (4 KiB at 512 KiB) are rows 0, 1, 2
    # of rank 0's bank 0, and a refresh of rank 0 holds all 16 of its banks; rank 1 is never
    # touched. Each is named by the same words in both traces,
    # the memory's name said once ("DRAM ch0 rank0 bg2 bank3", not "DRAM DRAM ch0.rank0.bank2_3")
    files = case_files(tmp_path)
    for path, spec in zip(files, gemm_files(tmp_path), strict=True):
        Path(path).write_text(yaml.safe_dump(spec, sort_keys=False))
    vcd, trace = tmp_path / "run.vcd", tmp_path / "run.json"
    assert main(["run", *files, "--vcd", str(vcd), "--perfetto", str(trace)]) == 0
    capsys.readouterr()
    expected = [f"DRAM ch0 rank0 bg{g} bank{b}" for g in range(4) for b in range(4)]
    names = [e["args"]["name"] for e in load(trace)["traceEvents"] if e["name"] == "thread_name"]
    assert [n for n in names if n.startswith("DRAM ch")] == expected
    assert not any("DRAM DRAM" in n for n in names)
    scopes = sorted(bank_waves(vcd), key=bank_index)
    assert [s.removeprefix("cyclesim.").replace(".", " ") for s in scopes] == expected
    assert "DRAM banks" in (tmp_path / "run.gtkw").read_text()  # the .gtkw group, said once
    assert "DRAM DRAM" not in (tmp_path / "run.gtkw").read_text()
