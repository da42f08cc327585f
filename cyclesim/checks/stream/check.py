"""`cyclesim check stream`: Stream's solved schedule term by term, each term re-derived from the
parts Stream itself reports, each node's tile replayed alone on its core, and (when the case
imports into the multi-core chip) the schedule replayed as scheduled and dependency-driven.

Rows: the total; per group N, iteration latency, interval and fill; per slot its latency and the
term that binds it; per transfer the cycles charged against what its moved bits take on its
busiest link; per link its busy time per iteration; per (node, core) the tile replayed alone;
then the replay rows (replay_rows.py). A row that differs says why, naming the mechanism.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from cyclesim.checks.stream.arithmetic import compare
from cyclesim.checks.stream.pernode import NodeCheck
from cyclesim.checks.stream.rows import SCHEMA_COLUMNS, Row
from cyclesim.checks.stream.schedule import StreamRun


@dataclass(frozen=True, slots=True)
class StreamCheck:
    """The whole comparison of one Stream case."""

    accelerator: str
    workload: str
    mapping: str | None
    run: StreamRun
    rows: tuple[Row, ...]
    nodes: tuple[NodeCheck, ...]
    seconds_check: float
    replays: Replays | None = None
    replay_missing: str | None = None
    ladder: Any = None  # ladder.Ladder: Stream's arithmetic -> the dependency-driven replay

    def table(self) -> pd.DataFrame:
        """One long table, one row per term (the CSV)."""
        return pd.DataFrame(
            [
                {**{k: v for k, v in asdict(r).items()}, "difference": r.difference}
                for r in self.rows
            ],
            columns=list(SCHEMA_COLUMNS),
        )

    def to_json(self) -> dict:
        return {
            "accelerator": self.accelerator,
            "workload": self.workload,
            "mapping": self.mapping,
            "stream": {
                "version": self.run.stream_version,
                "zigzag_version": self.run.zigzag_version,
                "total_cycles": self.run.total_cycles,
                "seconds": self.run.seconds,
                "cached": self.run.cached,
                # per group, Stream's port-width word counts per core and tensor (without halos)
                "memory_accesses": [g.memory_accesses for g in self.run.groups],
            },
            "check_seconds": self.seconds_check,
            "replay": None
            if self.replays is None
            else {
                "as_scheduled_cycles": self.replays.as_scheduled.total,
                "dependency_driven_cycles": self.replays.result.cycles,
                "seconds": self.replays.seconds,
            },
            "replay_missing": self.replay_missing,
            # each rung's total: one of Stream's assumptions replaced per rung (ladder.py)
            "ladder": None
            if self.ladder is None
            else [
                {"rung": r.name.lower(), "label": r.value, "cycles": t}
                for r, t in self.ladder.totals.items()
            ],
            "rows": json.loads(self.table().to_json(orient="records")),
            "nodes": [
                {**asdict(n), "explanations": list(n.explanations), "difference": n.difference}
                for n in self.nodes
            ],
        }


def run_check(
    accelerator: str,
    workload: str,
    mapping: str | None,
    *,
    use_cache: bool = True,
    use_zigzag: bool = True,
) -> StreamCheck:
    """Read and validate Stream's inputs, run Stream (cached), check every node. Raise SpecError
    for bad inputs, PeerUnavailable / StreamRejected when Stream cannot or will not run."""
    import time

    from cyclesim.checks.stream.importer import verdict
    from cyclesim.checks.stream.peer import run_stream
    from cyclesim.checks.stream.pernode import check_nodes
    from cyclesim.checks.stream.read import (
        check_mapping,
        read_accelerator,
        read_mapping,
        read_onnx_nodes,
    )
    from cyclesim.errors import SpecError

    hardware = read_accelerator(accelerator)
    onnx_nodes = read_onnx_nodes(workload)
    if mapping is not None:
        check_mapping(read_mapping(mapping), hardware, onnx_nodes)
    refused = verdict(hardware)
    if not refused.imported:
        raise SpecError(
            f"accelerator '{hardware.name}' is not replayed: {refused.reason}", file=accelerator
        )
    run = run_stream(accelerator, workload, mapping, use_cache=use_cache)
    started = time.perf_counter()
    nodes = check_nodes(run, hardware, use_peer=use_zigzag)
    rows = compare(run, nodes)
    seconds_check = time.perf_counter() - started
    replay, missing = _replay(hardware, onnx_nodes, workload, run, nodes)
    steps = ladder_of(run, replay, nodes)
    return StreamCheck(
        str(accelerator), str(workload), None if mapping is None else str(mapping), run,
        rows + tuple(steps[1]) + (replay.rows if replay else ()), nodes, seconds_check, replay,
        missing, steps[0],
    )  # fmt: skip


def ladder_of(run: StreamRun, replay: Replays | None, nodes: tuple[NodeCheck, ...]):
    """The ladder from Stream's arithmetic to the dependency-driven replay, and its rows."""
    from cyclesim.checks.stream.ladder import build, ladder_rows
    from cyclesim.checks.stream.replay_rows import largest_waits

    if replay is None:
        ladder = build(run, None, None)
        return ladder, ladder_rows(run, ladder, nodes)
    ladder = build(run, replay.result, replay.as_scheduled)
    return ladder, ladder_rows(run, ladder, nodes, largest_waits(replay.result, 3))


