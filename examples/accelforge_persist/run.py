"""Persist to DRAM, consume from SRAM: the four seed mappings, replayed and compared with AccelForge.

Prints, per seed, AO's DRAM and SRAM traffic from the replay (default: retain, Einsums not
isolated; and AccelForge's mode: --isolate-einsums --reuse strict) next to AccelForge's, and
writes the timeline of the fused mapping (seed_fused_n1) as a PNG and as text.

    .venv/bin/python examples/accelforge_persist/run.py [--no-peer] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cyclesim.checks.accelforge.check import AccelForgeCheck, run_check

HERE = Path(__file__).resolve().parent
SEEDS = ["seed_repro", "seed_ao_above_split", "seed_fused_n1", "seed_copy_workaround"]
MODES = {"default": ("retain", False), "AccelForge's mode": ("strict", True)}


def ao_bits(check: AccelForgeCheck, column: str) -> dict[str, float]:
    """AO's traffic summed over Einsums: DRAM write/read, SRAM write/read (AccelForge's names)."""
    out = {}
    for memory in ("dram", "sram"):
        for action in ("write", "read"):
            out[f"{memory} {action}"] = sum(
                getattr(a, column) or 0
                for a in check.accesses
                if (a.memory, a.tensor, a.action) == (memory, "AO", action)
            )
    return out


def table(use_peer: bool) -> list[str]:
    """The four seeds side by side, one row per (seed, source)."""
    head = (
        "| seed | source | cycles | DRAM write AO | DRAM read AO | SRAM write AO | SRAM read AO |"
    )
    lines = [head, "|" + "---|" * 7]
    for seed in SEEDS:
        spec = HERE / f"{seed}.yaml"
        for mode, (reuse, isolate) in MODES.items():
            check, _ = run_check([spec], reuse=reuse, isolate_einsums=isolate, use_peer=use_peer)
            bits = ao_bits(check, "replay_bits")
            lines.append(_row(seed, f"replay, {mode}", check.latency.replay_cycles, bits))
        column = "accelforge_bits" if check.accelforge_version else "model_bits"
        source = (
            f"accelforge {check.accelforge_version}"
            if check.accelforge_version
            else "AccelForge (our model)"
        )
        lines.append(_row(seed, source, check.latency.bound_cycles, ao_bits(check, column)))
    return lines


def _row(seed: str, source: str, cycles: float, bits: dict[str, float]) -> str:
    cells = [seed, source, f"{cycles:g}"] + [f"{bits[k]:g}" for k in bits]
    return "| " + " | ".join(cells) + " |"


def timeline_text(events, title: str) -> list[str]:
    """The PE segments and AO's transfers, in time order: the first three n1 columns and the last."""
    lines = [title]
    ao = events[events.tensor == "AO"]
    fills = ao[ao.kind == "fill"]
    drains = ao[ao.kind == "write-back"]
    lines.append(
        f"  AO: {len(drains)} write-backs SRAM -> DRAM ({int(drains.bits.sum())} bits), "
        f"{len(fills)} fills DRAM -> SRAM ({int(fills.bits.sum())} bits)"
    )
    last = events.tile.max()
    skipped = False
    for row in events.itertuples():
        if row.tile > 2 and row.tile != last:
            if not skipped:
                lines.append("  ...")
            skipped = True
            continue
        skipped = False
        what = (
            f"PE array computes {row.einsum}"
            if row.kind == "compute"
            else f"AO column {row.tile} {'SRAM -> DRAM' if row.kind == 'write-back' else 'DRAM -> SRAM'} ({row.bits} bits, booked to {row.einsum})"
        )
        lines.append(f"  cycles {row.start:>5}-{row.end:<5} n1={row.tile:<3} {what}")
    return lines


