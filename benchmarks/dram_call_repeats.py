"""How often a DRAM timer call repeats, relative to its start: a call-level memo's best hit rate.

A memo of a whole `DramTimer.issue` call would key on everything the call reads, made
relative to the first request's arrival (DRAM cycle s0 + index): the requests relative to the
first request's row (bank and channel bits equal), whether it continues a stream, the
requester's last request and owed pace; the touched banks' open row (relative to the first
row, or "other" when the call does not request it), opener, cause and ready times (clamped
at the arrival: earlier ones bind no more); the touched channels' calendars (entries that can
still bind); the touched ranks' activates within tFAW + tRRD. Calls with a refresh inside are
left out (a memo cannot replay one). Effects would be stored in DRAM cycles, so the accelerator
clock's phase need not be in the key. The keys here are looser than an exact memo's (never
more misses), so their repeats bound its hit rate from above; each part is also measured on
its own with the requests, to show which state breaks the repetition, and so is the CPU time
of building the full key against the call itself. It reads the timer's internals on purpose
(what a memo inside the timer would read). This measured why the memo was left out
(docs/dram_causes.md, "Engine time").

    PYTHONPATH=. python benchmarks/dram_call_repeats.py
"""

from __future__ import annotations

import time
from collections import Counter

from bench_dram import CASES, ROOT

from cyclesim.dram.timer import NO_ROW, DramTimer
from cyclesim.engine.run import replay_plan
from cyclesim.schedule import build_plan
from cyclesim.spec import load_architecture, load_mapping, load_workload

PARTS = ("requests", "banks", "calendar", "activates")
VARIANTS = {
    "requests": ("requests",),
    "+ banks": ("requests", "banks"),
    "+ calendar": ("requests", "calendar"),
    "+ activates": ("requests", "activates"),
    "full key": PARTS,
}


def call_key(timer: DramTimer, runs, is_write, who, start, stream, ahead) -> dict:
    """The parts of a call's memo key (see the module docstring), before the call."""
    arrival = timer.to_dram(start)
    if stream is not None:
        arrival = max(stream[0], arrival - timer.queue - stream[1]) + stream[1]
    base = runs[0][0] - runs[0][0] % timer.row_span
    first_row = timer.row_of(base >> timer.shift)
    last = timer.last_request.get(who)
    owed = timer.owed.get(who)
    visits, _ = timer._row_visits(runs, last)
    banks = sorted({timer.bank_index(q) for q, _ in visits})
    rows = {timer.row_of(q) for q, _ in visits}
    channels = sorted({b // timer.banks_per_channel for b in banks})
    ranks = sorted({b // timer.config.banks for b in banks})
    reach = max(d for by_next in timer.col_table for by_scope in by_next for d in by_scope)
    window = timer.tFAW + max(timer.rrd)

    def relative(byte_runs):
        return tuple((a - base, *rest) for a, *rest in byte_runs or ())

    def open_row(b: int):
        row = timer.open_row[b]
        return row if row == NO_ROW else row - first_row if row in rows else "other"

    return {
        "requests": (
            is_write,
            id(who),
            stream is None,
            relative(runs),
            relative(ahead),
            None if last is None else last - (base >> timer.shift),
            None if owed is None else tuple(owed),
        ),
        "banks": tuple(
            (
                open_row(b),
                timer.opener[b] == who,
                timer.open_cause[b],
                timer.closed_by_refresh[b],
                max(timer.act_ready[b] - arrival, 0),
                max(timer.col_ready[b] - arrival, 0),
                max(timer.pre_ready[b] - arrival, 0),
            )
            for b in banks
        ),
        "calendar": tuple(
            tuple(
                (max(t0 - arrival, -reach), t1 - arrival, *rest, owner == who)
                for t0, t1, *rest, owner in timer.calendar[ch]
                if t1 + reach > arrival
            )
            for ch in channels
        ),
        "activates": tuple(
            tuple((t - arrival, g) for t, g in timer.acts[r] if t - arrival > -window)
            for r in ranks
        ),
    }


def measure(arch_path: str, workload_path: str, mapping_path: str) -> tuple[Counter, dict]:
    """Replay one case with DramTimer.issue wrapped: repeats per key variant, and CPU seconds."""
    issue = DramTimer.issue
    seen: dict[str, set] = {name: set() for name in VARIANTS}
    counts: Counter = Counter()
    seconds = {"key": 0.0, "call": 0.0}

    def counted(self, runs, is_write, who, start, stream=None, ahead=None):
        t0 = time.process_time()
        parts = call_key(self, runs, is_write, who, start, stream, ahead)
        full = tuple(parts[p] for p in PARTS)
        hash(full)
        t1 = time.process_time()
        refreshes = self.counts["refreshes"]
        out = issue(self, runs, is_write, who, start, stream, ahead)
        seconds["key"] += t1 - t0
        seconds["call"] += time.process_time() - t1
        counts["calls"] += 1
        if self.counts["refreshes"] != refreshes:
            counts["refresh inside"] += 1
            return out
        for name, chosen in VARIANTS.items():
            key = tuple(parts[p] for p in chosen)
            counts[name] += key in seen[name]
            seen[name].add(key)
        return out

    DramTimer.issue = counted
    try:
        arch = load_architecture(str(ROOT / arch_path))
        workload = load_workload(str(ROOT / workload_path))
        mapping = load_mapping(str(ROOT / mapping_path), arch, workload)
        replay_plan(build_plan(arch, workload, mapping), progress=False, fast_forward=False)
    finally:
        DramTimer.issue = issue
    return counts, seconds


def main() -> None:
    for name, (_, ddr4, workload_path, mapping_path) in CASES.items():
        counts, seconds = measure(ddr4, workload_path, mapping_path)
        memoisable = counts["calls"] - counts["refresh inside"]
        print(f"{name}: {counts['calls']:,} calls, {counts['refresh inside']:,} with a refresh")
        for variant in VARIANTS:
            share = counts[variant] / max(1, memoisable)
            print(f"  repeats of {variant:12s} {counts[variant]:>6,}  {share:6.1%}")
        per_call = 1e6 / max(1, counts["calls"])
        print(
            f"  CPU: building the full key {seconds['key'] * per_call:.1f} us per call, "
            f"the call itself {seconds['call'] * per_call:.1f} us\n"
        )


if __name__ == "__main__":
    main()
