"""Perfetto traces: Chrome Trace Event JSON (plain or gzipped) and the native protobuf.

One track (tid) for the PE array, whose slices cover every cycle of the window: `compute` or the
root cause of the non-compute cycles (args: phase, cause, where, chain); one per port for its
transfers and, on ports the PE array reads or writes, one for the PE array's use; one per DMA
channel; one per bank of a DRAM-modelled memory, named like its VCD scope (`DRAM ch0 bg1 bank2`:
`row N` while row N is open, `precharge`, `refresh`; nothing while idle); counters (ph C) for
buffer occupancy. Slices never overlap within a track. One cycle is one nanosecond on the UI's ruler: `ts` is in microseconds, written as an exact decimal
(cycles / 1000), never a float repr. No `displayTimeUnit`: Perfetto ignores it today, and older
trace processors took it as the unit of `ts`, which would have scaled every time by 1000.

The events are written track by track as they are generated (Perfetto sorts them on load), so
memory stays bounded by the Activity the run already holds.
"""

from __future__ import annotations

import contextlib
import gzip
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from cyclesim.errors import TraceError
from cyclesim.outputs import atomic_output
from cyclesim.results import Result
from cyclesim.results.activity import (
    BANK_ACTIVE,
    BANK_IDLE,
    COMPUTE,
    Activity,
    DramBank,
    gc_paused,
)
from cyclesim.results.record_columns import numbered
from cyclesim.views.progress import writing_bar

PID = 1
CHUNK = 1 << 14  # events between two separators without a line break


def _us(cycles: int) -> str:
    """Cycles as an exact decimal number of microseconds (1 cycle = 1 ns)."""
    whole, frac = divmod(int(cycles), 1000)
    return f"{whole}.{frac:03d}" if frac else str(whole)


def tracks(act: Activity) -> list[tuple[int, str]]:
    """(tid, name) of every track, in display order: PE array, ports (and the PE array's use), DMA."""
    out = [(1, "PE array")]
    tid = 10
    for memory in act.memories:
        for key in act.ports:
            if act.port_memory[key] == memory:
                out.append((tid, f"port {key}"))
                tid += 1
                if act.pe_ports.get(key):
                    out.append((tid, f"port {key} (PE array)"))
                    tid += 1
    for engine, channels in act.dma.items():
        for c in range(len(channels)):
            out.append((tid, f"DMA {engine} ch{c}"))
            tid += 1
    for memory, banks in act.dram_banks.items():
        for bank in banks:
            out.append((tid, bank_track(memory, bank, act.dram_ranks[memory])))
            tid += 1
    return out


def bank_track(memory: str, bank: DramBank, ranks: int) -> str:
    """'DRAM ch0 bg1 bank2' ('DRAM ch0 rank1 bg1 bank2' with several ranks): the memory's name
    once, then the bank as the VCD scopes it."""
    return " ".join((memory, *bank.path(ranks)))


def bank_slices(act: Activity) -> Iterator[tuple[int, str, int, int, str, int]]:
    """(tid, name, start, end, state, row) of every DRAM bank's non-idle stretch: `row N` while
    row N is open, `precharge`, `refresh`; bank by bank, each in time order."""
    tids = {name: tid for tid, name in tracks(act)}
    for memory, banks in act.dram_banks.items():
        ranks = act.dram_ranks[memory]
        for bank in banks:
            tid = tids[bank_track(memory, bank, ranks)]
            changes = list(bank.changes)
            ends = [t for t, _, _ in changes[1:]] + [act.end]
            for (t, state, row), end in zip(changes, ends, strict=True):
                if state != BANK_IDLE and end > t:
                    name = f"row {row}" if state == BANK_ACTIVE else state
                    yield tid, name, t, end, state, row


def _merge(bursts) -> list[tuple]:
    """Back-to-back grants of one holder and tensor as one slice: (start, end, tensor, by, bits, grants)."""
    starts, ends, tensors, tensor_pool, bys, by_pool, bits, counts = _merged_columns(bursts)
    return list(
        zip(
            starts.tolist(),
            ends.tolist(),
            [tensor_pool[i] for i in tensors.tolist()],
            [by_pool[i] for i in bys.tolist()],
            bits.tolist(),
            counts.tolist(),
            strict=True,
        )
    )


