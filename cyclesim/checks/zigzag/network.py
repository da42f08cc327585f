"""A whole ZigZag workload (ONNX or YAML), layer by layer: ZigZag's choice, our model, zigzag-dse, replay.

Each layer is one task for `analysis.parallel.map_tasks` (worker processes, progress bar, or
one line per finished layer where no bar can be drawn); a layer for which zigzag-dse has no
mapping, or that cyclesim's reader refuses, is a row with its reason, never a lost network. The
result is one long table, one row per layer, plus its totals.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from cyclesim.analysis.parallel import TaskOutcome
from cyclesim.errors import CyclesimError, SpecError
from cyclesim.outputs import atomic_output

TERM_COLUMNS = ("cycles", "ideal", "stall", "onload", "offload")
SOURCES = ("replay", "model", "zigzag")

# a layer's status, as the table, the text and the plot name it
OK = "ok"
NOT_REPLAYED = "not replayed"  # ZigZag's mapping is one the replay cannot represent
NO_ZIGZAG_MAPPING = "no ZigZag mapping"  # zigzag-dse found none (or could not run to find one)
REFUSED = "refused"  # cyclesim's reader refused the layer's inputs
FAILED = "failed"  # a bug: the reason names where
# how the summary and the plot's title count each status other than ok
STATUS_PHRASES = {
    NOT_REPLAYED: "not replayed",
    NO_ZIGZAG_MAPPING: "with no ZigZag mapping",
    REFUSED: "refused by cyclesim",
    FAILED: "failed",
}


@dataclass(frozen=True, slots=True)
class LayerTask:
    """One layer of a network check (plain data, so it pickles to a worker)."""

    index: int
    layer: str
    accelerator: str
    workload: str
    mapping: str
    use_peer: bool


def check_layer(task: LayerTask) -> dict:
    """Check one layer; the row of the network table. Raise CyclesimError if ZigZag's mapping or
    our model cannot be had; a mapping the replay cannot represent is a row without replay."""
    from cyclesim.checks.zigzag.check import choose_mapping, compare, replay_case
    from cyclesim.checks.zigzag.model import evaluate
    from cyclesim.checks.zigzag.terms import Terms
    from cyclesim.checks.zigzag.to_spec import padded_dims

    inputs, theirs, missing = choose_mapping(
        task.accelerator, task.workload, task.mapping, layer_name=task.layer, use_peer=task.use_peer
    )
    row: dict = {"index": task.index, "layer": task.layer, "status": OK, "error": ""}
    row["spatial"] = "; ".join(
        f"{array_dim}: " + " ".join(f"{dim} {factor}" for dim, factor in loops)
        for array_dim, loops in inputs.mapping.spatial
    )
    tm = inputs.temporal_mapping
    row["temporal"] = " ".join(
        f"{dim}{factor}" for dim, factor in tm.flat_order(inputs.layer.output_operand)
    )
    model = Terms.of_model(evaluate(inputs))
    zigzag = Terms.of_model(theirs.latency) if theirs is not None else None
    _put_terms(row, "model", model)
    if zigzag is not None:
        _put_terms(row, "zigzag", zigzag)
    row["model_equals_zigzag"] = zigzag is not None and zigzag == model
    try:
        row["padded"] = " ".join(f"{d} {n}->{p}" for d, n, p in padded_dims(inputs))
        check = compare(inputs, replay_case(inputs), theirs, missing)
    except SpecError as exc:
        row["status"] = NOT_REPLAYED
        row["error"] = f"{type(exc).__name__}: {exc}"
        return row
    _put_terms(row, "replay", check.replay)
    causes: dict[str, int] = {}
    for _, cause, cycles in check.stall_causes:
        causes[cause] = causes.get(cause, 0) + cycles
    for cause, cycles in causes.items():
        row[f"stall_{cause}"] = cycles
    dram = [a for a in check.accesses if a.memory == inputs.accelerator.memories[-1].name]
    row["dram_rows"] = len(dram)
    row["dram_equal"] = sum(a.replay is not None and a.replay == a.zigzag for a in dram)
    row["mechanisms"] = " | ".join(check.explanations)
    return row


def _put_terms(row: dict, source: str, terms) -> None:
    values = (
        terms.latency_total,
        terms.ideal_cycles,
        terms.stall,
        terms.onloading,
        terms.offloading,
    )
    for column, value in zip(TERM_COLUMNS, values, strict=True):
        row[f"{source}_{column}"] = int(round(value))


def check_network(
    accelerator: str,
    workload: str,
    mapping: str,
    *,
    layers: list[str] | None = None,
    use_peer: bool = True,
    workers: int | None = None,
    progress: bool | None = None,
    on_layer: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """Every layer (or the named ones) of a workload, checked in worker processes; one row each.

    on_layer gets one line per layer as it finishes (layer_line), e.g. for a log where no
    progress bar can be drawn. Raise SpecError if the accelerator, mapping or workload cannot
    be read at all, or a named layer does not exist.
    """
    from cyclesim.analysis.parallel import map_tasks
    from cyclesim.checks.zigzag.read import workload_layers
    from cyclesim.checks.zigzag.read_accelerator import parse_accelerator
    from cyclesim.checks.zigzag.read_workload import layers_found

    parse_accelerator(accelerator)  # a broken accelerator file is one error, not one per layer
    names = workload_layers(workload, mapping)
    if layers:
        unknown = [name for name in layers if name not in names]
        if unknown:
            hint, listing = layers_found(names, unknown[0])
            raise SpecError(
                f"no layer named {', '.join(map(repr, unknown))}{hint}",
                file=workload,
                found=listing,
            )
    chosen = [name for name in names if not layers or name in layers]
    tasks = [
        LayerTask(names.index(name), name, accelerator, workload, mapping, use_peer)
        for name in chosen
    ]

    def done(outcome: TaskOutcome, finished: int) -> None:
        task = tasks[outcome.index]
        row = _row(task, outcome)
        assert on_layer is not None
        on_layer(layer_line(task, len(names), row, outcome.seconds, finished, len(tasks)))

    outcomes = map_tasks(
        check_layer,
        tasks,
        workers=workers,
        progress=progress,
        desc="layers",
        on_done=done if on_layer is not None else None,
    )
    return _as_table([_row(task, o) for task, o in zip(tasks, outcomes, strict=True)])


def _row(task: LayerTask, outcome: TaskOutcome) -> dict:
    """The layer's row: check_layer's, or its status and reason when the task raised."""
    if outcome.ok:
        return outcome.value
    error = outcome.error or ""
    return {"index": task.index, "layer": task.layer, "status": status_of(error), "error": error}


def status_of(error: str) -> str:
    """zigzag-dse found no mapping (or could not run), cyclesim's reader refused, or a bug."""
    if error.startswith(("ZigZagPeerError", "PeerUnavailable")):
        return NO_ZIGZAG_MAPPING
    return REFUSED if error.startswith("SpecError") else FAILED


