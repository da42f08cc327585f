"""Driving a replay's SimPy environment: chunks, the progress bar, and the deadlock report."""

from __future__ import annotations

import sys
import time

import simpy


def run_chunks(env: simpy.Environment, r, alive, progress: bool | None, wall0: float) -> None:
    """Run in chunks so a progress bar can appear on stderr for runs longer than a second.

    A chunk in which no timeout fired while processes are still alive means nothing can
    move any more: the caller reports the deadlock.
    """
    if progress is False:
        env.run()
        return
    total = sum(leaf.segments for leaf in r.plan.leaves)
    bar = None
    chunk = 1 << 12
    try:
        while alive():
            before = r.rec.events
            t0 = time.perf_counter()
            env.run(until=env.now + chunk)
            if r.rec.events == before and env.peek() == simpy.core.Infinity:
                break  # nothing scheduled: a long timeout (a systolic fold) is not a deadlock
            if time.perf_counter() - t0 < 0.05:
                chunk *= 2
            if bar is None and (
                progress or (time.perf_counter() - wall0 > 1.0 and sys.stderr.isatty())
            ):
                from tqdm import tqdm

                bar = tqdm(total=total, unit="seg", desc="replay", file=sys.stderr, leave=False)
            if bar is not None:
                bar.n = r.segments_done
                bar.refresh()
    finally:
        if bar is not None:
            bar.close()


def deadlock_message(now: int, pe_alive: bool, stuck: list, r) -> str:
    """Name every process still waiting and what it waits for."""
    lines = [f"the replay cannot progress at cycle {now}: a cyclic or unsatisfiable wait"]
    if pe_alive and r.pe_waiting is not None:
        node, k, kind, since = r.pe_waiting
        n = r.plan.nodes[node]
        what = (
            f"to be produced by Einsum {r.producer_of.get(n.tensor)}"
            if kind == "produced"
            else "to be resident"
        )
        lines.append(
            f"  PE array: waiting since cycle {since} for tile {k} of {n.label()} {what} ('{kind}')"
        )
    elif pe_alive:
        lines.append("  PE array: waiting")
    for name, tl in stuck:
        state = tl[-1] if tl else (0, "not started", None)
        lines.append(f"  {name}: since cycle {state[0]} in state '{state[1]}' ({state[2]})")
    lines.append(
        "check the order of sequential branches (a consumer before its producer), and slots "
        "(double_buffered) of nodes that feed each other"
    )
    return "\n".join(lines)
