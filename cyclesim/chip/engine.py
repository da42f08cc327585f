"""The chip replay: one SimPy process per core (its steps in program order), per transfer and
per hop; links, buses and the DRAM port arbitrated per burst (arbiter.py). A step lasts what
today's single-core replay of its tile on its core takes (replayed once per layer and core:
every step of a layer on a core has the same tile shape)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import simpy

from cyclesim.chip.arbiter import Arbiter
from cyclesim.chip.plan import ChipPlan, Hop
from cyclesim.engine.environment import ReplayEnvironment
from cyclesim.errors import DeadlockError


@dataclass
class HopRecord:
    ready: int = -1  # the hop may start (its data is at its source)
    # (asked, granted, end, bits) per burst
    bursts: list[tuple[int, int, int, int]] = field(default_factory=list)
    dram_end: int = -1  # the DRAM timer: the cycle the data of the hop's last request is done
    dram_delays: list = field(default_factory=list)  # the timer's (start, end, cause, ...) spans
    end: int = -1  # last burst and latency done: the data is at its ends


@dataclass
class ChipRun:
    """What the chip engine hands to results: the plan, each step's replay, and the records."""

    plan: ChipPlan
    step_replays: dict[tuple[str, str], object]  # (layer, core) -> Result of one step
    step_start: list[int]
    step_end: list[int]
    ready: list[int]  # transfer: its data exists (producer ended / DRAM write landed)
    issued: list[int]  # transfer: and every target has its landing slot
    landed: list[dict[str, int]]  # transfer -> target -> cycle
    hops: list[HopRecord]
    grants: dict[str, list[tuple[int, int, int, int]]]  # port -> (start, end, hop, bits)
    cycles: int
    events: int
    wall_seconds: float
    step_seconds: float  # of it, the cores' step replays
    fast_forward: bool = True  # inside the step replays (the chip level has none: FAST_FORWARD)


# Why the chip level does not fast-forward: its events are per burst and per step, a few per
# transfer; steps of a fused group repeat only when every transfer around them repeats with
# the same arbitration state, which the examples never show for more than a step or two, and
# each distinct step is replayed once (with the core replay's own fast-forward) and reused.
FAST_FORWARD = (
    "off at chip level (bursts and steps are its events; each (layer, core) step is replayed "
    "once, with the core's fast-forward, and reused for every step of that shape)"
)


def replay_steps(plan: ChipPlan, fast_forward: bool = True) -> tuple[dict, float]:
    """Today's single-core replay of one step of every (layer, core)."""
    from cyclesim.analysis.simulate import replay
    from cyclesim.chip.layer_mapping import step_architecture

    t0 = time.perf_counter()
    out = {}
    for lm in plan.mapping.layers:
        for core, tree in lm.loop_trees:
            arch = step_architecture(plan.chip.core(core).architecture, lm.step_workload)
            out[(lm.einsum, core)] = replay(arch, lm.step_workload, tree, fast_forward=fast_forward)
    return out, time.perf_counter() - t0


