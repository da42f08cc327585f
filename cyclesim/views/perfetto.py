"""Perfetto's event model, shared by its two writers (perfetto_json, perfetto_proto).

One track (tid) for the PE array, whose slices cover every cycle of the window: `compute` or the
root cause of the non-compute cycles (args: phase, cause, where, chain); one per port for its
transfers and, on ports the PE array reads or writes, one for the PE array's use; one per DMA
channel; one per bank of a DRAM-modelled memory, named like its VCD scope (`DRAM ch0 bg1 bank2`:
`row N` while row N is open, `precharge`, `refresh`; nothing while idle); counters (ph C) for
buffer occupancy. Slices never overlap within a track.

The events are written track by track as they are generated (Perfetto sorts them on load), so
memory stays bounded by the Activity the run already holds.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from cyclesim.results.activity import BANK_ACTIVE, BANK_IDLE, COMPUTE, Activity, DramBank

PID = 1


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
    starts, ends, tensors, tensor_pool, bys, by_pool, bits, counts = merged_columns(bursts)
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


def merged_columns(bursts) -> tuple:
    """_merge by column, found by numpy: starts, ends, tensors (numbers into a pool of them),
    the tensor pool, holders and their pool, bits, grants. A record continues the slice before
    when it starts at its end with the same tensor and holder."""
    n = len(bursts)
    starts, ends = np.array(bursts.starts, np.int64), np.array(bursts.ends, np.int64)
    tensors, tensor_pool = bursts.numbered("tensors")
    whos, who_pool = bursts.numbered("whos")
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


def total_events(act: Activity) -> int:
    """About how many events a trace of act has (for the progress bar)."""
    return (
        len(act.pe_states)
        + sum(len(b) for b in act.ports.values())
        + sum(len(b) for b in act.pe_ports.values())
        + sum(len(tr) for ch in act.dma.values() for tr in ch)
        + sum(len(b.times) for b in act.buffers)
        + sum(len(b.times) for banks in act.dram_banks.values() for b in banks)
    )
