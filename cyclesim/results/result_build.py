"""Build a Result from an engine run, checking it on the way: the counted accesses against the
schedule's closed form, and each phase's attributed stall causes against its total.
"""

from __future__ import annotations

from cyclesim.engine.run import RawRun
from cyclesim.errors import CountMismatchError
from cyclesim.results.attribution import attribute
from cyclesim.results.result import Result
from cyclesim.schedule.counts import closed_form


def build_result(raw: RawRun, *, check_counts: bool | None = None) -> Result:
    """Turn an engine run into a Result; fail loudly if counts differ from the closed form
    (unless check_counts, by default the run's RunOptions.check_counts, is False)."""
    plan, rec = raw.plan, raw.rec
    detailed = tuple((*k, v[0], v[1]) for k, v in raw.counts.items())
    if raw.options.check_counts if check_counts is None else check_counts:
        _check_counts(raw)
    ideal = sum(leaf.steps for leaf in plan.leaves)
    first = rec.first_step if rec.first_step is not None else 0
    onload = first
    offload = raw.cycles - rec.last_step_end
    stall = raw.cycles - onload - ideal - offload
    spans = attribute(raw)
    macs = sum(leaf.steps * leaf.macs_per_step for leaf in plan.leaves if not leaf.is_copy)
    res = Result(
        raw.cycles,
        ideal,
        onload,
        offload,
        stall,
        macs,
        plan.reuse.value,
        plan.isolate_einsums,
        raw.wall_seconds,
        rec.events,
        spans,
        detailed,
        raw,
    )
    _check_attribution(res)
    return res


def _check_counts(raw: RawRun) -> None:
    expected = {
        (a.einsum, a.tensor, a.memory, a.action, a.direction): [a.values, a.bits]
        for a in closed_form(raw.plan)
    }
    got = {k: v for k, v in raw.counts.items() if v[0] or v[1]}
    if expected != got:
        diffs = []
        for k in sorted(set(expected) | set(got), key=str):
            if expected.get(k) != got.get(k):
                diffs.append(
                    f"  {'/'.join(k)}: closed form {expected.get(k)}, counted {got.get(k)}"
                )
        raise CountMismatchError(
            "the engine's counted accesses differ from the schedule's closed form [values, bits]:\n"
            + "\n".join(diffs[:20])
        )


def _check_attribution(res: Result) -> None:
    """Each phase's causes must add up to its total: a bug here is an engine bug, not user error."""
    by_phase = {"onload": 0, "compute": 0, "offload": 0}
    for (phase, *_), (cycles, _, _) in res.stall_groups.items():
        by_phase[phase] += cycles
    want = {"onload": res.onload_cycles, "compute": res.stall_cycles, "offload": res.offload_cycles}
    if by_phase != want:
        raise CountMismatchError(
            f"stall attribution does not add up: attributed {by_phase}, totals {want}"
        )
