"""ZigZag's shipped inputs, every digital hardware x mapping pair on every resnet18 layer.

Per pair: layers imported of all, layers where zigzag-dse itself finds no mapping, our model
== zigzag-dse, layers replayed, DRAM word rows equal, the pair's summed wall time (CPU of
the replays runs in parallel) and the worst layer's peak memory. Each layer runs in a process
of its own (map_tasks(fresh_process=True)), so its peak RSS is its own.

    nice python benchmarks/zigzag_matrix.py --workers 2 [--pairs gemm_l1,tpu_like] [--csv out.csv]

Needs zigzag-dse installed (the shipped inputs and the peer); it takes a while on two cores.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

from cyclesim.checks.zigzag.shipped import PAIRS  # the 14 digital pairs zigzag-dse ships

NO_MAPPING = "NoValidLoopOrderingFound"  # zigzag-dse's own refusal: it finds no mapping


def measured_layer(task) -> dict:
    """check_layer's row plus the layer's wall seconds and this process's peak RSS (KB)."""
    from cyclesim.checks.zigzag.network import check_layer
    from cyclesim.errors import CyclesimError

    start = time.perf_counter()
    try:
        row = check_layer(task)
    except CyclesimError as exc:
        row = {"status": "refused", "error": f"{type(exc).__name__}: {exc}"}
    except MemoryError:
        row = {"status": "failed", "error": "MemoryError"}
    row["wall_seconds"] = time.perf_counter() - start
    row["peak_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return row


def summarize(pair: tuple[str, str], rows: list[dict]) -> dict:
    """One line of the matrix from a pair's layer rows."""
    no_mapping = sum(NO_MAPPING in (r.get("error") or "") for r in rows)
    imported = [r for r in rows if r.get("model_cycles") is not None]
    replayed = [r for r in rows if r.get("status") == "ok"]
    return {
        "hardware": pair[0],
        "mapping": pair[1],
        "layers": len(rows),
        "imported": len(imported),
        "zigzag_no_mapping": no_mapping,
        "model_equals_zigzag": sum(bool(r.get("model_equals_zigzag")) for r in imported),
        "replayed": len(replayed),
        "dram_rows": sum(int(r.get("dram_rows") or 0) for r in replayed),
        "dram_equal": sum(int(r.get("dram_equal") or 0) for r in replayed),
        "wall_seconds": round(sum(r["wall_seconds"] for r in rows), 1),
        "slowest_layer_seconds": round(max((r["wall_seconds"] for r in rows), default=0), 1),
        "peak_mb": round(max((r["peak_kb"] for r in rows), default=0) / 1024),
        "failed": [r.get("layer") for r in rows if r.get("status") == "failed"],
        # whole-network latency over the layers both replayed and zigzag-dse has
        "replay_total": sum(int(r["replay_cycles"]) for r in replayed if _both(r)),
        "zigzag_total": sum(int(r["zigzag_cycles"]) for r in replayed if _both(r)),
    }


def _both(row: dict) -> bool:
    return row.get("replay_cycles") is not None and row.get("zigzag_cycles") is not None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--pairs", help="comma-separated hardware or mapping names (default: all)")
    parser.add_argument("--model", default="resnet18", help="shipped ONNX model (resnet18)")
    parser.add_argument("--csv", help="also write every layer's row to this CSV")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args()

    import zigzag

    from cyclesim.analysis.parallel import map_tasks
    from cyclesim.checks.zigzag.network import LayerTask
    from cyclesim.checks.zigzag.read import workload_layers

    inputs = Path(zigzag.__file__).parent / "inputs"
    workload = str(inputs / "workload" / f"{args.model}.onnx")
    wanted = set(args.pairs.split(",")) if args.pairs else None
    pairs = [p for p in PAIRS if wanted is None or wanted & set(p)]
    tasks, owner = [], []
    for pair in pairs:
        hardware = str(inputs / "hardware" / f"{pair[0]}.yaml")
        mapping = str(inputs / "mapping" / f"{pair[1]}.yaml")
        for i, name in enumerate(workload_layers(workload, mapping)):
            tasks.append(LayerTask(i, name, hardware, workload, mapping, True))
            owner.append(pair)
    start = time.perf_counter()
    outcomes = map_tasks(
        measured_layer,
        tasks,
        workers=args.workers,
        progress=False if args.no_progress else None,
        desc="layers",
        fresh_process=True,
    )
    wall = time.perf_counter() - start
    rows_by_pair: dict[tuple, list[dict]] = {p: [] for p in pairs}
    every = []
    for task, pair, outcome in zip(tasks, owner, outcomes, strict=True):
        row = outcome.value if outcome.ok else {"status": "failed", "error": outcome.error}
        row.setdefault("wall_seconds", 0.0)
        row.setdefault("peak_kb", 0)
        row["layer"] = task.layer
        rows_by_pair[pair].append(row)
        every.append({"hardware": pair[0], "mapping": pair[1], **row})
    head = (
        f"{'hardware':<20} {'mapping':<26} {'imported':>9} {'no map':>6} {'model==zz':>9} "
        f"{'replayed':>8} {'DRAM eq':>9} {'wall s':>7} {'max s':>6} {'peak MB':>7} "
        f"{'replay total':>13} {'zigzag total':>13}"
    )
    print(head)
    for pair in pairs:
        s = summarize(pair, rows_by_pair[pair])
        print(
            f"{s['hardware']:<20} {s['mapping']:<26} {s['imported']:>4}/{s['layers']:<4} "
            f"{s['zigzag_no_mapping']:>6} {s['model_equals_zigzag']:>4}/{s['imported']:<4} "
            f"{s['replayed']:>8} {s['dram_equal']:>4}/{s['dram_rows']:<4} "
            f"{s['wall_seconds']:>7} {s['slowest_layer_seconds']:>6} {s['peak_mb']:>7} "
            f"{s['replay_total']:>13,} {s['zigzag_total']:>13,}"
            + (f"  failed: {', '.join(s['failed'])}" if s["failed"] else "")
        )
    print(f"{len(tasks)} layer checks in {wall:.0f} s wall with {args.workers} worker(s)")
    if args.csv:
        import pandas as pd

        pd.DataFrame(every).to_csv(args.csv, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