def layer_line(
    task: LayerTask, n_layers: int, row: dict, seconds: float | None, finished: int, total: int
) -> str:
    """One finished layer for a log: 'layer 3/21 conv1: replay 123,456 vs ZigZag 120,000
    (12 s, 5 of 21 done)'; without zigzag-dse the model stands in, and a layer not checked
    gives its status and the first words of its reason."""
    status = row.get("status")
    if status == OK:
        theirs = ("ZigZag", row.get("zigzag_cycles"))
        if theirs[1] is None:
            theirs = ("model", row.get("model_cycles"))
        what = f"replay {row['replay_cycles']:,} vs {theirs[0]} {theirs[1]:,}"
    elif status == NO_ZIGZAG_MAPPING:  # zigzag-dse's reason is long; the table gives it whole
        what = status
    else:
        reason = " ".join(str(row.get("error") or "").split())
        what = f"{status} ({reason[:100]}{'...' if len(reason) > 100 else ''})"
    took = (
        "" if seconds is None else f"{seconds:.1f} s, " if seconds < 10 else f"{seconds:,.0f} s, "
    )
    return (
        f"layer {task.index + 1}/{n_layers} {task.layer}: {what} ({took}{finished} of {total} done)"
    )


def _as_table(rows: list[dict]) -> pd.DataFrame:
    """The rows as a table with fixed leading columns and int64 cycle counts (missing = <NA>)."""
    df = pd.DataFrame(rows)
    for source in SOURCES:
        for column in TERM_COLUMNS:
            df[f"{source}_{column}"] = df.get(f"{source}_{column}")
    lead = ["index", "layer", "status", "spatial", "temporal", "padded"]
    terms = [f"{s}_{c}" for s in SOURCES for c in TERM_COLUMNS]
    stalls = sorted(c for c in df.columns if c.startswith("stall_"))
    tail = ["model_equals_zigzag", "dram_rows", "dram_equal", "mechanisms", "error"]
    for column in lead + tail:
        if column not in df.columns:
            df[column] = None
    df = df[lead + terms + stalls + tail]
    counts = terms + stalls + ["dram_rows", "dram_equal"]
    df[counts] = df[counts].astype("Int64")
    df[stalls] = df[stalls].fillna(0).where(df["status"] == OK)
    return df.sort_values("index").reset_index(drop=True)


def totals(df: pd.DataFrame) -> dict[str, int]:
    """Layer counts, and whole-network latency per source over the layers every source has."""
    ok = df[df["status"] == OK]
    with_zigzag = df.dropna(subset=["zigzag_cycles"])
    both = ok.dropna(subset=["zigzag_cycles"])
    result = {
        "layers": len(df),
        "replayed": len(ok),
        "not_replayed": int((df["status"] == NOT_REPLAYED).sum()),
        # every layer a reader refused (cyclesim's, or zigzag-dse finding no mapping), and the
        # part zigzag-dse's: the key kept its meaning when the two got their own statuses
        "refused": int(df["status"].isin((REFUSED, NO_ZIGZAG_MAPPING)).sum()),
        "no_zigzag_mapping": int((df["status"] == NO_ZIGZAG_MAPPING).sum()),
        "failed": int((df["status"] == FAILED).sum()),
        "with_zigzag": len(with_zigzag),
        "model_equals_zigzag": int(with_zigzag["model_equals_zigzag"].astype(bool).sum()),
        "compared": len(both),
    }
    frame = both if len(both) else ok
    for source in SOURCES:
        column = frame[f"{source}_cycles"]
        result[f"{source}_cycles"] = int(column.sum()) if column.notna().any() else 0
    return result


