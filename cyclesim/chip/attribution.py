"""Every cycle of every core: compute, or one cause (docs/multicore.md "Causes"). Inside a
step, the step replay's own rows; between steps, what the binding part (the one landing last,
ties in operand order) is doing in that cycle, followed through its producer and its hops."""

from __future__ import annotations

from bisect import bisect_right
from collections import namedtuple

from cyclesim.chip.engine import ChipRun
from cyclesim.chip.plan import Hop, Need

# phase: onload (before the core's first step), step (inside one), stall (between steps),
# offload (after its last step, while its outputs move), idle (its work done, the chip's not)
CoreRow = namedtuple(
    "CoreRow",
    ["core", "phase", "step_phase", "cause", "where", "tensor", "competitor", "competitor_core",
     "cycles"],
)  # fmt: skip
# one stretch of a core's time: a step (cause 'step', where = the step's name), or a wait with
# its cause, in cycle order per core (the views draw these)
CoreSpan = namedtuple("CoreSpan", ["core", "start", "end", "phase", "cause", "where", "competitor"])
NEG = -(1 << 62)


class _Chains:
    def __init__(self, run: ChipRun) -> None:
        self.run, self.plan = run, run.plan
        self.starts = {k: [g[0] for g in v] for k, v in run.grants.items()}
        self.dram = self.plan.chip.offchip.name

    def transfer_name(self, tid: int) -> str:
        t = self.plan.transfers[tid]
        return f"{t.tensor}[{_box(t.box)}] {t.source}->{'+'.join(t.targets)}"

    def hop_core(self, hop: Hop) -> str:
        return hop.src if hop.src != self.dram else "+".join(hop.dsts)

    def holder(self, key: str, cycle: int) -> tuple[int, int] | None:
        """(hop, end of its grant) holding a port in a cycle."""
        i = bisect_right(self.starts[key], cycle) - 1
        if i >= 0:
            start, end, who, _ = self.run.grants[key][i]
            if cycle < end:
                return who, end
        return None

    def producer_interval(self, sid: int, tensor: str) -> list[tuple]:
        st = self.plan.steps[sid]
        row = ("dependency", st.name, tensor, None, st.core)
        return [(NEG, self.run.step_end[sid], row)]

    def transfer(self, tid: int, target: str) -> list[tuple]:
        """(start, end, (cause, where, tensor, competitor, competitor core)) up to its landing
        on target, earliest first; the first interval starts at NEG."""
        run, plan = self.run, self.plan
        t = plan.transfers[tid]
        out: list[tuple] = []
        if t.after_step is not None:
            out += self.producer_interval(t.after_step, t.tensor)
        if t.after_transfer is not None:
            out += self.transfer(t.after_transfer, self.dram)
        if not out:
            out.append((NEG, run.ready[tid], ("dependency", "network input", t.tensor, None, None)))
        if run.issued[tid] > run.ready[tid]:
            last = max(t.for_steps, key=lambda s: self.slot_open(s))
            st = plan.steps[last]
            holder = plan.programs[st.core][max(st.position - 2, 0)]
            out.append((run.ready[tid], run.issued[tid],
                        ("buffer_full", f"slot of {st.core}", t.tensor,
                         plan.steps[holder].name, st.core)))  # fmt: skip
        for hop in plan.path_to(tid, target):
            out += self.hop(hop, t.tensor)
        return out

    def slot_open(self, sid: int) -> int:
        st = self.plan.steps[sid]
        if st.position < 2:
            return 0
        return self.run.step_start[self.plan.programs[st.core][st.position - 1]]

    def hop(self, hop: Hop, tensor: str) -> list[tuple]:
        r = self.run.hops[hop.id]
        out = []
        dram_binds = hop.slower_is_dram()
        moving = ("bandwidth", hop.port_key, tensor, None, None) if dram_binds else (
            "link", hop.medium.name, tensor, None, None)  # fmt: skip
        for asked, granted, end, _ in r.bursts:
            out += self.waiting(hop, tensor, asked, granted)
            out.append((granted, end, moving))
        last = r.bursts[-1][2] if r.bursts else r.ready
        if r.dram_end > last:  # waiting for the DRAM's data: its timer's causes, else latency
            out += self.dram_wait(hop, tensor, last, r.dram_end, r.dram_delays)
            last = r.dram_end
        if r.end > last:
            where = hop.medium.name
            if (
                hop.dram_port is not None
                and hop.dram_port.latency_cycles > hop.medium.latency_cycles
            ):
                where = hop.port_key
            out.append((last, r.end, ("latency", where, tensor, None, None)))
        return out

    def dram_wait(self, hop: Hop, tensor: str, a: int, b: int, delays: list) -> list[tuple]:
        """[a, b): the timer's delay spans (row_miss, bank_conflict, refresh, turnaround) where
        they fall, the DRAM's data latency (`latency`, naming the off-chip memory) elsewhere."""
        out = []
        for start, end, cause, other, _where in sorted(delays):
            lo, hi = max(start, a), min(end, b)
            if hi > lo:
                if lo > a:
                    out.append((a, lo, ("latency", self.dram, tensor, None, None)))
                # contention and bank_conflict name the other transfer whose requests held
                # the DRAM's data bus or opened the row (the timer knows it by its hop)
                named = other is not None and other != hop.id
                rival = self.plan.hops[other] if named else None
                out.append((lo, hi, (cause, self.dram, tensor,
                                     self.transfer_name(rival.transfer) if rival else None,
                                     self.hop_core(rival) if rival else None)))  # fmt: skip
                a = hi
        if b > a:
            out.append((a, b, ("latency", self.dram, tensor, None, None)))
        return out

    def waiting(self, hop: Hop, tensor: str, a: int, b: int) -> list[tuple]:
        out = []
        x = a
        keys = hop.keys[::-1] if hop.slower_is_dram() else hop.keys  # the binding port first
        while x < b:
            for key in keys:
                held = self.holder(key, x)
                if held is not None and held[0] != hop.id:
                    who, end = held
                    other = self.plan.hops[who]
                    cause = "dram_port" if key == hop.port_key else "contention"
                    row = (cause, key, tensor, self.transfer_name(other.transfer),
                           self.hop_core(other))  # fmt: skip
                    out.append((x, min(end, b), row))
                    x = min(end, b)
                    break
            else:  # granted to another in this very cycle's decision: it holds from x on
                out.append((x, x + 1, ("contention", hop.medium.name, tensor, None, None)))
                x += 1
        return out


