"""The text report of a chip replay (reads ChipResult only): cycles, per core its compute and
its causes, per link, bus and DRAM port its use."""

from __future__ import annotations

import textwrap

from cyclesim.chip.engine import FAST_FORWARD
from cyclesim.chip.result import ChipResult


def _pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:5.1f}%" if whole else "  -  "


def chip_report(res: ChipResult, top: int = 8) -> str:
    plan = res.run.plan
    title = f"{plan.workload.name} on {plan.chip.name}, mapping {plan.mapping.name}"
    out = [title, "=" * len(title), f"cycles            {res.cycles:>12,}", ""]
    out.append(
        "per core: compute, then every other cycle by cause (phase, cause, where, competitor)"
    )
    for c in plan.chip.core_names:
        comp = res.compute_cycles[c]
        steps = len(plan.programs[c])
        out.append(
            f"core {c}: {steps:,} step{'' if steps == 1 else 's'}, compute {comp:,} "
            f"{_pct(comp, res.cycles)}"
        )
        rows = [r for r in res.rows if r.core == c]
        for r in rows[:top]:
            phase = r.phase if r.step_phase is None else f"step/{r.step_phase}"
            vs = f" vs {r.competitor}" if r.competitor else ""
            on = f" on {r.competitor_core}" if r.competitor and r.competitor_core else ""
            where = f" {r.where}" if r.where else ""
            tensor = f" {r.tensor}" if r.tensor else ""
            out.append(f"  {phase:<16}{r.cause:<12}{r.cycles:>10,} {_pct(r.cycles, res.cycles)} "
                       f"{tensor}{where}{vs}{on}".rstrip())  # fmt: skip  (idle names nothing)
        if len(rows) > top:
            rest = sum(r.cycles for r in rows[top:])
            out.append(f"  ... {len(rows) - top} more rows, {rest:,} cycles (use --json)")
    out.append("")
    out.append("interconnect and DRAM port: busy cycles, bits, utilisation")
    for p in res.ports:
        out.append(f"  {p.kind:<10}{p.name:<20}{p.busy_cycles:>10,}{p.bits:>12,} b  "
                   f"{_pct(p.busy_cycles, res.cycles)}  ({p.bursts:,} bursts, {p.width_bits} b/cycle)")  # fmt: skip
    out.append("")
    inside = "on" if res.run.fast_forward else "off (--no-fast-forward)"
    out += textwrap.wrap(f"fast-forward: inside the steps {inside}; {FAST_FORWARD}", width=96,
                         subsequent_indent="  ")  # fmt: skip
    out.append(f"replayed in {res.run.wall_seconds:.3f} s ({res.run.step_seconds:.3f} s in the "
               f"cores' step replays), {res.run.events:,} chip engine events")  # fmt: skip
    return "\n".join(out)
