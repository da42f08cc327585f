"""Fast-forward's record copies: a period's records appended K more times, shifted.

Timelines, grants, PE waits and the trace repeat the period between two equal snapshots,
times moved by whole periods and tiles and segments by the tiles and segments per period.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain, islice, repeat
from operator import add, mul
from typing import TYPE_CHECKING

from cyclesim.engine.record import S_SLOT, S_USES

if TYPE_CHECKING:
    from cyclesim.engine.fastforward_snapshot import Snapshot


def replicate(r, a: Snapshot, b: Snapshot, K: int, tile_shift: tuple, step: int) -> None:
    """Append the records of the period from a to b K more times, shifted by whole periods:
    times by P, each node's tiles by tile_shift, PE segments by step (the replay runs with
    the cyclic garbage collector paused: engine/loop.py)."""
    rec, fabric = r.rec, r.fabric
    ma, mb = a.marks, b.marks
    P = b.time - a.time
    dt = K * P
    for tls, name in ((rec.fill_tl, "fill_tl"), (rec.drain_tl, "drain_tl")):
        for node, tl in enumerate(tls):
            part = tl[ma[name][node] : mb[name][node]]
            if part:
                d = tile_shift[node]
                per = [d if state in (S_SLOT, S_USES) else 0 for _, state, _ in part]
                tl += _copies(part, K, {0: P}, {2: per} if d else None)
    for key, grants in rec.grants.items():
        n0, n1 = ma["grants"][key], mb["grants"][key]
        live = None
        if fabric.holder[key] is not None:  # held at a too (same state): its grant is open
            live = grants.pop()  # ... and the one open at a is the period's first
            n0, n1 = n0 - 1, n1 - 1
        if n1 > n0:
            grants += _copies(grants[n0:n1], K, {0: P, 1: P})  # closed: tuples
        if live is not None:
            live[0] += dt
            grants.append(live)
    lists = ma["lists"], mb["lists"]
    part = rec.pe_waits[lists[0]["pe_waits"] : lists[1]["pe_waits"]]
    if part:
        per = [tile_shift[w[2]] for w in part]
        rec.pe_waits += _copies(part, K, {0: P, 1: P}, {4: per})
    if rec.pe_segments is not None:
        part = rec.pe_segments[lists[0]["pe_segments"] : lists[1]["pe_segments"]]
        if part:
            rec.pe_segments += _copies(part, K, {0: P, 1: P, 3: step})
    if rec.transfers is not None:
        part = rec.transfers[lists[0]["transfers"] : lists[1]["transfers"]]
        if part:
            per = [tile_shift[x[2]] for x in part]
            rec.transfers += _copies(part, K, {0: P, 1: P}, {4: per})
    if rec.occupancy is not None:
        part = rec.occupancy[lists[0]["occupancy"] : lists[1]["occupancy"]]
        if part:
            rec.occupancy += _copies(part, K, {0: P})
    if rec.systolic_spans is not None:  # (start, end, leaf, 'fill' | 'drain') per fold
        part = rec.systolic_spans[lists[0]["systolic_spans"] : lists[1]["systolic_spans"]]
        if part:
            rec.systolic_spans += _copies(part, K, {0: P, 1: P})
    # who finished each tile last: tiles done in the period repeat K times; the ones in use
    # now are in use K periods later
    lf = rec.last_finisher
    new = mb["finishers"] - ma["finishers"]
    keys = list(islice(reversed(lf), new)) if new else []
    done = set(keys)
    for node, in_use in enumerate(ma["in_use"]):
        done.update((node, k) for k in in_use)
    in_use_now = {(node, k) for node, s in enumerate(mb["in_use"]) for k in s}
    by_node: dict[int, tuple[list, list]] = {}  # node -> its tiles done, who finished each
    for node, k in done - in_use_now:
        who = lf.get((node, k)) if tile_shift[node] else None
        if who is not None:
            tiles, whos = by_node.setdefault(node, ([], []))
            tiles.append(k)
            whos.append(who)
    copies = {}
    for node, (tiles, whos) in by_node.items():
        d = tile_shift[node]
        if K <= len(tiles):  # many tiles, few periods: one period at a time
            for j in range(1, K + 1):
                copies.update(
                    zip(zip(repeat(node), map(add, tiles, repeat(j * d))), whos, strict=True)
                )
        else:  # a few tiles over many periods: one tile at a time
            for k, who in zip(tiles, whos, strict=True):
                later = range(k + d, k + K * d + 1, d)
                copies.update(zip(zip(repeat(node), later), repeat(who)))
    for node, k in in_use_now:
        d = tile_shift[node]
        if d and (node, k) in lf:
            copies[(node, k + K * d)] = lf[(node, k)]
    lf.update(copies)


def _copies(part: list, K: int, steps: dict, shifts: dict | None = None) -> Iterator[tuple]:
    """Records part repeated K times: period j adds j * steps[c] to every row's column c (times,
    segments) and j * shifts[c][row] to a row's column c (tiles; rows with 0 may hold anything
    there). Columns are made whole by map and chain, rows by one zip at the end."""
    n = len(part)
    columns = []
    for c, col in enumerate(zip(*part, strict=True)):
        step = steps.get(c)
        per = shifts.get(c) if shifts else None
        if step:
            offsets = chain.from_iterable([repeat(j * step, n) for j in range(1, K + 1)])
            columns.append(map(add, col * K, offsets))
        elif per is not None and all(per):  # every row holds a tile
            offsets = chain.from_iterable([map(mul, per, repeat(j, n)) for j in range(1, K + 1)])
            columns.append(map(add, col * K, offsets))
        elif per is not None:  # some rows hold a tile: those move, the others are copied
            rows = [(i, d) for i, d in enumerate(per) if d]
            cur, out = list(col), []
            for _ in range(K):
                for i, d in rows:
                    cur[i] += d
                out += cur
            columns.append(out)
        else:
            columns.append(col * K)
    return zip(*columns, strict=True)
