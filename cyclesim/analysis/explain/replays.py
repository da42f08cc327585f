"""explain: rank the causes, replay each proposed change (in parallel worker processes, through
analysis.parallel.map_tasks) and attach the verified remedies; a remedy's replay is ranked
again, so one that saves little names what binds after it and which place grew."""

from __future__ import annotations

from dataclasses import dataclass, replace

from cyclesim.analysis.explain.candidates import GROW, candidates, held_by, write_back_cause
from cyclesim.analysis.explain.causes import NOT_REPLAYED, Cause, Explanation, Remedy, rank_causes
from cyclesim.analysis.explain.text import cycles_text, percent
from cyclesim.analysis.explain.transfer import (
    operand_demand,
    slot_holding,
    transfer_ends,
    write_back_ends,
)
from cyclesim.engine.options import RunOptions
from cyclesim.errors import CyclesimError
from cyclesim.results import Result
from cyclesim.spec import Architecture, Mapping, Workload


def verify(
    arch: Architecture,
    workload: Workload,
    mapping: Mapping,
    res: Result,
    change: str,
    new_arch: Architecture,
) -> Remedy:
    """Replay with the changed architecture: the cycles saved and what binds then, or why it could not run."""
    places = cycles_by_place(rank_causes(res, locate=False).causes)
    return _replay_remedy(
        RemedyTask(change, new_arch, workload, mapping, remedy_options(res), res.cycles, places)
    )


def remedy_options(res: Result) -> RunOptions:
    """How a remedy replays: as res was (reuse, isolate_einsums, fast-forward), untraced,
    quietly, its counts unchecked (only its cycles and causes are read)."""
    return replace(
        res.raw.options, trace=False, trace_filter=None, progress=False, check_counts=False
    )


@dataclass(frozen=True, slots=True)
class RemedyTask:
    """One remedy's replay, for a worker process: plain, picklable data."""

    change: str  # the change in words
    architecture: Architecture
    workload: Workload
    mapping: Mapping
    options: RunOptions
    before: int  # the cycles before the change
    places: dict[str, int]  # cycles per cause and place before the change (cycles_by_place)


def _replay_remedy(task: RemedyTask) -> Remedy:
    """One remedy's replay (a worker process's task: plain, picklable data in and out)."""
    from cyclesim.analysis.simulate import replay

    try:
        new = replay(task.architecture, task.workload, task.mapping, task.options)
    except CyclesimError as exc:
        return Remedy(task.change, task.before, None, str(exc).splitlines()[0])
    ranked = rank_causes(new, locate=False).causes  # places and cycles: no ranges needed
    return Remedy(task.change, task.before, new.cycles, binds_after=_largest_cause(new, ranked),
                  grew=grew_most(ranked, task.places), shrank=shrank_most(ranked, task.places))  # fmt: skip


def cycles_by_place(causes: list[Cause]) -> dict[str, int]:
    """Cycles per cause and place, e.g. {'latency at O@rf_16B, port sram_8KB.rw_port_2': 59961}."""
    return {f"{c.cause} at {c.where()}": c.cycles for c in causes}


def grew_most(ranked: list[Cause], before: dict[str, int]) -> str:
    """The cause and place that gained the most cycles over the run before the change, in
    words, or '': where the cycles a change removes went when it saves little."""
    gains = [(cycles - before.get(key, 0), key) for key, cycles in cycles_by_place(ranked).items()]
    gain, key = max(gains, default=(0, ""))
    return f"{key} (+{gain:,})" if gain > 0 else ""


def shrank_most(ranked: list[Cause], before: dict[str, int], n: int = 3) -> tuple:
    """The n causes and places that lost the most cycles against the run before the change,
    with what each lost, most first: where a remedy's saving came from."""
    after = cycles_by_place(ranked)
    losses = sorted(
        ((cycles - after.get(key, 0), key) for key, cycles in before.items()), reverse=True
    )
    return tuple((key, loss) for loss, key in losses[:n] if loss > 0)


def _largest_cause(res: Result, ranked: list[Cause]) -> str:
    """What binds in a run, in words: the cause with the most cycles (summed over its places) and
    its largest place, e.g. 'spatial (186,800 cycles, 60.0% of the run; most at O@rf_16B, ...)'."""
    if not ranked:
        return "nothing (the run is compute-bound)"
    totals: dict[str, int] = {}
    for c in ranked:
        totals[c.cause] = totals.get(c.cause, 0) + c.cycles
    cause = max(totals, key=lambda k: (totals[k], k))
    place = next(c for c in ranked if c.cause == cause)
    most = (
        f"most at {place.where()}: {place.cycles:,}"
        if place.cycles < totals[cause]
        else f"at {place.where()}"
    )
    return f"{cause} ({cycles_text(totals[cause])}, {percent(totals[cause], res.cycles)} of the run; {most})"


