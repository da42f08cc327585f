"""L1 tables of a replay whose architecture has an allocator: the allocation log and the peak."""

from __future__ import annotations

import pandas as pd

from cyclesim.engine.run import RawRun

PEAK_COLUMNS = [
    "memory",
    "policy",
    "peak_used_bytes",
    "peak_cycle",
    "peak_cb_end",
    "lowest_heap_address",
    "bank_size_bytes",
    "l1_size_bytes",
    "headroom_bytes",
    "allocations",
]


def l1_log_table(raw: RawRun) -> pd.DataFrame:
    """Every allocator event at its cycle (engine.l1.LOG_COLUMNS); empty without an allocator."""
    from cyclesim.engine.l1 import LOG_COLUMNS

    rows = raw.rec.l1_log or []
    df = pd.DataFrame(rows, columns=list(LOG_COLUMNS))
    return df.astype(
        {
            "cycle": "int64",
            "seq": "int64",
            "address": "Int64",
            "size_bytes": "int64",
            "used_bytes": "int64",
        }
    )


def l1_peak_table(raw: RawRun, log: pd.DataFrame) -> pd.DataFrame:
    """One row per allocator memory: peak bytes in use, when, the CB region's peak end, headroom."""
    rows = []
    for memory, config in raw.plan.allocators:
        m = log[log["memory"] == memory]
        at = m["used_bytes"].idxmax() if not m.empty else None
        peak = int(m["used_bytes"].max()) if not m.empty else 0
        rows.append(
            dict(
                memory=memory,
                policy=str(config.policy),
                peak_used_bytes=peak,
                peak_cycle=int(m.loc[at, "cycle"]) if at is not None else 0,
                peak_cb_end=int(m["cb_end"].max()) if not m.empty else config.unreserved_base_bytes,
                lowest_heap_address=int(m["lowest_heap_address"].min())
                if not m.empty
                else config.heap_top,
                bank_size_bytes=config.bank_size_bytes,
                l1_size_bytes=config.l1_size_bytes,
                headroom_bytes=config.bank_size_bytes - peak,
                allocations=int((m["action"] == "alloc").sum()),
            )
        )
    return pd.DataFrame(rows, columns=PEAK_COLUMNS)
