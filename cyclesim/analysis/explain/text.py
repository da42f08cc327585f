"""An Explanation as text: rank, cycles, share, where, when, and the verified remedies."""

from __future__ import annotations

from cyclesim.analysis.explain.causes import NOT_REPLAYED, Explanation
from cyclesim.vocabulary import Cause

SAVES_LITTLE = 0.5  # a remedy saving less than this share of its cause's cycles says what binds


def _list(items: list, limit: int, fmt, sep: str = ", ") -> str:
    shown = sep.join(fmt(x) for x in items[:limit])
    return shown + (f", ... ({len(items):,} in all)" if len(items) > limit else "")


def format_explanation(ex: Explanation, title: str = "", top: int = 5) -> str:
    """The causes as text: rank, cycles, share, where, when, and the verified remedies."""
    out = [title, "=" * len(title)] if title else []
    out.append(
        f"cycles {ex.cycles:,}: ideal compute {ex.ideal_compute_cycles:,}, "
        f"non-compute {ex.non_compute_cycles:,} ({percent(ex.non_compute_cycles, ex.cycles)} of the run)"
    )
    if not ex.causes:
        out.append("no non-compute cycles: nothing to explain")
    for i, c in enumerate(ex.causes[:top], 1):
        phases = ", ".join(f"{k} {v:,}" for k, v in c.by_phase.items())
        out.append("")
        out.append(
            f"{i}. {c.cause} at {c.where()}: {cycles_text(c.cycles)} "
            f"({percent(c.cycles, ex.cycles)} of the run; {phases})"
        )
        out.append(f"   chain:  {c.chain}")
        out.append(f"   cycles: {_list(c.ranges, 6, lambda r: f'{r[0]}..{r[1]}')}")
        if c.iterations:
            out.append(f"   delays: {_list(c.iterations, 4, str, '; ')}")
        if c.held_by:
            out.append(f"   held by: {c.held_by}")
        # only the changes that save cycles are remedies; the others are counted in one line
        # (--json lists every one with its cycles)
        useless = [r for r in c.remedies if r.saved is not None and r.saved <= 0]
        for r in c.remedies:
            if r.note == NOT_REPLAYED:
                out.append(f"   - {r.change}: {NOT_REPLAYED}")
                continue
            if r.cycles_after is None:
                out.append(f"   - {r.change}: cannot be replayed ({r.note})")
                continue
            if r.saved <= 0:
                continue
            span = f"({r.cycles_before:,} -> {r.cycles_after:,}"
            out.append(
                f"   - {r.change}: saves {cycles_text(r.saved)} "
                f"{span}, {percent(r.saved, r.cycles_before)})"
            )
            if r.saved < SAVES_LITTLE * c.cycles and r.binds_after:
                out.append(f"     saves little: then {r.binds_after} binds")
                if r.grew:
                    out.append(f"     grew most: {r.grew}")
            elif r.saved > c.cycles:
                out.append(
                    f"     saves more than this cause's {cycles_text(c.cycles)}: {_besides(r, c)}"
                )
        if useless:
            worse = sum(1 for r in useless if r.saved < 0)
            out.append(
                f"   ({len(useless)} other change{'s' if len(useless) > 1 else ''} replayed saved "
                f"nothing{f', {worse} made the run longer' if worse else ''}: --json lists them)"
            )
        if not c.remedies and c.cause not in (Cause.SPATIAL,):
            out.append(
                "   - no architectural change proposed for this cause (a mapping change may help)"
            )
    if len(ex.causes) > top:
        rest = sum(c.cycles for c in ex.causes[top:])
        out.append(
            f"\n... {len(ex.causes) - top} more causes, {cycles_text(rest)} (--top N, or --json)"
        )
    return "\n".join(out)


def _besides(r, c) -> str:
    """What else a remedy shortened: the places it took the most cycles from, its own cause's
    place left out (a wider port speeds up every transfer through it, say)."""
    own = f"{c.cause} at {c.where()}"
    others = [(place, n) for place, n in r.shrank if place != own]
    if not others:
        return "the change also shortens what followed this cause"
    return "it also shortens " + "; ".join(f"{p} (-{n:,})" for p, n in others[:2])


def cycles_text(n: int, more: str = "") -> str:
    """'1 cycle', '2 more cycles', '1,000 cycles'."""
    return f"{n:,} {more}cycle{'' if n == 1 else 's'}"


def percent(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "-"