def format_network(df: pd.DataFrame) -> str:
    """The per-layer table and its totals as text (pandas' formatter, one line per layer)."""
    shown = df[["layer", "status", "replay_cycles", "model_cycles", "zigzag_cycles"]].copy()
    ratio = df["replay_cycles"].astype("Float64") / df["zigzag_cycles"].astype("Float64")
    shown["replay/zigzag"] = ratio.round(3)
    stall_columns = [c for c in df.columns if c.startswith("stall_")]
    shown["largest stall"] = [
        _largest(row, stall_columns) if row["status"] == OK else "(why: below)"
        for _, row in df.iterrows()
    ]
    shown["most of the gap"] = [_largest_gap(row) for _, row in df.iterrows()]
    shown = shown.astype(object).where(shown.notna(), "-")
    for column in ("replay_cycles", "model_cycles", "zigzag_cycles"):  # 303,186 as in the totals
        shown[column] = [v if v == "-" else f"{int(v):,}" for v in shown[column]]
    text = shown.to_string(index=False)
    t = totals(df)
    lines = [text, ""]
    # each layer not replayed says why in full, below the table (cut to fit a column it
    # lost its reason and widened every row)
    lines += [f"{row['layer']}: {row['error']}" for _, row in df.iterrows() if row["status"] != OK]
    if len(lines) > 2:
        lines.append("")
    lines += [GAP_NOTE, ""]
    left_out = status_counts(df)
    lines.append(
        f"{t['replayed']} of {t['layers']} layers replayed{f' ({left_out})' if left_out else ''}; "
        f"our model equals zigzag-dse on {t['model_equals_zigzag']} of the {t['with_zigzag']} "
        "layers zigzag-dse evaluated"
    )
    if t["compared"]:
        lines.append(
            f"total over the {t['compared']} layers with a zigzag-dse result: replay "
            f"{t['replay_cycles']:,} cycles, model {t['model_cycles']:,}, zigzag-dse {t['zigzag_cycles']:,} "
            f"(replay / zigzag-dse = {t['replay_cycles'] / max(t['zigzag_cycles'], 1):.3f})"
        )
    else:
        lines.append(f"total: replay {t['replay_cycles']:,} cycles, model {t['model_cycles']:,}")
    return "\n".join(lines)


def status_counts(df: pd.DataFrame) -> str:
    """'8 with no ZigZag mapping, 1 not replayed': the layers not checked, by status."""
    counts = df["status"].value_counts()
    return ", ".join(
        f"{counts[status]} {phrase}"
        for status, phrase in STATUS_PHRASES.items()
        if counts.get(status)
    )


GAP_NOTE = (
    "most of the gap: the phase (onload, compute = ideal + stall, offload) where the replay\n"
    "differs most from zigzag-dse; why, mechanism by mechanism: the table file's `mechanisms`\n"
    "column, or `--layer NAME` for one layer term by term"
)


def _largest_gap(row: pd.Series) -> str:
    """The phase where the replay differs most from zigzag-dse (else our model), signed:
    ZigZag splits ideal and stall differently (its ideal assumes every PE busy), so the two
    are compared as one compute phase."""
    source = "zigzag" if pd.notna(row.get("zigzag_cycles")) else "model"
    if row.get("status") != OK or pd.isna(row.get(f"{source}_cycles")):
        return "-"
    gaps = {}
    for phase, terms in (("onload", ("onload",)), ("compute", ("ideal", "stall")),
                         ("offload", ("offload",))):  # fmt: skip
        values = [row.get(f"{side}_{t}") for side in ("replay", source) for t in terms]
        if any(pd.isna(v) for v in values):
            return "-"
        half = len(terms)
        gaps[phase] = int(sum(values[:half])) - int(sum(values[half:]))
    phase = max(gaps, key=lambda p: abs(gaps[p]))
    return f"{phase} {gaps[phase]:+,}" if gaps[phase] else "none"


def _largest(row: pd.Series, columns: list[str]) -> str:
    values = {c.removeprefix("stall_"): int(row[c]) for c in columns if pd.notna(row[c]) and row[c]}
    if not values:
        return "none"
    cause = max(values, key=lambda c: values[c])
    return f"{cause} {values[cause]:,}"


@atomic_output
def write_table(df: pd.DataFrame, path: str | Path) -> None:
    """The per-layer table as CSV or Parquet, chosen by the suffix. Raise CyclesimError otherwise."""
    suffix = Path(path).suffix.lower()
    if suffix == ".csv":
        df.to_csv(path, index=False, lineterminator="\n")
    elif suffix in (".parquet", ".pq"):
        df.to_parquet(path, index=False)
    else:
        raise CyclesimError(f"layer table {path}: unknown suffix {suffix!r}; use .csv or .parquet")
