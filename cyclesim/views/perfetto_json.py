"""Perfetto's Chrome Trace Event JSON (plain or gzipped), written from the shared event model.

One cycle is one nanosecond on the UI's ruler: `ts` is in microseconds, written as an exact decimal
(cycles / 1000), never a float repr. No `displayTimeUnit`: Perfetto ignores it today, and older
trace processors took it as the unit of `ts`, which would have scaled every time by 1000.
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
from cyclesim.results.activity import BANK_ACTIVE, BANK_IDLE, COMPUTE, Activity, gc_paused
from cyclesim.results.record_columns import numbered
from cyclesim.views.perfetto import (
    PID,
    bank_track,
    merged_columns,
    total_events,
    trace_events,
    tracks,
)
from cyclesim.views.progress import writing_bar
from cyclesim.views.text_lines import TextLines

CHUNK = 1 << 14  # events between two separators without a line break


def _us(cycles: int) -> str:
    """Cycles as an exact decimal number of microseconds (1 cycle = 1 ns)."""
    whole, frac = divmod(int(cycles), 1000)
    return f"{whole}.{frac:03d}" if frac else str(whole)


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
def gzipped(path: Path) -> Iterator[gzip.GzipFile]:
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
    opener = (lambda: gzipped(path)) if path.suffix == ".gz" else (lambda: open(path, "wb"))
    count = 0
    with opener() as f, gc_paused(), writing_bar(total_events(act), f"Perfetto {path.name}", progress) as bar:  # fmt: skip
        f.write(b'{"otherData":')
        f.write(json.dumps(other, sort_keys=True, separators=(",", ":")).encode())
        f.write(b',"traceEvents":[\n')
        # events are separated by ",\n", but by "," alone after every CHUNK-th (the form this
        # writer always had, when it wrote CHUNK events at a time)
        held = b""  # the text made last, held back: its final separator is dropped
        for part in _json_parts(act, title):
            if not len(part):
                continue
            after = np.arange(count + 1, count + len(part) + 1)  # each event's number
            seps = np.where(after % CHUNK == 0, 1, 2)
            if isinstance(part, list):
                texts = ["".join(line + ",\n"[:k] for line, k in zip(part, seps.tolist(), strict=True)).encode()]  # fmt: skip
            else:
                texts = part.render(",\n", seps)
            for text in texts:
                f.write(held)
                held = text
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
            yield from b"".join(part.render("\n", 1))[:-1].decode("ascii").split("\n")


def _json_parts(act: Activity, title: str) -> Iterator[list[str] | TextLines]:
    """The events' JSON in order, in parts: the metadata as a list of lines, then the slices
    and counters of each track as TextLines made by numpy."""
    names: dict[str, str] = {}

    def enc(text: str) -> str:
        out = names.get(text)
        if out is None:
            out = names[text] = _ENCODE(text)
        return out

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
    for engine, channels in act.dma.items():
        for c, transfers in enumerate(channels):
            yield _dma_lines(transfers, tids[f"DMA {engine} ch{c}"], enc)
    yield from _bank_lines(act, tids, enc)
    for buf in act.buffers:
        counts = np.array(buf.counts, dtype=np.int64)
        yield (
            TextLines(len(counts))
            .text(f'{{"name":{enc(f"{buf.label} occupancy")},"cat":"buffer","ph":"C","ts":')
            .micros(np.array(buf.times, dtype=np.int64))
            .text(f',"pid":{PID},"tid":0,"args":{{"bits":')
            .number(counts * buf.tile_bits)
            .text(',"tiles":')
            .number(counts)
            .text("}}")
        )
    for memory, series in act.l1.items():  # (cycle, bytes in use) pairs
        times, used = np.array(series, dtype=np.int64).reshape(-1, 2).T
        yield (
            TextLines(len(times))
            .text(f'{{"name":{enc(f"{memory} allocator occupancy")},"cat":"l1","ph":"C","ts":')
            .micros(times)
            .text(f',"pid":{PID},"tid":0,"args":{{"bytes":')
            .number(used)
            .text("}}")
        )


def _dma_lines(transfers: list, tid: int, enc) -> TextLines:
    """A DMA channel's transfers (name: tensor and kind; bits, node), empty ones left out."""
    if not transfers:
        return TextLines(0)
    starts, ends, tensors, whos, bits, kinds = zip(*transfers, strict=True)
    starts, ends, bits = (np.array(c, dtype=np.int64) for c in (starts, ends, bits))
    shown = np.flatnonzero(ends > starts)
    tensors, tensor_pool = numbered(tensors)
    kinds, kind_pool = numbered(kinds)
    nodes, node_pool = numbered(whos)
    names = tensors * len(kind_pool) + kinds  # the (tensor, kind) pair: its entry in the pool below
    return (
        TextLines(len(shown))
        .text('{"name":')
        .strings(names[shown], [enc(f"{t} {k}") for t in tensor_pool for k in kind_pool])
        .text(',"cat":"dma"')
        .slice_times(starts[shown], ends[shown], PID, tid)
        .text('"bits":')
        .number(bits[shown])
        .text(',"node":')
        .strings(nodes[shown], [enc(w) for w in node_pool])
        .text("}}")
    )


