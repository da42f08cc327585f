"""The ranked causes of a run's non-compute cycles (Cause, with its replayed Remedy list, in an
Explanation) and rank_causes, which groups Result.stall_spans by root and locates them in
the loop nest: the spans add up to the phase totals, so the causes do too."""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field

from cyclesim import vocabulary
from cyclesim.results import Result
from cyclesim.spec import Mapping, Storage, Temporal, leaves
from cyclesim.views.cycle_ranges import merge_ranges

KEYS = ("cause", "memory", "tensor", "port_memory", "port", "competitor")


NOT_REPLAYED = "not replayed (--no-verify)"


@dataclass(frozen=True, slots=True)
class Remedy:
    """One architectural change, replayed: cycles before and after (none, and the note
    NOT_REPLAYED, when explain was told not to verify)."""

    change: str
    cycles_before: int
    cycles_after: int | None  # None: the changed architecture could not be replayed
    note: str = ""
    binds_after: str = ""  # the largest cause of the changed run, in words
    grew: str = ""  # the cause and place of the changed run that gained the most cycles
    # the causes and places of the run before that the change shortened most, with the cycles
    # each lost: what a remedy saving more than its own cause's cycles saved besides
    shrank: tuple[tuple[str, int], ...] = ()

    @property
    def saved(self) -> int | None:
        return None if self.cycles_after is None else self.cycles_before - self.cycles_after


@dataclass(slots=True)
class Cause:
    """Non-compute cycles charged to one root (cause, where, competitor), over all phases."""

    cause: str
    memory: str | None
    tensor: str | None
    port_memory: str | None
    port: str | None
    competitor: str | None
    cycles: int
    by_phase: dict[str, int]
    ranges: list[tuple[int, int]]
    iterations: list[str]
    chain: str
    remedies: list[Remedy] = field(default_factory=list)
    held_by: str = ""  # buffer_full: what holds the slot (the remedies act on it too)

    def where(self) -> str:
        text = f"{self.tensor}@{self.memory}" if self.tensor else (self.memory or "PE array")
        if self.port:
            text += (
                f", port {self.port_memory}.{self.port}"
                if self.port_memory
                else f", port {self.port}"
            )
        if self.competitor:
            text += f", vs {self.competitor}"
        return text


@dataclass(slots=True)
class Explanation:
    """The ranked causes of one run."""

    cycles: int
    non_compute_cycles: int
    ideal_compute_cycles: int
    causes: list[Cause]

    def to_json_dict(self) -> dict:
        return dict(
            cycles=self.cycles, non_compute_cycles=self.non_compute_cycles,
            ideal_compute_cycles=self.ideal_compute_cycles,
            causes=[
                dict(cause=c.cause, memory=c.memory, tensor=c.tensor, port_memory=c.port_memory, port=c.port,
                     competitor=c.competitor, cycles=c.cycles, share=round(c.cycles / self.cycles, 6) if self.cycles else 0.0,
                     by_phase=c.by_phase, cycle_ranges=[list(r) for r in c.ranges], iterations=c.iterations,
                     chain=c.chain, held_by=c.held_by,
                     remedies=[dict(change=r.change, cycles_before=r.cycles_before, cycles_after=r.cycles_after,
                                    cycles_saved=r.saved, note=r.note, binds_after=r.binds_after, grew=r.grew,
                                    shrank=[dict(place=p, cycles=n) for p, n in r.shrank])
                               for r in c.remedies])
                for c in self.causes
            ],
        )  # fmt: skip


def _loop_names(mapping: Mapping) -> dict[str, list[tuple[str, str]]]:
    """Per compute node path: (memory, rank) of its temporal loops with bound > 1, outer first;
    the memory is the one whose storage node is nearest above the loop (the loop walks its
    tiles), '' above every storage node."""
    out = {}
    for path, comp in leaves(mapping.loop_tree):
        memory, names = "", []
        for n in path:
            if isinstance(n, Storage):
                memory = n.memory
            elif isinstance(n, Temporal) and n.bound > 1:
                names.append((memory, n.rank))
        out[comp.path] = names
    return out


