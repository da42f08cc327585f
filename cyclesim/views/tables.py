"""The events long table and its writers (CSV, Parquet), plus per-port activity from the grants."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from cyclesim.errors import TraceError
from cyclesim.results import SimResult


def events(res: SimResult) -> pd.DataFrame:
    """start, end, resource, kind, einsum, tensor, memory, tile, bits: one row per traced event.

    Raise TraceError if the run was not traced.
    """
    if res.raw.rec.transfers is None:
        raise TraceError("the events table needs a traced run: replay with trace=True")
    df = res.events_table.copy()
    return df.astype({"start": "int64", "end": "int64", "tile": "int64", "bits": "int64"})


def write_events(res: SimResult, path: str | Path) -> pd.DataFrame:
    """Write the events table as CSV or Parquet, chosen by the suffix (.csv, .parquet)."""
    df = events(res)
    suffix = Path(path).suffix.lower()
    if suffix == ".csv":
        df.to_csv(path, index=False, lineterminator="\n")
    elif suffix in (".parquet", ".pq"):
        df.to_parquet(path, index=False)
    else:
        raise TraceError(f"events table {path}: unknown suffix {suffix!r}; use .csv or .parquet")
    return df


def port_activity(res: SimResult) -> pd.DataFrame:
    """Per port: busy cycles and grants (from the always-on grant records), memory, width."""
    plan, rec = res.raw.plan, res.raw.rec
    rows = []
    for p in plan.ports:
        grants = rec.grants.get(p.key, [])
        busy = sum((g[1] if g[1] is not None else res.cycles) - g[0] for g in grants)
        rows.append(
            dict(
                port=p.key,
                memory=p.memory,
                width_bits=p.width_bits,
                grants=len(grants),
                busy_cycles=busy,
            )
        )
    return pd.DataFrame(
        rows, columns=["port", "memory", "width_bits", "grants", "busy_cycles"]
    ).astype({"width_bits": "int64", "grants": "int64", "busy_cycles": "int64"})