def plot_timelines(runs: list[tuple[str, object]], png: Path) -> None:
    """One panel per run: PE segments per Einsum, AO's life in SRAM, its DRAM transfers."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lanes = [
        "PE: producer",
        "PE: consumer",
        "AO column in SRAM",
        "AO SRAM -> DRAM",
        "AO DRAM -> SRAM",
    ]
    colors = {"producer": "tab:blue", "consumer": "tab:orange", "resident": "tab:green"}
    fig, axes = plt.subplots(len(runs), 1, figsize=(12, 2.4 * len(runs)), sharex=True)
    for ax, (title, events) in zip(axes, runs, strict=True):
        y = {name: i for i, name in enumerate(reversed(lanes))}
        pe = events[events.kind == "compute"]
        for einsum in ("producer", "consumer"):
            seg = pe[pe.einsum == einsum]
            spans = list(zip(seg.start, seg.end - seg.start, strict=True))
            ax.broken_barh(
                spans, (y[f"PE: {einsum}"] - 0.35, 0.7), color=colors[einsum], edgecolor="white"
            )
        ao = events[events.tensor == "AO"]
        for kind, lane, color in (
            ("write-back", "AO SRAM -> DRAM", "tab:red"),
            ("fill", "AO DRAM -> SRAM", "tab:purple"),
        ):
            moves = ao[ao.kind == kind]
            spans = [(s, max(e - s, 8)) for s, e in zip(moves.start, moves.end, strict=True)]
            ax.broken_barh(spans, (y[lane] - 0.35, 0.7), color=color)
        ax.broken_barh(
            _resident(events),
            (y["AO column in SRAM"] - 0.35, 0.7),
            color=colors["resident"],
            alpha=0.5,
        )
        ax.set_yticks(list(y.values()), list(y.keys()))
        ax.set_title(title, fontsize=10, loc="left")
        ax.grid(axis="x", alpha=0.3)
    axes[-1].set_xlabel("cycle")
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=110)
    plt.close(fig)


def _resident(events) -> list[tuple[int, int]]:
    """AO column n1 is in SRAM from the producer's n1 segment (or the consumer's fill) to its last use.

    In this mapping each PE segment is one n1 column, so segment index = AO tile index.
    """
    spans = []
    pe = events[events.kind == "compute"]
    ao = events[events.tensor == "AO"]
    for tile in sorted(set(ao.tile)):
        drain = ao[(ao.kind == "write-back") & (ao.tile == tile)]
        fill = ao[(ao.kind == "fill") & (ao.tile == tile)]
        producer = pe[(pe.einsum == "producer") & (pe.tile == tile)]
        consumer = pe[(pe.einsum == "consumer") & (pe.tile == tile)]
        end = max(drain.end.max(), consumer.end.max()) if fill.empty else int(drain.end.max())
        spans.append((int(producer.start.min()), int(end - producer.start.min())))
        if not fill.empty:
            spans.append((int(fill.start.min()), int(consumer.end.max() - fill.start.min())))
    return spans


def main() -> int:
    """Table of the four seeds, then the fused mapping's timeline (PNG and text)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--no-peer", action="store_true", help="do not run the real accelforge")
    parser.add_argument("--out", default=str(HERE), help="directory for timeline PNG and text")
    args = parser.parse_args()
    print("\n".join(table(not args.no_peer)))
    runs = []
    text: list[str] = []
    for mode, (reuse, isolate) in MODES.items():
        _, res = run_check(
            [HERE / "seed_fused_n1.yaml"],
            reuse=reuse,
            isolate_einsums=isolate,
            use_peer=False,
            trace=True,
        )
        title = (
            f"seed_fused_n1, {mode} (reuse {reuse}, isolate_einsums {isolate}): {res.cycles} cycles"
        )
        runs.append((title, res.events))
        text += timeline_text(res.events, title) + [""]
    out = Path(args.out)
    plot_timelines(runs, out / "timeline_fused_n1.png")
    (out / "timeline_fused_n1.txt").write_text("\n".join(text))
    print()
    print("\n".join(text))
    print(f"wrote {out / 'timeline_fused_n1.png'} and {out / 'timeline_fused_n1.txt'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