def explain(
    res: Result,
    arch: Architecture,
    workload: Workload,
    mapping: Mapping,
    *,
    top: int = 5,
    verify_remedies: bool = True,
    workers: int | None = None,
    progress: bool | None = None,
) -> Explanation:
    """Ranked causes; for the top ones, remedies replayed on the changed architecture.

    The replays run in parallel (map_tasks, one task per distinct change, with its progress
    bar); a fallback (GROW) is replayed in a second round only where its plain change failed.

    Over 80 lines: the remedies of every top cause replay in two parallel rounds (the first
    choices, then the fallbacks of those that did not fit), and both rounds fill the one table
    of results kept here.
    """
    from cyclesim.analysis.parallel import map_tasks, progress_lines

    ex = rank_causes(res, mapping)
    # a full buffer whose slot a write-back holds: that write-back's remedies act on it too,
    # and the PE array's pipeline's when the write-back waited for the tile's last results
    write_backs = [write_back_ends(res, c) for c in ex.causes[:top]]
    holdings = [
        slot_holding(res, c) if wb is not None else None
        for c, wb in zip(ex.causes[:top], write_backs, strict=True)
    ]
    for c, wb, holding in zip(ex.causes[:top], write_backs, holdings, strict=True):
        if wb is not None:
            c.held_by = held_by(c, arch, wb, holding)
    from cyclesim.analysis.explain.dram_remedies import dram_remedies

    proposed = [
        (c, candidates(c, arch, workload, operand_demand(res, c), transfer_ends(res, c), wb, hold))
        for c, wb, hold in zip(ex.causes[:top], write_backs, holdings, strict=True)
    ]
    # DRAM causes: another address mapping, layout or tile order, each with its own mapping (for
    # a full buffer, those of the DRAM its slot's write-back goes to)
    dram = [
        (
            c,
            dram_remedies(c, arch, workload, mapping)
            if wb is None
            else dram_remedies(write_back_cause(c, wb.near if wb.near_is_parent else wb.far),
                               arch, workload, mapping),
        )
        for c, wb in zip(ex.causes[:top], write_backs, strict=True)
    ]  # fmt: skip
    if not verify_remedies:
        _list_unreplayed(proposed, dram, res.cycles)
        return ex
    done: dict[str, Remedy] = {}
    places = cycles_by_place(ex.causes)  # before the change: what grew in each remedy's replay

    def run(tasks: dict[str, tuple[Architecture, Mapping]]) -> None:
        todo = [(change, a, m) for change, (a, m) in tasks.items() if change not in done]
        options = remedy_options(res)
        items = [RemedyTask(change, a, workload, m, options, res.cycles, places) for change, a, m in todo]  # fmt: skip
        lines = progress_lines("remedies", len(items), progress, "replays")  # off a terminal
        for (change, _, _), outcome in zip(todo, map_tasks(_replay_remedy, items, workers=workers,
                                                            progress=progress, desc="remedies",
                                                            heartbeat=lines), strict=True):  # fmt: skip
            done[change] = (
                outcome.value
                if outcome.ok
                else Remedy(change, res.cycles, None, outcome.error or "")
            )

    first = {
        ch: (a, mapping) for _, cands in proposed for ch, a in cands if not ch.startswith(GROW)
    }
    first.update({ch: (a, m) for _, rs in dram for ch, a, m in rs})
    run(first)
    run({ch.removeprefix(GROW): (a, mapping) for _, cands in proposed for i, (ch, a) in enumerate(cands)
         if ch.startswith(GROW) and i and done[cands[i - 1][0]].cycles_after is None})  # fmt: skip
    for (c, cands), (_, rs) in zip(proposed, dram, strict=True):
        for i, (change, _) in enumerate(cands):
            if not change.startswith(GROW):
                c.remedies.append(done[change])
            elif i and done[cands[i - 1][0]].cycles_after is None:
                c.remedies.remove(done[cands[i - 1][0]])
                c.remedies.append(done[change.removeprefix(GROW)])
        c.remedies.extend(done[change] for change, _, _ in rs)
        c.remedies.sort(key=lambda r: (r.saved is None, -(r.saved or 0)))
    return ex


def _list_unreplayed(proposed: list, dram: list, cycles: int) -> None:
    """Without verification each cause still lists its remedies, first choices only (a GROW
    fallback is tried only where its plain change fails to replay), none with cycles saved."""
    for (c, cands), (_, rs) in zip(proposed, dram, strict=True):
        changes = [ch for ch, _ in cands if not ch.startswith(GROW)] + [ch for ch, _, _ in rs]
        c.remedies.extend(Remedy(ch, cycles, None, NOT_REPLAYED) for ch in changes)
