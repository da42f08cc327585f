"""One self-contained HTML page of a traced run: `cyclesim run ... --html report.html`.

Summary and breakdown, the non-compute cycles by cause and where, the accesses, what the DRAM
models' banks did (when a memory has one), the energy (when the architecture gives per-action
energies), the plots (PNG, inline) and a zoomable
timeline of the PE array's state and the busiest ports. Everything is in the one file: it
opens offline. Every number is read from the Result (and its Activity); none is computed
again here.
"""

from __future__ import annotations

import base64
import html
import json
import tempfile
from pathlib import Path

import numpy as np

from cyclesim.outputs import write_atomically
from cyclesim.report import DRAM_TIMING, energy_groups, number_text
from cyclesim.results import Result
from cyclesim.views.html_page import SCRIPT, STYLE

BUSIEST_PORTS = 6  # port rows of the timeline
STATE_COLORS_DEFAULT = "#000000"


def _table(headers: list[str], rows: list[list], numeric: set[int] = frozenset()) -> str:
    """An HTML table; columns in `numeric` right-aligned, numbers as the text report writes
    them (thousands separators; a fraction to six significant digits)."""

    def cell(i: int, v, tag: str = "td") -> str:
        number = isinstance(v, (int, float, np.number)) and not isinstance(v, bool)
        text = number_text(v) if number else str(v)
        cls = ' class="n"' if i in numeric else ""
        return f"<{tag}{cls}>{html.escape(text)}</{tag}>"

    head = "".join(cell(i, h, "th") for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(cell(i, v) for i, v in enumerate(r)) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f} %" if whole else "-"


def _summary(res: Result) -> str:
    from cyclesim.views.plots import CAUSE_COLORS, PHASE_COLORS

    phases = [
        ("onload", res.onload_cycles),
        ("ideal compute", res.ideal_compute_cycles),
        ("stall", res.stall_cycles),
        ("offload", res.offload_cycles),
    ]
    rows = [["cycles", res.cycles, "100 %"]] + [[n, v, _pct(v, res.cycles)] for n, v in phases]
    rows.append(["MACs", res.macs, ""])
    parts = [("onload", res.onload_cycles, PHASE_COLORS["onload"])]
    parts.append(("compute", res.ideal_compute_cycles, PHASE_COLORS["compute"]))
    by_cause: dict[str, int] = {}
    for r in res.stall_rows:
        if r.phase == "compute":
            by_cause[r.cause] = by_cause.get(r.cause, 0) + r.cycles
    for cause, cycles in sorted(by_cause.items(), key=lambda kv: -kv[1]):
        parts.append((f"stall: {cause}", cycles, CAUSE_COLORS.get(cause, STATE_COLORS_DEFAULT)))
    parts.append(("offload", res.offload_cycles, PHASE_COLORS["offload"]))
    total = max(1, res.cycles)
    bar = "".join(
        f'<div title="{html.escape(n)}: {c:,} cycles" '
        f'style="width:{100 * c / total:.4f}%;background:{col}"></div>'
        for n, c, col in parts
        if c
    )
    legend = "".join(
        f'<span><i class="sw" style="background:{col}"></i>{html.escape(n)} {c:,}</span>'
        for n, c, col in parts
        if c
    )
    policy = f"reuse={res.reuse}, isolate_einsums={res.isolate_einsums}"
    return (
        f"<p>policy: {html.escape(policy)}</p>"
        + _table(["", "cycles", "share"], rows, {1, 2})
        + f'<div class="bar" id="breakdown">{bar}</div><div class="legend">{legend}</div>'
    )


def _stalls(res: Result) -> str:
    rows = []
    for r in res.stall_rows:
        port = (f"port {r.port_memory}.{r.port}" if r.port_memory else r.port) if r.port else ""
        where = f"{r.tensor}@{r.memory}" if r.memory else "PE array"
        rows.append([
            r.phase, r.cause, r.cycles, _pct(r.cycles, res.cycles), where, port,
            r.competitor or "", f"{r.first_cycle}..{r.last_cycle}",
        ])  # fmt: skip
    if not rows:
        return "<p>none: the PE array computes in every cycle</p>"
    headers = ["phase", "cause", "cycles", "share", "where", "port", "vs", "cycles a..b"]
    return _table(headers, rows, {2, 3}) + (
        '<p class="note">Each non-compute cycle has one cause (docs/causes.md); '
        "a..b is the stretch its cycles lie in (b exclusive), the count says how many.</p>"
    )


def _accesses(res: Result) -> str:
    rows = [[r.einsum, r.tensor, r.memory, r.action, r.values, r.bits] for r in res.access_rows]
    return _table(["einsum", "tensor", "memory", "action", "values", "bits"], rows, {4, 5})


def _energy(res: Result) -> str:
    """The text report's energy: the total, then by Einsum, by component, by component and
    action, each with its share."""
    table = res.energy  # None without per-action energies
    if table is None:
        return "<p>the architecture gives no per-action energies</p>"
    unit = html.escape(res.architecture.energy_unit)
    total = float(table["energy"].sum())
    out = (
        f"<p>architecture's per-action energies x replayed counts: {number_text(total)} {unit}</p>"
    )
    if not total:
        return out
    for label, rows in energy_groups(table):
        out += f"<h3>{html.escape(label)}</h3>" + _table(
            [label.removeprefix("by "), f"energy ({unit})", "share"],
            [[n, v, _pct(v, total)] for n, v in rows],
            {1, 2},
        )
    return out


