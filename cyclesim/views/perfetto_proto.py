"""Perfetto's native protobuf (TrackEvent), written from the shared event model.

Needs the `perfetto` Python package (perfetto_available says whether it is importable).
"""

from __future__ import annotations

from pathlib import Path

from cyclesim.errors import TraceError
from cyclesim.outputs import atomic_output
from cyclesim.results import Result
from cyclesim.results.activity import gc_paused
from cyclesim.views.perfetto import total_events, trace_events, tracks
from cyclesim.views.progress import writing_bar


def perfetto_available() -> bool:
    """Is the `perfetto` Python package (for the protobuf form) importable?"""
    try:
        import perfetto.protos.perfetto.trace.perfetto_trace_pb2  # noqa: F401
    except ImportError:
        return False
    return True


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


@atomic_output
def write_perfetto_proto(
    res: Result,
    path: str | Path,
    *,
    window: tuple[int, int] | None = None,
    title: str = "cyclesim",
    progress: bool | None = False,
) -> int:
    """Write the native Perfetto protobuf (TrackEvent, 1 cycle = 1 ns); return the packet count.

    Slices keep their arguments as debug annotations; names and string values are interned.
    Packets are serialised one by one and appended (a Trace is a repeated field 1 of
    TracePacket), so the file streams.
    Raise TraceError if the `perfetto` package is not installed or the run was not traced.

    Over 80 lines: one streaming pass writing packets in order (track descriptors, then each
    track's events) with one sequence state and count, both carried by its locals.
    """
    try:
        from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
    except ImportError as exc:
        raise TraceError(
            "the protobuf trace needs the `perfetto` Python package; the JSON form needs nothing"
        ) from exc
    act = res.activity(window)
    seq, root = 0x5EC1, 1
    count = 0
    with open(path, "wb") as f, gc_paused(), writing_bar(total_events(act), f"Perfetto {Path(path).name}", progress) as bar:  # fmt: skip

        def put(p) -> None:
            nonlocal count
            p.trusted_packet_sequence_id = seq
            data = p.SerializeToString(deterministic=True)
            f.write(b"\x0a" + _varint(len(data)) + data)
            count += 1
            if bar is not None and count % 4096 == 0:
                bar.update(4096)

        first = pb.TracePacket()
        first.sequence_flags = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
        first.track_descriptor.uuid, first.track_descriptor.name = root, title
        put(first)
        uuids = {}
        for tid, name in tracks(act):
            p = pb.TracePacket()
            d = p.track_descriptor
            d.uuid, d.parent_uuid, d.name = root + tid, root, name
            uuids[tid] = d.uuid
            put(p)
        counters: dict[str, int] = {}
        for i, name in enumerate(
            [f"{b.label} occupancy" for b in act.buffers]
            + [f"{m} allocator occupancy" for m in act.l1]
        ):
            p = pb.TracePacket()
            d = p.track_descriptor
            d.uuid, d.parent_uuid, d.name = 100000 + i, root, name
            d.counter.SetInParent()
            counters[name] = d.uuid
            put(p)
        # names, categories, argument names and string values are interned: each is sent once
        # (interned_data) and referred to by number, which keeps repeated slices small
        tables: dict[str, dict[str, int]] = {}

        def iid(p, table: str, text: str) -> int:
            known = tables.setdefault(table, {})
            n = known.get(text)
            if n is None:
                n = known[text] = len(known) + 1
                entry = getattr(p.interned_data, table).add()
                entry.iid = n
                if (
                    table == "event_categories"
                    or table == "event_names"
                    or table == "debug_annotation_names"
                ):
                    entry.name = text
                else:
                    entry.str = text.encode()
            return n

        needs_state = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
        for e in trace_events(act, title):
            if e["ph"] == "X" and e["dur"] > 0:
                p = pb.TracePacket()
                p.sequence_flags = needs_state
                p.timestamp = e["ts"]
                te = p.track_event
                te.track_uuid, te.type = uuids[e["tid"]], pb.TrackEvent.TYPE_SLICE_BEGIN
                te.name_iid = iid(p, "event_names", e["name"])
                te.category_iids.append(iid(p, "event_categories", e["cat"]))
                for k, v in e["args"].items():
                    a = te.debug_annotations.add()
                    a.name_iid = iid(p, "debug_annotation_names", k)
                    if isinstance(v, int):
                        a.int_value = v
                    else:
                        a.string_value_iid = iid(p, "debug_annotation_string_values", str(v))
                put(p)
                p = pb.TracePacket()
                p.timestamp = e["ts"] + e["dur"]
                p.track_event.track_uuid = uuids[e["tid"]]
                p.track_event.type = pb.TrackEvent.TYPE_SLICE_END
                put(p)
            elif e["ph"] == "C":
                p = pb.TracePacket()
                p.timestamp = e["ts"]
                te = p.track_event
                te.track_uuid, te.type = counters[e["name"]], pb.TrackEvent.TYPE_COUNTER
                te.counter_value = e["args"].get("tiles", e["args"].get("bytes"))
                put(p)
    return count