@dataclass(frozen=True, slots=True)
class Replays:
    """Stream's schedule replayed on the chip import, both ways."""

    rows: tuple[Row, ...]
    as_scheduled: Any  # replay.AsScheduled
    result: Any  # cyclesim.chip.result.ChipResult (dependency-driven)
    seconds: float


def _replay(hardware, onnx_nodes, workload, run, nodes) -> tuple[Replays | None, str | None]:
    """Import into the chip and replay; (None, the reason) when the chip cannot take the case."""
    import time

    from cyclesim.checks.stream.replay import as_scheduled
    from cyclesim.checks.stream.replay_rows import replay_rows
    from cyclesim.checks.stream.to_chip import onnx_shapes, to_chip
    from cyclesim.errors import SpecError

    started = time.perf_counter()
    shapes = onnx_shapes(workload)
    try:
        chip = to_chip(hardware, onnx_nodes, shapes, run)
    except SpecError as exc:
        return None, f"not replayed on the chip: {exc.detail if hasattr(exc, 'detail') else exc}"
    from cyclesim.chip.api import replay_chip

    result = replay_chip(chip.chip, chip.workload, chip.mapping)
    scheduled = as_scheduled(run, result.run)
    rows = tuple(replay_rows(run, scheduled, result, nodes, shapes))
    if chip.single_slot:
        rows += (
            Row("replay", None, "one slot where ZigZag double-buffers", None, None,
                "; ".join(chip.single_slot)),
        )  # fmt: skip
    return Replays(rows, scheduled, result, time.perf_counter() - started), None


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def format_report(check: StreamCheck) -> str:
    """The text report: Stream's total and both replays, then every term, then the notes."""
    run = check.run
    lines = [
        f"Stream {run.stream_version} (zigzag-dse {run.zigzag_version}): {run.total_cycles:,.0f} cycles "
        f"in {len(run.groups)} group(s); Stream took {run.seconds:.1f} s"
        + (" (cached)" if run.cached else "")
        + f", the per-node check {check.seconds_check:.1f} s",
    ]
    if check.replays is not None:
        r = check.replays
        lines.append(
            f"replayed on the chip: as scheduled {r.as_scheduled.total:,} cycles, "
            f"dependency-driven {r.result.cycles:,} cycles ({r.seconds:.1f} s)"
        )
    else:
        lines.append(check.replay_missing or "not replayed on the chip")
    if check.ladder is not None:
        lines.append(
            "ladder: "
            + " -> ".join(f"{t:,.0f} ({r.value})" for r, t in check.ladder.totals.items())
        )
    head = f"{'section':<9}{'grp':>4}  {'term':<52}{'stream':>12}{'check':>11}{'as sched.':>11}{'dep.-driven':>12}{'diff':>9}"
    lines += ["", head]
    for r in check.rows:
        diff = "" if r.difference in (None, 0) else f"{r.difference:+,.0f}"
        group = "" if r.group is None else str(r.group)
        lines.append(
            f"{r.section:<9}{group:>4}  {r.item[:52]:<52}{_cell(r.stream):>12}{_cell(r.check):>11}"
            f"{_cell(r.as_scheduled):>11}{_cell(r.dependency):>12}{diff:>9}"
        )
    notes = [r for r in check.rows if r.mechanism]
    if notes:
        lines.append("")
        lines += [f"* {r.section} {r.item}: {r.mechanism}" for r in notes]
    lines += [
        "",
        "check: total, group and slot rows re-add Stream's own parts; transfer and link rows time "
        "the moved bits on the route's busiest link at full width; node rows replay the tile alone "
        "on its core at the mapping Stream's ZigZag search chose. as sched.: Stream's slots as "
        "barriers, iteration k released at k x interval, every member timed by the chip replay; "
        "dep.-driven: the chip replay (`cyclesim chip`) of the imported schedule; ladder: Stream's "
        "slots placed as barriers with one of its assumptions replaced per rung (docs/stream.md); "
        "diff: check, else as scheduled, minus Stream",
    ]
    return "\n".join(lines)


def report_json(check: StreamCheck) -> str:
    """The --json text."""
    from cyclesim.results.schema import versioned

    return json.dumps(versioned(check.to_json()), indent=2)
