"""Views of a chip replay (read ChipResult only): a VCD waveform with a scope per core and
per link, bus and DRAM port; a Perfetto trace with a process per core and a track per link,
bus and DRAM port; a per-core Gantt of steps and waits and a link/DRAM utilisation plot.
One cycle is one time unit (the VCD's 1 ns, Perfetto's 1 us)."""

from __future__ import annotations

import json
from pathlib import Path

from cyclesim.chip.result import ChipResult


def _transfer_name(res: ChipResult, hop: int) -> str:
    plan = res.run.plan
    t = plan.transfers[plan.hops[hop].transfer]
    return f"{t.tensor}#{t.id} {t.source}->{'+'.join(t.targets)}"


def perfetto_events(res: ChipResult) -> list[dict]:
    """Chrome-trace events: pid 1.. a core each (tracks: steps, waits), then one process for
    the interconnect with a track per link, bus and DRAM port (a slice per burst)."""
    plan = res.run.plan
    events: list[dict] = []
    cores = plan.chip.core_names
    for i, core in enumerate(cores, start=1):
        events.append(
            {"ph": "M", "name": "process_name", "pid": i, "args": {"name": f"core {core}"}}
        )
        events.append(
            {"ph": "M", "name": "thread_name", "pid": i, "tid": 1, "args": {"name": "steps"}}
        )
        events.append(
            {"ph": "M", "name": "thread_name", "pid": i, "tid": 2, "args": {"name": "waits"}}
        )
    for s in res.spans:
        pid = cores.index(s.core) + 1
        if s.cause == "step":
            events.append({"ph": "X", "name": s.where, "cat": "step", "pid": pid, "tid": 1,
                           "ts": s.start, "dur": s.end - s.start})  # fmt: skip
        else:
            args = {"phase": s.phase, "where": s.where, "competitor": s.competitor}
            events.append({"ph": "X", "name": s.cause, "cat": "wait", "pid": pid, "tid": 2,
                           "ts": s.start, "dur": s.end - s.start, "args": args})  # fmt: skip
    net = len(cores) + 1
    events.append({"ph": "M", "name": "process_name", "pid": net, "args": {"name": "interconnect"}})
    for tid, key in enumerate(plan.port_keys, start=1):
        events.append(
            {"ph": "M", "name": "thread_name", "pid": net, "tid": tid, "args": {"name": key}}
        )
        for start, end, hop, bits in res.run.grants[key]:
            events.append({"ph": "X", "name": _transfer_name(res, hop), "cat": "burst", "pid": net,
                           "tid": tid, "ts": start, "dur": end - start, "args": {"bits": bits}})  # fmt: skip
    return events


def write_chip_perfetto(res: ChipResult, path: str | Path) -> Path:
    """A Perfetto (Chrome JSON) trace; ui.perfetto.dev opens it."""
    path = Path(path)
    doc = {"displayTimeUnit": "ns", "traceEvents": perfetto_events(res)}
    path.write_text(json.dumps(doc, separators=(",", ":")) + "\n", encoding="utf-8")
    return path


def write_chip_vcd(res: ChipResult, path: str | Path) -> Path:
    """VCD: per core `state` (step, or the cause of the wait, or idle) and `step` (its name);
    per link, bus and DRAM port `busy`, `transfer` (what holds it) and `bits_total`."""
    from vcd import VCDWriter

    path = Path(path)
    plan = res.run.plan
    changes: list[tuple[int, int, object]] = []  # (cycle, order, (var, value))
    with path.open("w", encoding="ascii") as f, VCDWriter(f, timescale="1 ns", date="-") as w:
        core_vars = {}
        for core in plan.chip.core_names:
            scope = f"chip.{core}"
            core_vars[core] = (w.register_var(scope, "state", "string", init="idle"),
                               w.register_var(scope, "step", "string", init="-"))  # fmt: skip
        port_vars = {}
        for key in plan.port_keys:
            scope = "chip." + key.replace("[", "_").replace("]", "").replace(">", "_to_").replace(
                ".", "_"
            )
            port_vars[key] = (w.register_var(scope, "busy", "wire", size=1, init=0),
                              w.register_var(scope, "transfer", "string", init="-"),
                              w.register_var(scope, "bits_total", "integer", size=64, init=0))  # fmt: skip
        n = 0
        for s in res.spans:
            state, step = core_vars[s.core]
            changes.append((s.start, n, state, "step" if s.cause == "step" else s.cause))
            changes.append((s.start, n + 1, step, s.where if s.cause == "step" else "-"))
            n += 2
        for key, grants in res.run.grants.items():
            busy, holder, total = port_vars[key]
            moved = 0
            for start, end, hop, bits in grants:
                moved += bits
                changes.append((start, n, busy, 1))
                changes.append((start, n + 1, holder, _transfer_name(res, hop).replace(" ", "_")))
                changes.append((end, n + 2, total, moved))
                changes.append((end, n + 3, busy, 0))
                changes.append((end, n + 4, holder, "-"))
                n += 5
        # a grant ending in the cycle the next starts: its busy=0 goes first, then busy=1
        changes.sort(key=lambda c: (c[0], 0 if c[3] in (0, "-") else 1, c[1]))
        for cycle, _, var, value in changes:
            w.change(var, cycle, value.replace(" ", "_") if isinstance(value, str) else value)
        w.change(core_vars[plan.chip.core_names[0]][0], res.cycles, "end")
    return path