def _dram(res: Result) -> str:
    """What each DRAM model's banks did and which model timed them (Result.dram_summary)."""
    rows, notes = [], []
    for d in res.dram_summary:
        issued = d.get("column_commands", d["requests"])
        rows.append([
            d["memory"], d["config"], d["requests"], issued, d["row_hits"],
            f"{100 * d['row_hit_rate']:.1f} %", d["activates"], d["refreshes"],
        ])  # fmt: skip
        notes.append(f"{d['memory']}: timing: {DRAM_TIMING[d['timing']]}")
        if issued < d["requests"]:
            notes.append(
                f"{d['memory']}: {d['requests'] - issued:,} writes were still in the write "
                "buffer when the run ended (accepted, so complete; issued to the banks later)"
            )
    headers = ["memory", "DRAM", "requests", "column commands", "row hits", "row hit rate",
               "activates", "refreshes"]  # fmt: skip
    return _table(headers, rows, set(range(2, 8))) + "".join(
        f'<p class="note">{html.escape(n)}</p>' for n in notes
    )


def _plots(res: Result, title: str, progress: bool | None) -> str:
    from cyclesim.views.plots import write_plots

    with tempfile.TemporaryDirectory(prefix="cyclesim-plots-") as folder:
        files = write_plots(res, folder, title=title, progress=progress)
        images = [
            f'<figure><img alt="{f.stem}" src="data:image/png;base64,'
            f'{base64.b64encode(f.read_bytes()).decode()}"><figcaption>{f.stem}</figcaption></figure>'
            for f in files
        ]
    return "".join(images)


# the busy ports' rows of the timeline: a grey 18.5 apart (CAM02-UCS) from every cause's and
# phase's colour, so that no busy port reads as a cause of the PE array's row (it was latency's blue)
PORT_BUSY_COLOR = "#777777"


def timeline_data(res: Result) -> dict:
    """The timeline's data: PE state runs and the busiest ports' busy runs, flat
    [start, end, colour index, ...] lists (compact JSON), over the whole traced window."""
    from cyclesim.results.port_use import iter_busy_runs, port_rows
    from cyclesim.views.plots import CAUSE_COLORS, PHASE_COLORS

    act = res.activity()
    states: list[str] = []
    index: dict[str, int] = {}
    pe: list[int] = []
    st = act.pe_states
    for a, b, state in zip(st.starts, st.ends, st.states, strict=True):
        k = index.get(state)
        if k is None:
            k = index[state] = len(states)
            states.append(state)
        if pe and pe[-2] == a and pe[-1] == k:  # touching the last run, same state: one run
            pe[-2] = b
            continue
        pe += (a, b, k)
    colors = [
        PHASE_COLORS["compute"] if s == "compute" else CAUSE_COLORS.get(s, PHASE_COLORS["onload"])
        for s in states
    ]
    busiest = sorted(port_rows(act), key=lambda r: -r["busy_cycles"])[:BUSIEST_PORTS]
    ports = []
    for row in busiest:
        runs: list[int] = []
        for a, b in iter_busy_runs(act, row["port"]):
            runs += (a, b, 0)
        name = f"{row['port']} ({_pct(row['busy_cycles'], max(1, act.end - act.start))} busy)"
        ports.append({"name": name, "runs": runs})
    return {"cycles": act.end, "states": states, "state_colors": colors, "pe": pe, "ports": ports,
            "port_color": PORT_BUSY_COLOR}  # fmt: skip


def write_html_report(
    res: Result,
    path: str | Path,
    *,
    title: str = "cyclesim",
    progress: bool | None = False,
) -> Path:
    """Write the one-page report of a traced run to path (one file, nothing fetched)."""
    data = json.dumps(timeline_data(res), separators=(",", ":")).replace("</", "<\\/")
    sections = [
        ("Summary", _summary(res)),
        ("Non-compute cycles by cause and where", _stalls(res)),
        (
            "Timeline",
            '<p class="note">The PE array\'s state each cycle and the busiest ports. Wheel: '
            "zoom; drag: pan; double-click: the whole run.</p>"
            '<canvas id="timeline"></canvas><div class="legend" id="timeline-legend"></div>',
        ),
        ("Accesses", _accesses(res)),
        *([("DRAM", _dram(res))] if res.dram_summary else []),
        ("Energy", _energy(res)),
        ("Plots", _plots(res, title, progress)),
    ]
    body = "".join(f"<h2>{html.escape(h)}</h2>{s}" for h, s in sections)
    page = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>{body}"
        f'<script type="application/json" id="timeline-data">{data}</script>'
        f"<script>{SCRIPT}</script></body></html>\n"
    )
    path = Path(path)
    write_atomically(path, page)  # whole or not at all, like every other output
    return path