def _merged_columns(bursts) -> tuple:
    """_merge by column, found by numpy: starts, ends, tensors (numbers into a pool of them),
    the tensor pool, holders and their pool, bits, grants. A record continues the slice before
    when it starts at its end with the same tensor and holder."""
    n = len(bursts)
    starts, ends = np.array(bursts.starts, np.int64), np.array(bursts.ends, np.int64)
    tensors, tensor_pool = numbered(bursts.tensors)
    whos, who_pool = numbered(bursts.whos)
    heads = np.ones(n, dtype=bool)
    heads[1:] = (starts[1:] != ends[:-1]) | (tensors[1:] != tensors[:-1]) | (whos[1:] != whos[:-1])
    heads = np.flatnonzero(heads)
    lasts = np.append(heads[1:], n) - 1 if n else heads
    bits = np.array(bursts.bits, np.int64)
    return (
        starts[heads],
        ends[lasts],
        tensors[heads],
        tensor_pool,
        whos[heads],
        who_pool,
        np.add.reduceat(bits, heads) if n else bits,
        lasts - heads + 1,
    )


def trace_events(act: Activity, title: str = "cyclesim") -> Iterator[dict]:
    """Every event as a dict (ts and dur in cycles), track by track, each track in time order."""
    tids = {name: tid for tid, name in tracks(act)}
    yield dict(name="process_name", ph="M", pid=PID, tid=0, args=dict(name=title))
    for tid, name in tracks(act):
        yield dict(name="thread_name", ph="M", pid=PID, tid=tid, args=dict(name=name))
        yield dict(name="thread_sort_index", ph="M", pid=PID, tid=tid, args=dict(sort_index=tid))
    for s in act.pe_states:
        if s.state == COMPUTE:
            yield _slice(s.einsum, "compute", s.start, s.end, 1, dict(phase=s.phase, tile=s.tile))
        else:
            args = dict(phase=s.phase, cause=s.state, where=s.where)
            if s.tile is not None:
                args["tile"] = s.tile
            yield _slice(s.state, "stall", s.start, s.end, 1, args)
    for key, bursts in act.ports.items():
        tid = tids[f"port {key}"]
        for b in _merge(bursts):
            yield _slice(b[2], "port", b[0], b[1], tid, dict(by=b[3], bits=b[4], grants=b[5]))
        pe = act.pe_ports.get(key)
        if pe:
            tid = tids[f"port {key} (PE array)"]
            for b in _merge(pe):
                args = dict(by=b[3], bits=b[4], segments=b[5])
                yield _slice(f"{b[2]} (PE array)", "pe_port", b[0], b[1], tid, args)
    for engine, channels in act.dma.items():
        for c, transfers in enumerate(channels):
            tid = tids[f"DMA {engine} ch{c}"]
            for b in transfers:
                args = dict(node=b.who, bits=b.bits)
                yield _slice(f"{b.tensor} {b.kind}", "dma", b.start, b.end, tid, args)
    for tid, name, start, end, state, row in bank_slices(act):
        args = dict(state=state, row=row) if state == BANK_ACTIVE else dict(state=state)
        yield _slice(name, "dram", start, end, tid, args)
    for buf in act.buffers:
        name = f"{buf.label} occupancy"
        for t, n in zip(buf.times, buf.counts, strict=True):
            yield dict(name=name, cat="buffer", ph="C", ts=t, pid=PID, tid=0,
                       args=dict(tiles=n, bits=n * buf.tile_bits))  # fmt: skip
    for memory, series in act.l1.items():  # L1 allocator: bytes in use
        for t, used in series:
            yield dict(name=f"{memory} allocator occupancy", cat="l1", ph="C", ts=t, pid=PID,
                       tid=0, args=dict(bytes=used))  # fmt: skip


def _slice(name: str, cat: str, start: int, end: int, tid: int, args: dict) -> dict:
    """A complete event (ph X) on one track of the one process."""
    return dict(name=name, cat=cat, ph="X", ts=start, dur=end - start, pid=PID, tid=tid, args=args)


_ENCODE = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode


def _dump(e: dict, names: dict[str, str]) -> str:
    """One event as JSON with ts/dur as exact decimal microseconds (names: encoded strings)."""
    parts = []
    for k, v in e.items():
        if k in ("ts", "dur"):
            parts.append(f'"{k}":{_us(v)}')
        elif isinstance(v, str):
            text = names.get(v)
            if text is None:
                text = names[v] = _ENCODE(v)
            parts.append(f'"{k}":{text}')
        else:
            parts.append(f'"{k}":{_ENCODE(v)}')
    return "{" + ",".join(parts) + "}"


