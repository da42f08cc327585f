"""Stream's slot timeline of one iteration per core and link, against each node's tile replayed
alone on its core and placed at its slot's start (where a node outgrows its slot)."""

from __future__ import annotations

from pathlib import Path

from cyclesim.checks.stream.check import StreamCheck


def plot_timeline(check: StreamCheck, path: str | Path) -> None:
    """Write the plot (PNG, SVG or PDF by suffix): one panel per fused group."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = check.run.groups
    figure, axes = plt.subplots(
        len(groups),
        1,
        figsize=(11, sum(1.4 + 0.45 * _rows(g) for g in groups) + 0.8),
        squeeze=False,
    )
    replayed = {(n.group, n.node, n.core): n.replay_cycles for n in check.nodes}
    for ax, group in zip(axes[:, 0], groups, strict=True):
        starts, clock = {}, 0.0
        for slot, latency in sorted(group.slot_latencies.items()):
            starts[slot] = clock
            clock += latency
        lanes: list[str] = []
        lane = _lane_index(lanes)

        for node in group.nodes:
            for on_core in node.cores:
                y = lane(f"core {on_core.core}")
                start = starts[node.slot]
                ax.barh(y + 0.18, on_core.latency_cycles, left=start, height=0.34, color="#4C72B0")
                ax.text(start, y + 0.18, f" {node.name}", va="center", fontsize=7, color="white")
                alone = replayed.get((group.index, node.name, on_core.core))
                if alone is not None:
                    ax.barh(y - 0.18, alone, left=start, height=0.34, color="#DD8452")
        for transfer in group.transfers:
            for link in transfer.links:
                y = lane(link.link)
                ax.barh(
                    y,
                    transfer.charged_cycles,
                    left=starts[transfer.slot],
                    height=0.5,
                    color="#55A868",
                )
        for start in starts.values():
            ax.axvline(start, color="0.8", linewidth=0.6, zorder=0)
        ax.set_yticks(range(len(lanes)), lanes, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("cycles within one iteration (slot boundaries in grey)", fontsize=8)
        ax.tick_params(axis="x", labelsize=8)
        ax.set_title(
            f"group {group.index} ({', '.join(group.layers)}): N = {group.iterations}, "
            f"iteration {group.per_iteration:,}, interval {group.interval:,}, fill {group.fill:,}",
            fontsize=9,
        )
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in ("#4C72B0", "#DD8452", "#55A868")]
    figure.legend(
        handles,
        [
            "Stream: node in its slot",
            "tile replayed alone on the core",
            "Stream: transfer charged on the link",
        ],
        loc="lower center",
        ncol=3,
        fontsize=8,
    )
    figure.suptitle(
        f"Stream slot timeline: {Path(check.workload).name} on {Path(check.accelerator).stem}"
        + (f" ({Path(check.mapping).stem})" if check.mapping else ""),
        fontsize=10,
    )
    figure.tight_layout(rect=(0, 0.05, 1, 0.96))
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _lane_index(lanes: list[str]):
    """A function giving each lane name its row, in first-seen order."""

    def lane(name: str) -> int:
        if name not in lanes:
            lanes.append(name)
        return lanes.index(name)

    return lane


def _rows(group) -> int:
    cores = {c.core for n in group.nodes for c in n.cores}
    links = {link.link for t in group.transfers for link in t.links}
    return len(cores) + len(links)
