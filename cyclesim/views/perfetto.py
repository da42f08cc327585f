"""Perfetto / Chrome Trace Event JSON (and, where the `perfetto` package is installed, protobuf).

One track (tid) per port, per DMA channel and for the PE array (plus one for its stalls);
complete events (ph X) never overlap within a track; counters (ph C) for buffer occupancy;
instant events (ph i) where a stall starts. One cycle is one nanosecond on the UI's ruler:
`ts` is in microseconds, written as an exact decimal (cycles / 1000), never a float repr.
No `displayTimeUnit`: Perfetto ignores it today, and older trace processors took it as the
unit of `ts`, which would have scaled every time by 1000.
"""

from __future__ import annotations

import json
from pathlib import Path

from cyclesim.errors import TraceError
from cyclesim.results import SimResult
from cyclesim.views.activity import Activity, build_activity

PID = 1


def _us(cycles: int) -> str:
    """Cycles as an exact decimal number of microseconds (1 cycle = 1 ns)."""
    whole, frac = divmod(int(cycles), 1000)
    return f"{whole}.{frac:03d}" if frac else str(whole)


def tracks(act: Activity) -> list[tuple[int, str]]:
    """(tid, name) of every track, in display order: PE array, its stalls, ports, DMA channels."""
    out = [(1, "PE array"), (2, "PE array stalls")]
    tid = 10
    for memory in act.memories:
        for key in act.ports:
            if act.port_memory[key] == memory:
                out.append((tid, f"port {key}"))
                tid += 1
    for engine, channels in act.dma.items():
        for c in range(len(channels)):
            out.append((tid, f"DMA {engine} ch{c}"))
            tid += 1
    return out


def _slice(name: str, cat: str, start: int, end: int, tid: int, args: dict) -> dict:
    """A complete event (ph X) on one track of the one process."""
    return dict(name=name, cat=cat, ph="X", ts=start, dur=end - start, pid=PID, tid=tid, args=args)


def trace_events(act: Activity, title: str = "cyclesim") -> list[dict]:
    """The traceEvents list (times as cycles; the writer turns them into microseconds)."""
    tids = dict((name, tid) for tid, name in tracks(act))
    ev: list[dict] = [dict(name="process_name", ph="M", pid=PID, tid=0, args=dict(name=title))]
    for tid, name in tracks(act):
        ev.append(dict(name="thread_name", ph="M", pid=PID, tid=tid, args=dict(name=name)))
        ev.append(
            dict(name="thread_sort_index", ph="M", pid=PID, tid=tid, args=dict(sort_index=tid))
        )
    for s in act.segments:
        ev.append(_slice(s.einsum, "compute", s.start, s.end, 1, dict(tile=s.tile)))
    for s in act.stalls:
        args = dict(cause=s.cause, phase=s.phase, where=s.where, chain=s.chain, cycles=s.cycles)
        ev.append(_slice(f"stall: {s.cause}", "stall", s.start, s.end, 2, args))
        ev.append(
            dict(
                name=f"stall: {s.cause}",
                cat="stall",
                ph="i",
                s="t",
                ts=s.start,
                pid=PID,
                tid=1,
                args=args,
            )
        )
    for s in act.spatial:
        ev.append(
            dict(
                name="stall: spatial",
                cat="stall",
                ph="i",
                s="t",
                ts=s.start,
                pid=PID,
                tid=1,
                args=dict(
                    cause=s.cause, where=s.where, chain=s.chain, cycles=s.cycles, until=s.end
                ),
            )
        )
    for key, bursts in act.ports.items():
        tid = tids[f"port {key}"]
        for b in _merge(bursts):
            ev.append(_slice(b[2], "port", b[0], b[1], tid, dict(by=b[3], bits=b[4], grants=b[5])))
    for engine, channels in act.dma.items():
        for c, transfers in enumerate(channels):
            tid = tids[f"DMA {engine} ch{c}"]
            for b in transfers:
                ev.append(
                    _slice(
                        f"{b.tensor} {b.kind}",
                        "dma",
                        b.start,
                        b.end,
                        tid,
                        dict(node=b.who, bits=b.bits),
                    )
                )
    for buf in act.buffers:
        for t, n, _held in buf.changes:
            ev.append(
                dict(
                    name=f"{buf.label} occupancy",
                    cat="buffer",
                    ph="C",
                    ts=t,
                    pid=PID,
                    tid=0,
                    args=dict(tiles=n, bits=n * buf.tile_bits),
                )
            )
    for memory, series in act.l1.items():  # L1 allocator: bytes in use
        for t, used in series:
            ev.append(
                dict(
                    name=f"{memory} allocator occupancy",
                    cat="l1",
                    ph="C",
                    ts=t,
                    pid=PID,
                    tid=0,
                    args=dict(bytes=used),
                )
            )
    ev = [e for e in ev if e.get("dur", 1) > 0]
    order = {"M": 0, "C": 1, "X": 2, "i": 3}
    return sorted(ev, key=lambda e: (e.get("ts", -1), order[e["ph"]], e["tid"]))