@contextlib.contextmanager
def _gzipped(path: Path) -> Iterator[gzip.GzipFile]:
    """A gzip stream to `path` whose header holds neither a time stamp nor a file name (the name
    would be the temporary one, with a pid in it): the same trace gives the same bytes."""
    with open(path, "wb") as raw, gzip.GzipFile("", "wb", 5, raw, mtime=0) as f:
        yield f


@atomic_output
def write_chrome_json(
    res: Result,
    path: str | Path,
    *,
    window: tuple[int, int] | None = None,
    title: str = "cyclesim",
    progress: bool | None = False,
) -> int:
    """Write the Trace Event JSON of a traced run, gzipped when path ends in .gz; return the events.

    Raise TraceError if the run was not traced or the window is empty.
    """
    act = res.activity(window)
    other = dict(
        time_unit="1 cycle = 1 ns on the ruler (ts in microseconds = cycles / 1000)",
        window_cycles=[act.start, act.end],
        cycles=act.cycles,
        reuse=res.reuse,
        isolate_einsums=res.isolate_einsums,
    )
    path = Path(path)
    # bytes: the JSON is ASCII (strings are escaped), written as numpy made it
    opener = (lambda: _gzipped(path)) if path.suffix == ".gz" else (lambda: open(path, "wb"))
    count = 0
    with opener() as f, gc_paused(), writing_bar(_total(act), f"Perfetto {path.name}", progress) as bar:  # fmt: skip
        f.write(b'{"otherData":')
        f.write(json.dumps(other, sort_keys=True, separators=(",", ":")).encode())
        f.write(b',"traceEvents":[\n')
        # events are separated by ",\n", but by "," alone after every CHUNK-th (the form this
        # writer always had, when it wrote CHUNK events at a time)
        held = b""  # the text written last, held back: its final separator is dropped
        for part in _json_parts(act, title):
            if not len(part):
                continue
            f.write(held)
            after = np.arange(count + 1, count + len(part) + 1)  # each event's number
            seps = np.where(after % CHUNK == 0, 1, 2)
            if isinstance(part, list):
                held = "".join(line + ",\n"[:k] for line, k in zip(part, seps.tolist(), strict=True)).encode()  # fmt: skip
            else:
                held = part.render(",\n", seps)
            count += len(part)
            if bar is not None:
                bar.update(len(part))
        f.write(held[: -int(seps[-1])] if count else b"")
        f.write(b"\n]}\n")
    return count


def _json_lines(act: Activity, title: str) -> Iterator[str]:
    """trace_events(act, title) as JSON text, one event per string, formatted by hand.

    The same events, keys and order as _dump(trace_events(...)) (a test holds them equal), at a
    fraction of the cost: the bulk of a trace is a few kinds of event with fixed keys.
    """
    for part in _json_parts(act, title):
        if isinstance(part, list):
            yield from part
        elif len(part):
            yield from part.render("\n", 1)[:-1].decode("ascii").split("\n")


