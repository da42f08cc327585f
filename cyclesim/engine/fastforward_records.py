"""Fast-forward's record copies: a period's records repeated K more times, shifted.

Timelines, grants, PE waits and the trace repeat the period between two equal snapshots,
times moved by whole periods and tiles and segments by the tiles and segments per period.
They are stored as repeats (engine/rows.py: the period's rows once, K, the shifts) and the
tiles' last finishers as rules (engine/finishers.py), so a skip costs the period's size, not
K times it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cyclesim.engine.rows import TileShift
from cyclesim.vocabulary import Wait

if TYPE_CHECKING:
    from cyclesim.engine.shared import Replay
    from cyclesim.engine.snapshot import Snapshot


def replicate(r: Replay, a: Snapshot, b: Snapshot, K: int, tile_shift: tuple, step: int) -> None:
    """Append the records of the period from a to b K more times, shifted by whole periods:
    times by P, each node's tiles by tile_shift, PE segments by step."""
    rec, fabric = r.rec, r.fabric
    ma, mb = a.marks, b.marks
    P = b.time - a.time
    dt = K * P
    times = ((0, P),)
    spans = ((0, P), (1, P))
    for tls, name in ((rec.fill_tl, "fill_tl"), (rec.drain_tl, "drain_tl")):
        for node, tl in enumerate(tls):
            d = tile_shift[node]  # a slot or use wait names a tile
            tile = TileShift(2, d, states=(Wait.SLOT, Wait.USES)) if d else None
            tl.repeat(ma[name][node], mb[name][node], K, times, tile)
    for key, grants in rec.grants.items():
        n0, n1 = ma["grants"][key], mb["grants"][key]
        live = None
        if fabric.holder[key] is not None:  # held at a too (same state): its grant is open
            live = grants.pop()  # ... and the one open at a is the period's first
            n0, n1 = n0 - 1, n1 - 1
        grants.repeat(n0, n1, K, spans)  # closed grants: tuples
        if live is not None:
            live[0] += dt
            grants.append(live)
    lists = ma["lists"], mb["lists"]
    by_node = TileShift(4, tile_shift)  # (start, end, node, kind, tile)
    rec.pe_waits.repeat(lists[0]["pe_waits"], lists[1]["pe_waits"], K, spans, by_node)
    for name, steps, tile in (
        ("pe_segments", spans + ((3, step),), None),
        ("transfers", spans, by_node),
        ("occupancy", times, None),
        ("systolic_spans", spans, None),  # (start, end, leaf, 'fill' | 'drain') per fold
    ):
        rows = getattr(rec, name)
        if rows is not None:
            rows.repeat(lists[0][name], lists[1][name], K, steps, tile)
    _finishers(rec.last_finisher, ma, mb, K, tile_shift)


def _finishers(lf, ma: dict, mb: dict, K: int, tile_shift: tuple) -> None:
    """Who finished each tile last: tiles done in the period repeat K times (a rule per node);
    the ones in use now are in use K periods later."""
    new = mb["finishers"] - ma["finishers"]
    done = set(lf.newest(new)) if new else set()
    for node, in_use in enumerate(ma["in_use"]):
        done.update((node, k) for k in in_use)
    in_use_now = {(node, k) for node, s in enumerate(mb["in_use"]) for k in s}
    moved = {}  # read before the rules drop what they cover
    for node, k in in_use_now:
        d = tile_shift[node]
        who = lf.get((node, k)) if d else None
        if who is not None:
            moved[(node, k + K * d)] = who
    base: dict[int, dict[int, tuple]] = {}  # node -> its tiles done -> who finished each
    for node, k in done - in_use_now:
        who = lf.get((node, k)) if tile_shift[node] else None
        if who is not None:
            base.setdefault(node, {})[k] = who
    touched: dict[int, list[int]] = {}
    for node, k in done | in_use_now:
        touched.setdefault(node, []).append(k)
    inner = lf.rules_since(ma["rules"])  # an inner level's skips inside this period
    for node in sorted(base.keys() | inner.keys()):
        d = tile_shift[node]
        if d:
            lf.add_rule(node, base.get(node, {}), d, K, touched.get(node, ()), inner.get(node))
    for key, who in moved.items():
        lf[key] = who