def _bank_lines(act: Activity, tids: dict[str, int], enc) -> Iterator[TextLines]:
    """Each DRAM bank's non-idle stretches, as bank_slices gives them (name: `row N` while
    row N is open, else the state; args: row when open, state), a TextLines per bank."""
    for memory, banks in act.dram_banks.items():
        for bank in banks:
            track = bank_track(memory, bank, act.dram_ranks[memory])
            times = np.array(bank.times, dtype=np.int64)
            ends = np.append(times[1:], act.end)[: len(times)]
            states, pool = numbered(bank.states)
            busy = np.array([s != BANK_IDLE for s in pool], dtype=bool)[states]
            shown = np.flatnonzero(busy & (ends > times))
            states = states[shown]
            active = np.array([s == BANK_ACTIVE for s in pool], dtype=bool)[states]
            rows = np.array(bank.rows, dtype=np.int64)[shown]
            if (rows[active] < 0).any():
                raise TraceError(f"{track}: active without an open row")
            rows = np.maximum(rows, 0)
            yield (
                TextLines(len(shown))
                .text('{"name":')
                .strings(states, ['"row ' if s == BANK_ACTIVE else enc(s) for s in pool])
                .number(rows, active)
                .text('"', active)
                .text(',"cat":"dram"')
                .slice_times(times[shown], ends[shown], PID, tids[track])
                .text('"row":', active)
                .number(rows, active)
                .text(",", active)
                .strings(states, [f'"state":"{s}"' for s in pool])
                .text("}}")
            )


def _pe_state_lines(st, enc) -> TextLines:
    """The PE array's slices: compute (name: the Einsum; phase, tile) or a stall (name: its
    cause; cause, phase, tile when in a segment, where), empty ones left out."""
    starts, ends = np.array(st.starts, np.int64), np.array(st.ends, np.int64)
    shown = np.flatnonzero(ends > starts)
    states, state_pool = st.numbered("states")
    compute = np.array([s == COMPUTE for s in state_pool], dtype=bool)[states[shown]]
    stall = ~compute
    einsums, einsum_pool = st.numbered("einsums")
    wheres, where_pool = st.numbered("wheres")
    phases, phase_pool = st.numbered("phases")
    tiles = np.array([-1 if t is None else t for t in st.tiles], dtype=np.int64)[shown]
    if (tiles[compute] < 0).any():
        raise TraceError("a compute slice of the PE array without its tile")
    states = states[shown]
    # a field per key, a pool entry per text it may hold (a stall's keys: text left out when
    # computing), so that numpy copies one field where a text and a string would be two
    names = np.where(compute, einsums[shown], len(einsum_pool) + states)
    return (
        TextLines(len(shown))
        .text('{"name":')
        .strings(names, [enc(e) for e in einsum_pool] + [enc(s) for s in state_pool])
        .strings(compute.astype(np.intp), [',"cat":"stall"', ',"cat":"compute"'])
        .slice_times(starts[shown], ends[shown], PID, 1)
        .strings(states, [f'"cause":"{s}",' for s in state_pool], stall)
        .text('"phase":"')
        .strings(phases[shown], [str(p) for p in phase_pool])
        .text('"')
        .text(',"tile":', tiles >= 0)
        .number(np.maximum(tiles, 0), tiles >= 0)
        .strings(wheres[shown], [f',"where":{enc(w)}' for w in where_pool], stall)
        .text("}}")
    )


def _slice_lines(track, cat: str, tid: int, enc, count: str, suffix: str) -> TextLines:
    """A port track's slices (merged_columns: back-to-back grants of one holder and tensor as
    one), empty ones left out."""
    starts, ends, tensors, tensor_pool, bys, by_pool, bits, counts = merged_columns(track)
    shown = np.flatnonzero(ends > starts)
    return (
        TextLines(len(shown))
        .text('{"name":')
        .strings(tensors[shown], [enc(f"{t}{suffix}") for t in tensor_pool])
        .text(f',"cat":"{cat}"')
        .slice_times(starts[shown], ends[shown], PID, tid)
        .text('"bits":')
        .number(bits[shown])
        .text(',"by":')
        .strings(bys[shown], [enc(b) for b in by_pool])
        .text(f',"{count}":')
        .number(counts[shown])
        .text("}}")
    )