def _box(box) -> str:
    return ",".join(f"{lo}:{hi}" for lo, hi in box)


def need_landing(run: ChipRun, need: Need, core: str) -> int:
    if need.transfer is not None:
        return run.landed[need.transfer][core]
    return run.step_end[need.producer]


def core_rows(
    run: ChipRun, spans: list[CoreSpan] | None = None
) -> tuple[dict[str, int], list[CoreRow]]:
    """Per core its compute cycles, and every other cycle's cause (rows summed per key);
    `spans`, when given, receives every step and every wait placed in time."""
    plan = run.plan
    chains = _Chains(run)
    compute: dict[str, int] = {}
    sums: dict[tuple, int] = {}

    def add(key: tuple, cycles: int) -> None:
        if cycles > 0:
            sums[key] = sums.get(key, 0) + cycles

    def charge(core: str, phase: str, chain: list[tuple], a: int, b: int) -> None:
        for s, e, row in chain:
            lo, hi = max(s, a), min(e, b)
            if hi > lo:
                add((core, phase, None, *row), hi - lo)
                if spans is not None:
                    spans.append(CoreSpan(core, lo, hi, phase, row[0], row[1], row[3]))
                a = hi
        if b > a:  # after the chain (cannot happen for a binding need): named, not dropped
            add((core, phase, None, "idle", None, None, None, None), b - a)
            if spans is not None:
                spans.append(CoreSpan(core, a, b, phase, "idle", None, None))

    for core in plan.chip.core_names:
        compute[core] = 0
        prev = 0
        program = plan.programs[core]
        for k, sid in enumerate(program):
            st = plan.steps[sid]
            start, end = run.step_start[sid], run.step_end[sid]
            if start > prev:
                needs = plan.needs[sid]
                binding = max(needs, key=lambda n: (need_landing(run, n, core), -n.operand))
                if binding.transfer is not None:
                    chain = chains.transfer(binding.transfer, core)
                else:
                    chain = chains.producer_interval(binding.producer, binding.tensor)
                charge(core, "onload" if k == 0 else "stall", chain, prev, start)
            if spans is not None:
                spans.append(CoreSpan(core, start, end, "step", "step", st.name, None))
            sim = run.step_replays[(st.layer, core)]
            compute[core] += sim.ideal_compute_cycles
            for row in sim.stall_rows:
                where = row.port if row.port is None else f"{row.port_memory}.{row.port}"
                add((core, "step", row.phase, row.cause, where or row.memory, row.tensor,
                     row.competitor, core), row.cycles)  # fmt: skip
            prev = end
        sent = [t for sid in program for t in plan.writes.get(sid, ())]
        if sent and run.cycles > prev:
            last = max(sent, key=lambda t: (max(run.landed[t].values()), -t))
            target = max(run.landed[last], key=lambda d: run.landed[last][d])
            done = run.landed[last][target]
            charge(core, "offload", chains.transfer(last, target), prev, min(done, run.cycles))
            prev = max(prev, done)
        if run.cycles > prev:
            add((core, "idle", None, "idle", None, None, None, None), run.cycles - prev)
            if spans is not None:
                spans.append(CoreSpan(core, prev, run.cycles, "idle", "idle", None, None))
    rows = [CoreRow(*k, v) for k, v in sums.items()]
    return compute, rows
