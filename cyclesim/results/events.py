"""The traced events of a run as one long table (transfers, PE segments)."""

from __future__ import annotations

import pandas as pd

from cyclesim.engine.run import RawRun

COLUMNS = ["start", "end", "resource", "kind", "einsum", "tensor", "memory", "tile", "bits"]


def events_table(raw: RawRun) -> pd.DataFrame:
    """start, end, resource, kind, einsum, tensor, memory, tile index, bits — one row per event.

    kind: a transfer's TransferKind (fill, reload, write-back), or compute for a PE segment."""
    rec, plan = raw.rec, raw.plan
    rows = []
    for start, end, node, kind, tile, bits in rec.transfers or ():
        n = plan.nodes[node]
        rows.append(
            (start, end, f"{n.label()} {kind}", kind, n.owner, n.tensor, n.memory, tile, bits)
        )
    for start, end, li, g in rec.pe_segments or ():
        leaf = plan.leaves[li]
        rows.append((start, end, "PE array", "compute", leaf.einsum, None, None, g, 0))
    df = pd.DataFrame(rows, columns=COLUMNS)
    return df.sort_values(["start", "resource"], kind="stable").reset_index(drop=True)