def _json_parts(act: Activity, title: str) -> Iterator[list[str] | _Lines]:
    """The events' JSON in order, in parts: lists of lines, and the bulk (PE array, ports,
    buffer counters) as _Lines made by numpy."""
    names: dict[str, str] = {}

    def enc(text: str) -> str:
        out = names.get(text)
        if out is None:
            out = names[text] = _ENCODE(text)
        return out

    def x(name: str, cat: str, a: int, b: int, tid: int, args: str) -> str:
        return (f'{{"name":{enc(name)},"cat":"{cat}","ph":"X","ts":{_us(a)},"dur":{_us(b - a)},'
                f'"pid":{PID},"tid":{tid},"args":{{{args}}}}}')  # fmt: skip

    meta = []
    for e in trace_events(act, title):  # the metadata first, through the generic encoder
        meta.append(_dump(e, names))
        if e["ph"] != "M":
            raise AssertionError("metadata events come first")
        if e["name"] == "thread_sort_index" and e["tid"] == tracks(act)[-1][0]:
            break
    yield meta
    tids = {name: tid for tid, name in tracks(act)}
    yield _pe_state_lines(act.pe_states, enc)
    for key, bursts in act.ports.items():
        yield _slice_lines(bursts, "port", tids[f"port {key}"], enc, "grants", "")
        pe = act.pe_ports.get(key)
        if pe:
            tid = tids[f"port {key} (PE array)"]
            yield _slice_lines(pe, "pe_port", tid, enc, "segments", " (PE array)")
    lines = []
    for engine, channels in act.dma.items():
        for c, transfers in enumerate(channels):
            tid = tids[f"DMA {engine} ch{c}"]
            for b in transfers:
                if b.end > b.start:
                    args = f'"bits":{b.bits},"node":{enc(b.who)}'
                    lines.append(x(f"{b.tensor} {b.kind}", "dma", b.start, b.end, tid, args))
    for tid, name, start, end, state, row in bank_slices(act):
        args = f'"row":{row},"state":"{state}"' if state == BANK_ACTIVE else f'"state":"{state}"'
        lines.append(x(name, "dram", start, end, tid, args))
    yield lines
    for buf in act.buffers:
        counts = np.array(buf.counts, dtype=np.int64)
        yield (
            _Lines(len(counts))
            .text(f'{{"name":{enc(f"{buf.label} occupancy")},"cat":"buffer","ph":"C","ts":')
            .micros(np.array(buf.times, dtype=np.int64))
            .text(f',"pid":{PID},"tid":0,"args":{{"bits":')
            .number(counts * buf.tile_bits)
            .text(',"tiles":')
            .number(counts)
            .text("}}")
        )
    lines = []
    for memory, series in act.l1.items():
        head = f'{{"name":{enc(f"{memory} allocator occupancy")},"cat":"l1","ph":"C","ts":'
        for t, used in series:
            lines.append(f'{head}{_us(t)},"pid":{PID},"tid":0,"args":{{"bytes":{used}}}}}')
    yield lines


def _pe_state_lines(st, enc) -> _Lines:
    """The PE array's slices: compute (name: the Einsum; phase, tile) or a stall (name: its
    cause; cause, phase, tile when in a segment, where), empty ones left out."""
    starts, ends = np.array(st.starts, np.int64), np.array(st.ends, np.int64)
    shown = np.flatnonzero(ends > starts)
    states, state_pool = numbered(st.states)
    compute = np.array([s == COMPUTE for s in state_pool], dtype=bool)[states[shown]]
    stall = ~compute
    einsums, einsum_pool = numbered(st.einsums)
    wheres, where_pool = numbered(st.wheres)
    phases, phase_pool = numbered(st.phases)
    tiles = np.array([-1 if t is None else t for t in st.tiles], dtype=np.int64)[shown]
    if (tiles[compute] < 0).any():
        raise TraceError("a compute slice of the PE array without its tile")
    return (
        _Lines(len(shown))
        .text('{"name":')
        .strings(einsums[shown], [enc(e) for e in einsum_pool], compute)
        .strings(states[shown], [enc(s) for s in state_pool], stall)
        .text(',"cat":"compute"', compute)
        .text(',"cat":"stall"', stall)
        .text(',"ph":"X","ts":')
        .micros(starts[shown])
        .text(',"dur":')
        .micros(ends[shown] - starts[shown])
        .text(f',"pid":{PID},"tid":1,"args":{{')
        .text('"cause":"', stall)
        .strings(states[shown], [str(s) for s in state_pool], stall)
        .text('",', stall)
        .text('"phase":"')
        .strings(phases[shown], [str(p) for p in phase_pool])
        .text('"')
        .text(',"tile":', tiles >= 0)
        .number(np.maximum(tiles, 0), tiles >= 0)
        .text(',"where":', stall)
        .strings(wheres[shown], [enc(w) for w in where_pool], stall)
        .text("}}")
    )


def _slice_lines(track, cat: str, tid: int, enc, count: str, suffix: str) -> _Lines:
    """A port track's slices (_merged_columns: back-to-back grants of one holder and tensor as
    one), empty ones left out."""
    starts, ends, tensors, tensor_pool, bys, by_pool, bits, counts = _merged_columns(track)
    shown = np.flatnonzero(ends > starts)
    return (
        _Lines(len(shown))
        .text('{"name":')
        .strings(tensors[shown], [enc(f"{t}{suffix}") for t in tensor_pool])
        .text(f',"cat":"{cat}","ph":"X","ts":')
        .micros(starts[shown])
        .text(',"dur":')
        .micros(ends[shown] - starts[shown])
        .text(f',"pid":{PID},"tid":{tid},"args":{{"bits":')
        .number(bits[shown])
        .text(',"by":')
        .strings(bys[shown], [enc(b) for b in by_pool])
        .text(f',"{count}":')
        .number(counts[shown])
        .text("}}")
    )


