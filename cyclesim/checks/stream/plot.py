"""Stream's slot timeline against the replays' per-core Gantt charts, on one time axis.

Top: Stream's schedule as it counts it (group after group; iteration k at k x interval, each slot
at its offset in the iteration; nodes on their cores, transfers on their links). Then, when the
chip replay ran, the as-scheduled replay's slots (iteration k released at k x interval) and the
dependency-driven replay's steps per core and hops per medium."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cyclesim.checks.stream.check import StreamCheck

COMPUTE, TRANSFER, ALONE = "#4C72B0", "#55A868", "#DD8452"


def plot_timeline(check: StreamCheck, path: str | Path) -> None:
    """Write the plot (PNG, SVG or PDF by suffix)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [
        (
            "Stream (slots of every iteration at k x interval; fill added at the end)",
            _stream_bars(check),
        )
    ]
    if check.replays is not None:
        panels.append(
            ("as scheduled (Stream's slots as barriers, replayed times)", _scheduled_bars(check))
        )
        panels.append(
            ("dependency-driven (chip replay: steps per core, hops per medium)", _chip_bars(check))
        )
    heights = [max(2, len({lane for lane, *_ in bars})) for _, bars in panels]
    figure, axes = plt.subplots(
        len(panels), 1, figsize=(12, 1.2 + 0.42 * sum(heights) + 0.6 * len(panels)),
        sharex=True, squeeze=False, gridspec_kw={"height_ratios": heights},
    )  # fmt: skip
    for ax, (title, bars) in zip(axes[:, 0], panels, strict=True):
        lanes = sorted({lane for lane, *_ in bars}, key=_lane_order)
        for lane, start, length, color, label in bars:
            y = lanes.index(lane)
            ax.barh(
                y, length, left=start, height=0.6, color=color, edgecolor="white", linewidth=0.3
            )
            if label and length > 0:
                ax.text(start, y, f" {label}", va="center", fontsize=6, color="white", clip_on=True)
        ax.set_yticks(range(len(lanes)), lanes, fontsize=7)
        ax.invert_yaxis()
        ax.set_title(title, fontsize=9, loc="left")
        ax.tick_params(axis="x", labelsize=8)
    axes[-1, 0].set_xlabel("cycles", fontsize=8)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in (COMPUTE, TRANSFER)]
    figure.legend(handles, ["computation (node, step)", "transfer (link, bus, DRAM port)"],
                  loc="lower center", ncol=2, fontsize=8)  # fmt: skip
    totals = f"Stream {check.run.total_cycles:,.0f}"
    if check.replays is not None:
        totals += (
            f", as scheduled {check.replays.as_scheduled.total:,}, "
            f"dependency-driven {check.replays.result.cycles:,} cycles"
        )
    figure.suptitle(
        f"{Path(check.workload).name} on {Path(check.accelerator).stem}"
        + (f" ({Path(check.mapping).stem})" if check.mapping else "")
        + f": {totals}",
        fontsize=10,
    )
    figure.tight_layout(rect=(0, 0.04, 1, 0.97))
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _lane_order(lane: str) -> tuple[int, str]:
    return (
        0 if lane.startswith(("core", "c")) and "bus" not in lane and "link" not in lane else 1,
        lane,
    )


def _stream_bars(check: StreamCheck) -> list[tuple[str, float, float, str, str]]:
    bars, offset = [], 0.0
    for g in check.run.groups:
        starts, clock = {}, 0.0
        for slot, latency in sorted(g.slot_latencies.items()):
            starts[slot] = clock
            clock += latency
        for k in range(g.iterations):
            base = offset + k * g.interval
            for node in g.nodes:
                for on_core in node.cores:
                    bars.append((f"core {on_core.core}", base + starts[node.slot], node.active_cycles, COMPUTE,
                                 node.name if k == 0 else ""))  # fmt: skip
            for t in g.transfers:
                for link in t.links:
                    bars.append((link.link, base + starts[t.slot], t.charged_cycles, TRANSFER, ""))
        offset += g.total
    return bars


def _scheduled_bars(check: StreamCheck) -> list[tuple[str, float, float, str, str]]:
    replays = check.replays
    assert replays is not None
    bars = []
    for s in replays.as_scheduled.slots:
        for member, cycles in _members(check, s).items():
            kind, _, rest = member.partition(" ")
            name, _, resource = rest.partition(" on ")
            color = COMPUTE if kind == "compute" else TRANSFER
            bars.append(
                (
                    resource,
                    s.start,
                    cycles,
                    color,
                    name if s.iteration == 0 and kind == "compute" else "",
                )
            )
    return bars


def _members(check: StreamCheck, s: Any) -> dict[str, int]:
    """The members of one replayed slot with their cycles (iteration 0's, for every iteration:
    a step's and a transfer's replayed times do not change with the iteration, except a weight
    fetched once)."""
    replays = check.replays
    assert replays is not None
    out = {}
    for (group, slot, member), cycles in replays.as_scheduled.member_cycles.items():
        if group == s.group and slot == s.slot:
            if (
                s.iteration > 0
                and member.startswith("transfer ")
                and _fetched_once(check, group, member)
            ):
                continue
            out[member] = cycles
    return out


def _fetched_once(check: StreamCheck, group: int, member: str) -> bool:
    tensor = member[len("transfer ") :].partition(" on ")[0]
    return any(t.tensor == tensor and t.reuse_factor > 1 for t in check.run.groups[group].transfers)


def _chip_bars(check: StreamCheck) -> list[tuple[str, float, float, str, str]]:
    replays = check.replays
    assert replays is not None
    bars = []
    for step in replays.result.steps():
        label = step["layer"] if step["index"] == 0 else ""
        bars.append((step["core"], step["start"], step["end"] - step["start"], COMPUTE, label))
    for t in replays.result.transfers():
        for hop in t["hops"]:
            bars.append((hop["medium"], hop["start"], hop["end"] - hop["start"], TRANSFER, ""))
    return bars
