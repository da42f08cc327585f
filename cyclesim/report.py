"""The readable text report of one replay (reads Result only)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cyclesim.results import Result
from cyclesim.results.energy import WHOLE_RUN

if TYPE_CHECKING:
    import pandas as pd


# how the report names the DRAM model that timed a memory (Result.dram_summary's 'timing')
DRAM_TIMING = {
    "timer": "closed-form timer (fast; read/write mixes may be off several-fold: "
    "`timing: controller` is exact)",
    "controller": "cyclesim dram's controller in the loop (DRAMsim3's queues and scheduling)",
}


def _pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:5.1f}%" if whole else "  -  "


def text_report(res: Result, title: str = "") -> str:
    """Cycles term by term, stalls by cause with their share, accesses per tensor and memory."""
    out = []
    if title:
        out += [title, "=" * len(title)]
    out.append(f"policy: reuse={res.reuse}, isolate_einsums={res.isolate_einsums}")
    out.append(f"cycles            {res.cycles:>12,}")
    for name, v in (
        ("onload", res.onload_cycles),
        ("ideal compute", res.ideal_compute_cycles),
        ("stall", res.stall_cycles),
        ("offload", res.offload_cycles),
    ):
        out.append(f"  {name:<16}{v:>12,}  {_pct(v, res.cycles)}")
    out.append(
        f"MACs              {res.macs:>12,}   utilisation of the ideal: {_pct(res.ideal_compute_cycles, res.cycles)}"
    )
    out.append("")
    out.append("non-compute cycles by root cause (phase, cause, where, competitor):")
    stalls = res.stall_rows
    if not stalls:
        out.append("  none")
    cause_width = max([12] + [len(r.cause) + 1 for r in stalls[:15]])
    for r in stalls[:15]:
        port = (
            (f" port {r.port_memory}.{r.port}" if r.port_memory else f" {r.port}") if r.port else ""
        )
        comp = f" vs {r.competitor}" if r.competitor else ""
        where = f"{r.tensor}@{r.memory}" if r.memory else "PE array"  # systolic wavefront
        out.append(
            f"  {r.phase:<8}{r.cause:<{cause_width}}{r.cycles:>12,} {_pct(r.cycles, res.cycles)}  "
            f"{where}{port}{comp}  [cycles {r.first_cycle}..{r.last_cycle}]"
        )
    if len(stalls) > 15:
        out.append(f"  ... {len(stalls) - 15} more rows (use --json)")
    out.append("")
    out.append("accesses (values / bits):")
    rows = res.access_rows

    def width(column: str, least: int) -> int:  # a long name still leaves a space after it
        return max([least] + [len(getattr(r, column)) + 1 for r in rows])

    ew, tw, mw, aw = (
        width("einsum", 12),
        width("tensor", 8),
        width("memory", 14),
        width("action", 6),
    )
    for r in rows:
        out.append(
            f"  {r.einsum:<{ew}}{r.tensor:<{tw}}{r.memory:<{mw}}{r.action:<{aw}}"
            f"{r.values:>14,}{r.bits:>16,}"
        )
    for d in res.dram_summary:  # what the DRAM model's banks did, and which model timed them
        out.append("")
        issued = d.get("column_commands", d["requests"])
        of = f" of {issued:,} column commands" if issued != d["requests"] else ""
        out.append(
            f"{d['memory']} as {d['config']}: {d['requests']:,} requests, row hits {d['row_hits']:,}"
            f"{of} ({100 * d['row_hit_rate']:.1f}%), {d['activates']:,} activates, "
            f"{d['refreshes']:,} refreshes"
        )
        if issued < d["requests"]:
            out.append(
                f"  {d['requests'] - issued:,} writes were still in the write buffer when the run "
                "ended (accepted, so complete; issued to the banks later)"
            )
        out.append(f"  timing: {DRAM_TIMING[d['timing']]}")
    out.append("")
    out.append(f"replayed in {res.wall_seconds:.3f} s, {res.engine_events:,} engine events")
    return "\n".join(out)


def energy_section(energy: pd.DataFrame, unit: str) -> str:
    """Energy from the replayed counts, in the architecture's `unit`: total, by Einsum, and by
    component and action."""
    total = float(energy.energy.sum())
    out = [
        "",
        f"energy (architecture's per-action energies x replayed counts): {number_text(total)} {unit}",
    ]
    if not total:
        return "\n".join(out)
    for label, rows in energy_groups(energy):
        out.append(f"  {label} ({unit}):")
        for name, value in rows:
            out.append(f"    {name:<28}{number_text(value):>16}  {_pct(value, total)}")
    return "\n".join(out)


def energy_groups(energy: pd.DataFrame) -> list[tuple[str, list[tuple[str, float]]]]:
    """The energy's breakdowns, as the text and HTML reports list them: by Einsum, by component,
    and by component and action (each component's actions together, components as listed)."""
    groups = []
    for column, label in (("einsum", "by Einsum"), ("component", "by component")):
        rows = energy.groupby(column, sort=False)["energy"].sum().items()
        groups.append((label, [("(whole run: leak)" if n == WHOLE_RUN else n, v) for n, v in rows]))
    grouped = energy.groupby(["component", "action"], sort=False)["energy"].sum()
    components = list(dict.fromkeys(energy.component))  # as listed by component above
    ordered = sorted(
        grouped.items(), key=lambda item: (components.index(item[0][0]), _ACTIONS[item[0][1]])
    )
    groups.append(("by component and action", [(f"{c} {a}", v) for (c, a), v in ordered]))
    return groups


_ACTIONS = {"read": 0, "write": 1, "update": 2, "mac": 3, "leak": 4}  # energy_table's actions


def number_text(value: float) -> str:
    """Whole numbers with thousands separators, others to six significant digits."""
    return f"{int(value):,}" if float(value).is_integer() else f"{value:.6g}"