def write_chip_plots(res: ChipResult, directory: str | Path) -> list[Path]:
    """chip_gantt.png (per core its steps by layer and its waits by cause; per link, bus and
    DRAM port its bursts) and chip_links.png (utilisation over time, in 50 bins)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    plan = res.run.plan
    cores, keys = plan.chip.core_names, plan.port_keys
    palette = plt.get_cmap("tab10").colors
    layers = [lm.einsum for lm in plan.mapping.layers]
    causes = sorted({s.cause for s in res.spans if s.cause != "step"})
    rows = len(cores) + len(keys)
    fig, ax = plt.subplots(figsize=(12, 1.6 + 0.45 * rows))
    seen: set[str] = set()
    for i, core in enumerate(cores):
        y = rows - 1 - i
        for s in (s for s in res.spans if s.core == core):
            if s.cause == "step":
                label = s.where.split("#")[0]
                color = palette[layers.index(label) % 10]
            else:
                label = s.cause
                color = plt.get_cmap("Set2").colors[causes.index(s.cause) % 8]
            ax.broken_barh([(s.start, s.end - s.start)], (y - 0.4, 0.8), facecolor=color,
                           edgecolor="white", linewidth=0.8,
                           label=None if label in seen else label)  # fmt: skip
            seen.add(label)
    for j, key in enumerate(keys):
        y = rows - 1 - len(cores) - j
        bars = [(a, b - a) for a, b, _, _ in res.run.grants[key]]
        ax.broken_barh(bars, (y - 0.3, 0.6), color="tab:red" if "." in key else "tab:purple")
    ax.set_yticks(range(rows))
    ax.set_yticklabels(list(reversed([f"core {c}" for c in cores] + list(keys))))
    ax.set_xlabel("cycle")
    ax.set_xlim(0, max(res.cycles, 1))
    ax.set_title(f"{plan.workload.name} on {plan.chip.name} ({plan.mapping.name}): "
                 f"{res.cycles:,} cycles; steps by layer, waits by cause, bursts per link")  # fmt: skip
    fig.legend(loc="lower center", ncol=min(len(seen), 8), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.45 / fig.get_figheight(), 1, 1))
    gantt = directory / "chip_gantt.png"
    fig.savefig(gantt, dpi=110)
    plt.close(fig)

    bins = 50
    width = max(res.cycles, 1) / bins
    fig, ax = plt.subplots(figsize=(12, 4))
    for n, key in enumerate(keys):
        use = [0.0] * bins
        for a, b, _, _ in res.run.grants[key]:
            for k in range(int(a // width), min(int((b - 1) // width), bins - 1) + 1):
                lo, hi = max(a, k * width), min(b, (k + 1) * width)
                use[k] += max(0.0, hi - lo) / width
        if any(use):
            ax.step(
                [k * width for k in range(bins)],
                [100 * u for u in use],
                where="post",
                label=key,
                linewidth=2.2 if "." in key else 1.2,
                linestyle=("-", "--", ":", "-.")[n % 4],
            )
    ax.set_ylim(0, 105)
    ax.set_xlim(0, max(res.cycles, 1))
    ax.set_xlabel("cycle")
    ax.set_ylabel("busy, % of each bin")
    ax.set_title(
        f"link, bus and DRAM port utilisation over time ({bins} bins of {width:,.0f} cycles)"
    )
    ax.legend(fontsize=8, ncol=3)
    fig.tight_layout()
    links = directory / "chip_links.png"
    fig.savefig(links, dpi=110)
    plt.close(fig)
    return [gantt, links]