def _iteration(res: Result, ranks: dict[str, list[tuple[str, str]]], li: int, g: int) -> str:
    """Segment g of leaf li as loop indices grouped by the memory each loop level walks, e.g.
    'gemm100 sram_1M: B=0 / sram_8KB: C=0, K=1' (a rank can appear at several levels)."""
    leaf = res.raw.plan.leaves[li]
    names = ranks.get(leaf.path, [])
    digits = []
    for bound in reversed(leaf.bounds[: leaf.seg_depth]):
        g, d = divmod(g, bound)
        digits.append(d)
    digits.reverse()
    levels: list[tuple[str, list[str]]] = []
    for i, d in enumerate(digits):
        memory, rank = names[i] if i < len(names) else ("", f"loop{i}")
        if not levels or levels[-1][0] != memory:
            levels.append((memory, []))
        levels[-1][1].append(f"{rank}={d}")
    idx = " / ".join(f"{m}: {', '.join(r)}" if m else ", ".join(r) for m, r in levels)
    return f"{leaf.einsum} {idx}".strip()


def rank_causes(res: Result, mapping: Mapping | None = None, *, locate: bool = True) -> Explanation:
    """Group the stall spans by root, largest first, with cycle ranges and delayed iterations.

    locate=False: the cycles per root and phase only (no ranges, iterations or chain), summed
    without writing out fast-forward's repeated spans: all a remedy's replay needs of its run.
    """
    causes = _located(res, mapping) if locate else _totals(res)
    causes.sort(
        key=lambda c: (
            -c.cycles,
            c.cause,
            str(c.memory),
            str(c.tensor),
            str(c.port),
            str(c.competitor),
        )
    )
    non_compute = res.onload_cycles + res.stall_cycles + res.offload_cycles
    return Explanation(res.cycles, non_compute, res.ideal_compute_cycles, causes)


def _located(res: Result, mapping: Mapping | None) -> list[Cause]:
    """A Cause per root, with its cycle ranges, delayed iterations and chain."""
    groups: dict[tuple, list] = {}
    for s in res.spans:
        groups.setdefault(tuple(getattr(s, k) for k in KEYS), []).append(s)
    segs = sorted(res.raw.rec.pe_segments or ())
    seg_starts = [s[0] for s in segs]
    ranks = _loop_names(mapping) if mapping is not None else {}

    causes = []
    for key, spans in groups.items():
        by_phase: dict[str, int] = {}
        for s in spans:
            by_phase[s.phase] = by_phase.get(s.phase, 0) + s.cycles
        its: list[str] = []
        if segs:
            for s in sorted(spans, key=lambda s: s.start):
                if s.phase == "offload" or s.cause == vocabulary.Cause.SPATIAL:
                    continue
                j = bisect_left(seg_starts, s.end)
                if j < len(segs):
                    it = _iteration(res, ranks, segs[j][2], segs[j][3])
                    if not its or its[-1] != it:
                        its.append(it)
        chain = max(spans, key=lambda s: s.cycles).chain
        causes.append(
            Cause(
                *key,
                sum(s.cycles for s in spans),
                by_phase,
                merge_ranges([(s.start, s.end) for s in spans]),
                its,
                chain,
            )
        )
    return causes


def _totals(res: Result) -> list[Cause]:
    """A Cause per root with its cycles by phase only, from SpanList.groups."""
    by_root: dict[tuple, dict[str, int]] = {}
    for (phase, *key), (cycles, _, _) in res.spans.groups(_phase_and_root).items():
        by_root.setdefault(tuple(key), {})[phase] = cycles
    return [Cause(*key, sum(p.values()), p, [], [], "") for key, p in by_root.items()]


def _phase_and_root(s) -> tuple:
    return (s.phase, *(getattr(s, k) for k in KEYS))
