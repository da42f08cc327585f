"""Text and JSON reports of L1 replays: per op, per run, and policies side by side."""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

from cyclesim.l1.metrics import OpReport, RunSummary, op_reports, summary
from cyclesim.l1.tree_replay import ReplayResult


def to_json(results: list[ReplayResult], *, timeline: bool = True) -> dict[str, Any]:
    """Everything a script needs: config, per-policy summary, per-op figures, failure, timeline."""
    first = results[0]
    return {
        "source": first.source,
        "l1": {**asdict(first.config), "policy": None, "heap_top": first.config.heap_top},
        "policies": [_policy_json(r, timeline) for r in results],
    }


def _policy_json(result: ReplayResult, timeline: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "policy": str(result.policy),
        "summary": _plain(asdict(summary(result))),
        "ops": [_plain(asdict(r)) for r in op_reports(result)],
        "failure": result.failure.facts() if result.failure else None,
        "live_at_end": [p.name for p in result.final_live],
    }
    if timeline:
        out["timeline"] = [
            {
                "seq": e.seq,
                "action": str(e.action),
                "name": e.name,
                "kind": str(e.kind) if e.kind else None,
                "region": str(e.region) if e.region else None,
                "address": e.address,
                "size_bytes": e.size_bytes,
                "op": e.op,
                "depth": e.depth,
                **_plain(asdict(e.snapshot)),
            }
            for e in result.events
        ]
    return out


def _plain(d: dict[str, Any]) -> dict[str, Any]:
    """Enums as strings, fractions rounded, for JSON."""
    return {
        k: (str(v) if hasattr(v, "value") else round(v, 6) if isinstance(v, float) else v)
        for k, v in d.items()
    }


def _b(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _header(result: ReplayResult) -> str:
    c = result.config
    return (
        f"{result.source} on {c.name}: {c.l1_size_bytes:,} B, unreserved base "
        f"{c.unreserved_base_bytes:,}, L1_SMALL {c.l1_small_size_bytes:,}, align {c.alignment_bytes}, "
        f"{c.num_banks} banks, bank size {c.bank_size_bytes:,} B"
    )


_COLUMNS = (
    ("requirement", 13),
    ("contig", 6),
    ("cb_peak", 10),
    ("heap_peak", 10),
    ("pool", 10),
    ("peak_cb_end", 11),
    ("low_heap", 11),
    ("headroom", 10),
    ("min_free", 10),
    ("min_largest", 11),
    ("max_frag", 8),
)


def render_text(result: ReplayResult) -> str:
    """One policy: a row per op call (indented by depth), the run summary, the failure."""
    reports = op_reports(result)
    width = max([len("op")] + [2 * (r.depth - 1) + len(r.path.rsplit("/", 1)[-1]) for r in reports])
    lines = [_header(result), f"policy: {result.policy}", ""]
    lines.append("op".ljust(width) + "".join(name.rjust(w + 1) for name, w in _COLUMNS))
    for r in reports:
        label = ("  " * (r.depth - 1) + r.path.rsplit("/", 1)[-1]).ljust(width)
        lines.append(
            label
            + "".join(cell.rjust(w + 1) for cell, (_, w) in zip(_row(r), _COLUMNS, strict=True))
        )
    lines += ["", _summary_line(summary(result))]
    if result.failure is not None:
        lines += ["", f"FAILED ({result.failure.reason}): {result.failure}"]
    return "\n".join(lines) + "\n"


def _row(r: OpReport) -> list[str]:
    return [
        _b(r.requirement_bytes) + ("" if r.completed else "+"),
        "yes" if r.contiguous else "no",
        _b(r.cb_peak_bytes),
        _b(r.heap_peak_bytes),
        _b(r.pool_bytes) if r.pool_bytes else "-",
        _b(r.peak_cb_end),
        _b(r.lowest_heap_address),
        _b(r.min_headroom_bytes),
        _b(r.min_total_free_bytes),
        _b(r.min_largest_free_bytes),
        f"{r.max_fragmentation:.3f}",
    ]


def _summary_line(s: RunSummary) -> str:
    return (
        f"run ({s.policy}): {s.events} events; peak stack/CB end {s.peak_local_top:,}; lowest L1 "
        f"buffer {s.lowest_heap_address:,}; min headroom {s.min_headroom_bytes:,} B; min largest "
        f"free block {s.min_largest_free_bytes:,} B; worst fragmentation {s.worst_fragmentation:.3f} "
        f"at event {s.worst_fragmentation_seq}; "
        + ("FAILED" if s.failed else "L1 empty at end" if s.empty_at_end else "tensors live at end")
    )


def render_compare(results: list[ReplayResult]) -> str:
    """Policies side by side: whole-run figures, then each top-level op's requirement."""
    names = [str(r.policy) for r in results]
    sums = [summary(r) for r in results]
    col = 16
    lines = [_header(results[0]), "", "".ljust(34) + "".join(n.rjust(col) for n in names)]

    def row(label: str, cells: list[str]) -> None:
        lines.append(label.ljust(34) + "".join(c.rjust(col) for c in cells))

    row("outcome", ["FAILED: " + str(r.failure.reason) if r.failure else "ok" for r in results])
    row("peak stack/CB end (B)", [_b(s.peak_local_top) for s in sums])
    row("lowest L1 buffer (B)", [_b(s.lowest_heap_address) for s in sums])
    row("min headroom (B)", [_b(s.min_headroom_bytes) for s in sums])
    row("min largest free block (B)", [_b(s.min_largest_free_bytes) for s in sums])
    row("worst fragmentation", [f"{s.worst_fragmentation:.3f}" for s in sums])
    reached = [{r.path: r for r in op_reports(res)} for res in results]
    needs = [
        {r.path: replace(r, completed=False) for r in op_reports(res.unbounded)} | reps
        if res.unbounded
        else reps
        for res, reps in zip(results, reached, strict=True)
    ]
    paths = list(dict.fromkeys(p for reps in needs for p, r in reps.items() if r.depth == 1))
    for path in paths:
        lines += ["", f"op {path}"]
        reps = [reps.get(path) for reps in needs]
        seen = [reps.get(path) for reps in reached]
        row("  requirement (B)", [_req(r) for r in reps])
        row("  stack/CB peak above frame (B)", [_b(r.local_peak_bytes) if r else "-" for r in reps])
        row("  heap/pool peak (B)", [_b(r.heap_peak_bytes) if r else "-" for r in reps])
        row("  worst fragmentation", [f"{r.max_fragmentation:.3f}" if r else "-" for r in seen])
        row("  min headroom (B)", [_b(r.min_headroom_bytes) if r else "-" for r in seen])
    for res in results:
        if res.failure is not None:
            lines += ["", f"{res.policy} FAILED ({res.failure.reason}): {res.failure}"]
    lines += [
        "",
        "requirement: stack '(1)' = one contiguous number (the op's deepest frame: CBs +",
        "intermediates);",
        "heap/pool = CB peak + heap/pool peak: two regions whose peaks need not coincide (an upper",
        "bound, like tt-mlir's sum), with no allowance for fragmentation.",
        "'+': the replay failed in or before this op; its requirement is read from the same",
        "replay on an unbounded L1 (requirements do not depend on capacity).",
    ]
    return "\n".join(lines) + "\n"


def _req(r: OpReport | None) -> str:
    if r is None:
        return "-"
    mark = "" if r.completed else "+"
    return _b(r.requirement_bytes) + mark + (" (1)" if r.contiguous else "")