class _Lines:
    """Lines of ASCII text made by numpy column by column, not per line in Python: each field
    is a byte matrix (a row per line, or one row for every line) of which each line takes its
    first `lens` bytes (0: the field is left out of that line)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.fields: list[tuple[np.ndarray, np.ndarray | int]] = []

    def __len__(self) -> int:
        return self.n

    def text(self, text: str, when: np.ndarray | None = None) -> _Lines:
        """The same text on every line (where `when`)."""
        row = np.frombuffer(text.encode("ascii"), dtype=np.uint8)[None, :]
        self.fields.append((row, len(text) if when is None else np.where(when, len(text), 0)))
        return self

    def number(self, values: np.ndarray, when: np.ndarray | None = None) -> _Lines:
        """Non-negative integers in decimal."""
        values = np.asarray(values, dtype=np.int64)
        digits = np.ones(len(values), dtype=np.int64)
        for k in range(1, 19):
            more = values >= 10**k
            if not more.any():
                break
            digits += more
        width = int(digits.max()) if len(values) else 1
        exponent = digits[:, None] - 1 - np.arange(width)[None, :]
        matrix = (values[:, None] // 10 ** np.clip(exponent, 0, None) % 10 + 48).astype(np.uint8)
        self.fields.append((matrix, digits if when is None else np.where(when, digits, 0)))
        return self

    def micros(self, cycles: np.ndarray) -> _Lines:
        """Cycles as _us writes them: whole microseconds, then .ddd when there is a remainder."""
        whole, frac = np.divmod(np.asarray(cycles, dtype=np.int64), 1000)
        self.number(whole)
        part = np.empty((len(frac), 4), dtype=np.uint8)
        part[:, 0] = ord(".")
        part[:, 1], part[:, 2], part[:, 3] = frac // 100 + 48, frac // 10 % 10 + 48, frac % 10 + 48
        self.fields.append((part, np.where(frac > 0, 4, 0)))
        return self

    def strings(self, codes: np.ndarray, pool: list[str], when: np.ndarray | None = None) -> _Lines:
        """pool[codes[i]] on line i (ASCII)."""
        lens = np.array([len(s) for s in pool], dtype=np.int64)
        matrix = np.zeros((len(pool), max(int(lens.max()) if len(pool) else 1, 1)), dtype=np.uint8)
        for i, s in enumerate(pool):  # a few distinct strings
            matrix[i, : lens[i]] = np.frombuffer(s.encode("ascii"), dtype=np.uint8)
        took = lens[codes]
        self.fields.append((matrix[codes], took if when is None else np.where(when, took, 0)))
        return self

    def render(self, separator: str, seps: np.ndarray | int) -> bytes:
        """The lines, each followed by the first seps[i] characters of separator."""
        self.text(separator)
        self.fields[-1] = (self.fields[-1][0], seps)
        widths = [m.shape[1] for m, _ in self.fields]
        out = []
        for lo in range(0, self.n, 1 << 15):  # a block of lines at a time: bounded memory
            hi = min(lo + (1 << 15), self.n)
            block = np.empty((hi - lo, sum(widths)), dtype=np.uint8)
            keep = np.empty(block.shape, dtype=bool)
            at = 0
            for (m, lens), w in zip(self.fields, widths, strict=True):
                block[:, at : at + w] = m if m.shape[0] == 1 else m[lo:hi]
                lens = lens if np.isscalar(lens) else np.asarray(lens)[lo:hi, None]
                keep[:, at : at + w] = np.arange(w)[None, :] < lens
                at += w
            out.append(block[keep].tobytes())
        self.fields.pop()
        return b"".join(out)


def _total(act: Activity) -> int:
    """About how many events a trace of act has (for the progress bar)."""
    return (
        len(act.pe_states)
        + sum(len(b) for b in act.ports.values())
        + sum(len(b) for b in act.pe_ports.values())
        + sum(len(tr) for ch in act.dma.values() for tr in ch)
        + sum(len(b.times) for b in act.buffers)
        + sum(len(b.times) for banks in act.dram_banks.values() for b in banks)
    )


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
    with open(path, "wb") as f, gc_paused(), writing_bar(_total(act), f"Perfetto {Path(path).name}", progress) as bar:  # fmt: skip

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