def _merge(bursts) -> list[tuple]:
    """Back-to-back grants of one holder and tensor as one slice: (start, end, tensor, by, bits, grants)."""
    out: list[list] = []
    for b in bursts:
        if out and out[-1][1] == b.start and out[-1][2] == b.tensor and out[-1][3] == b.who:
            out[-1][1] = b.end
            out[-1][4] += b.bits
            out[-1][5] += 1
        else:
            out.append([b.start, b.end, b.tensor, b.who, b.bits, 1])
    return [tuple(x) for x in out]


def _dump(e: dict) -> str:
    """One event as JSON with ts/dur as exact decimal microseconds."""
    parts = []
    for k, v in e.items():
        if k in ("ts", "dur"):
            parts.append(f'"{k}":{_us(v)}')
        else:
            parts.append(f"{json.dumps(k)}:{json.dumps(v, sort_keys=True, separators=(',', ':'))}")
    return "{" + ",".join(parts) + "}"


def write_chrome_json(
    res: SimResult,
    path: str | Path,
    *,
    window: tuple[int, int] | None = None,
    title: str = "cyclesim",
) -> int:
    """Write the Trace Event JSON of a traced run; return the number of events.

    Raise TraceError if the run was not traced or the window is empty.
    """
    act = build_activity(res, window)
    events = trace_events(act, title)
    other = dict(
        time_unit="1 cycle = 1 ns on the ruler (ts in microseconds = cycles / 1000)",
        window_cycles=[act.start, act.end],
        cycles=act.cycles,
        reuse=res.reuse,
        isolate_einsums=res.isolate_einsums,
    )
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write('{"otherData":')
        f.write(json.dumps(other, sort_keys=True, separators=(",", ":")))
        f.write(',"traceEvents":[\n')
        f.write(",\n".join(_dump(e) for e in events))
        f.write("\n]}\n")
    return len(events)


def perfetto_available() -> bool:
    """Is the `perfetto` Python package (for the protobuf form) importable?"""
    try:
        import perfetto.protos.perfetto.trace.perfetto_trace_pb2  # noqa: F401
    except ImportError:
        return False
    return True


def write_perfetto_proto(
    res: SimResult,
    path: str | Path,
    *,
    window: tuple[int, int] | None = None,
    title: str = "cyclesim",
) -> int:
    """Write the native Perfetto protobuf (TrackEvent, 1 cycle = 1 ns); return the packet count.

    Raise TraceError if the `perfetto` package is not installed or the run was not traced.
    """
    try:
        from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
    except ImportError as exc:
        raise TraceError(
            "the protobuf trace needs the `perfetto` Python package; the JSON form needs nothing"
        ) from exc
    act = build_activity(res, window)
    trace = pb.Trace()
    seq = 0x5EC1

    def packet():
        p = trace.packet.add()
        p.trusted_packet_sequence_id = seq
        return p

    root = 1
    first = packet()
    first.sequence_flags = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
    d = first.track_descriptor
    d.uuid, d.name = root, title
    uuids = {}
    for tid, name in tracks(act):
        d = packet().track_descriptor
        d.uuid, d.parent_uuid, d.name = root + tid, root, name
        uuids[name] = root + tid
    counters = {}
    for i, buf in enumerate(act.buffers):
        d = packet().track_descriptor
        d.uuid, d.parent_uuid, d.name = 1000 + i, root, f"{buf.label} tiles"
        d.counter.SetInParent()
        counters[buf.label] = d.uuid
    for j, memory in enumerate(act.l1):
        d = packet().track_descriptor
        d.uuid, d.parent_uuid, d.name = 2000 + j, root, f"{memory} allocator bytes in use"
        d.counter.SetInParent()
        counters[f"{memory} allocator"] = d.uuid
    slices: list[tuple[int, int, int, str, dict]] = []  # (ts, order, track, name, fields)
    by_tid = {tid: uuids[name] for tid, name in tracks(act)}
    for e in trace_events(act, title):
        if e["ph"] == "X":
            track = by_tid[e["tid"]]
            slices.append((e["ts"], 1, track, e["name"], dict(type=pb.TrackEvent.TYPE_SLICE_BEGIN)))
            slices.append(
                (e["ts"] + e["dur"], 0, track, e["name"], dict(type=pb.TrackEvent.TYPE_SLICE_END))
            )
        elif e["ph"] == "i":
            slices.append(
                (e["ts"], 2, uuids["PE array"], e["name"], dict(type=pb.TrackEvent.TYPE_INSTANT))
            )
        elif e["ph"] == "C":
            label = e["name"].removesuffix(" occupancy")
            slices.append(
                (
                    e["ts"],
                    0,
                    counters[label],
                    "",
                    dict(
                        type=pb.TrackEvent.TYPE_COUNTER,
                        counter_value=e["args"].get("tiles", e["args"].get("bytes")),
                    ),
                )
            )
    for ts, _o, track, name, fields in sorted(slices, key=lambda s: (s[0], s[1], s[2])):
        p = packet()
        p.timestamp = ts
        te = p.track_event
        te.track_uuid = track
        te.type = fields["type"]
        if fields["type"] in (pb.TrackEvent.TYPE_SLICE_BEGIN, pb.TrackEvent.TYPE_INSTANT):
            te.name = name
        if "counter_value" in fields:
            te.counter_value = fields["counter_value"]
    with open(path, "wb") as f:
        f.write(trace.SerializeToString(deterministic=True))
    return len(trace.packet)