def run_chip(plan: ChipPlan, *, fast_forward: bool = True) -> ChipRun:
    """Replay the chip plan; DeadlockError if steps wait on each other forever.

    Over 80 lines: the chip's SimPy processes (steps, link and bus transfers, shared DRAM) are
    closures over the one arbiter and the per-step events built here.
    """
    t0 = time.perf_counter()
    replays, step_seconds = replay_steps(plan, fast_forward)
    env = ReplayEnvironment()
    arb = Arbiter(env, plan.port_keys)
    n_steps, n_transfers = len(plan.steps), len(plan.transfers)
    step_done = [env.event() for _ in range(n_steps)]
    slot = [env.event() for _ in range(n_steps)]
    hop_done = [env.event() for _ in plan.hops]
    rec = ChipRun(plan, replays, [-1] * n_steps, [-1] * n_steps, [-1] * n_transfers,
                  [-1] * n_transfers, [{} for _ in range(n_transfers)],
                  [HopRecord() for _ in plan.hops], arb.grants, 0, 0, 0.0, step_seconds,
                  fast_forward)  # fmt: skip

    def landed_on(tid: int, core: str) -> simpy.Event:
        hop = next(plan.hops[h] for h in plan.transfers[tid].hops if core in plan.hops[h].dsts)
        return hop_done[hop.id]

    def core_proc(core: str):
        program = plan.programs[core]
        for k in (0, 1):
            if k < len(program):
                slot[program[k]].succeed()
        for k, sid in enumerate(program):
            waits = []
            for need in plan.needs[sid]:
                if need.transfer is not None:
                    waits.append(landed_on(need.transfer, core))
                else:
                    waits.append(step_done[need.producer])
            if waits:
                yield env.all_of(waits)
            st = plan.steps[sid]
            rec.step_start[sid] = env.now
            if k + 1 < len(program) and k >= 1:
                slot[program[k + 1]].succeed()
            yield env.timeout(replays[(st.layer, core)].cycles)
            rec.step_end[sid] = env.now
            step_done[sid].succeed()

    def transfer_proc(tid: int):
        t = plan.transfers[tid]
        if t.after_step is not None:
            yield step_done[t.after_step]
        if t.after_transfer is not None:
            yield landed_on_dram(t.after_transfer)
        rec.ready[tid] = env.now
        if t.for_steps:
            yield env.all_of([slot[s] for s in t.for_steps])
        rec.issued[tid] = env.now
        for h in t.hops:
            env.process(hop_proc(plan.hops[h]))

    def landed_on_dram(tid: int) -> simpy.Event:
        return landed_on(tid, plan.chip.offchip.name)

    timer = None
    if plan.chip.offchip.dram is not None:
        from cyclesim.chip.dram import runs
        from cyclesim.dram.native import DramTimer

        timer = DramTimer(plan.chip.offchip.dram.config, plan.chip.clock_mhz)

    def hop_proc(hop: Hop):
        if hop.after is not None:
            yield hop_done[hop.after]
        r = rec.hops[hop.id]
        r.ready = env.now
        burst, left, keys = hop.burst_bits, hop.bits, hop.keys
        while left > 0:
            bits = min(burst, left)
            asked = env.now
            yield arb.request(hop.id, keys, bits)
            granted = env.now
            if timer is not None and hop.port_key is not None and r.dram_end < 0:
                t = plan.transfers[hop.transfer]  # its requests, queued at its first grant
                r.dram_end, r.dram_delays = timer.issue(
                    runs(plan.placements[t.tensor], t.box), not hop.reads_dram, hop.id, granted
                )
            yield env.timeout(hop.burst_cycles(bits))
            arb.release(hop.id, keys)
            r.bursts.append((asked, granted, env.now, bits))
            left -= bits
        if r.dram_end > env.now:  # the DRAM's data of the last request is not done yet
            yield env.timeout(r.dram_end - env.now)
        if hop.latency:
            yield env.timeout(hop.latency)
        r.end = env.now
        for d in hop.dsts:
            rec.landed[hop.transfer][d] = env.now
        hop_done[hop.id].succeed()

    for core in plan.chip.core_names:
        env.process(core_proc(core))
    for t in plan.transfers:
        env.process(transfer_proc(t.id))
    env.run()
    stuck = [plan.steps[s].name for s in range(n_steps) if rec.step_end[s] < 0]
    if stuck:
        raise DeadlockError(
            f"the chip replay cannot progress at cycle {env.now}: steps {stuck[:6]} wait on each "
            "other (a multicast waiting for a slot a step it feeds holds?)"
        )
    ends = rec.step_end + [h.end for h in rec.hops]
    rec.cycles = max(ends, default=0)
    rec.events = env.scheduled_count()  # SimPy's own event counter (as the core replay counts)
    rec.wall_seconds = time.perf_counter() - t0
    return rec
