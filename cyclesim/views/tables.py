"""The events long table and its writers (CSV, Parquet). Per-port activity: Result.port_table."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from cyclesim.errors import TraceError
from cyclesim.outputs import atomic_output
from cyclesim.results import Result


def events(res: Result) -> pd.DataFrame:
    """start, end, resource, kind, einsum, tensor, memory, tile, bits: one row per traced event.

    Raise TraceError if the run was not traced.
    """
    if res.raw.rec.transfers is None:
        raise TraceError("the events table needs a traced run: replay with trace=True")
    df = res.events.copy()
    return df.astype({"start": "int64", "end": "int64", "tile": "int64", "bits": "int64"})


@atomic_output
def write_events(res: Result, path: str | Path) -> pd.DataFrame:
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
