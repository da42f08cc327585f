"""The Python API, step by step: replay, read the tables, change a field, write traces, sweep.

    python examples/api/simulate.py --out out/api

Each step prints what it found; the same calls work in a notebook.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import cyclesim

HERE = Path(__file__).resolve().parent
ARCH = HERE.parents[1] / "hw_models" / "tpu_like.yaml"
WORKLOAD = HERE.parent / "tpu_gemm" / "workload.yaml"
MAPPING = HERE.parent / "tpu_gemm" / "mapping.yaml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="out/api", help="folder for traces and the sweep")
    parser.add_argument("--workers", type=int, default=2, help="Dask workers for the sweep")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    # 1. One replay from paths (spec objects work too). A Result holds pandas tables.
    result = cyclesim.simulate(ARCH, WORKLOAD, MAPPING)
    print(f"1. {result!r}")
    print(result.phases.to_string(index=False))
    print(result.stalls[["phase", "cause", "memory", "tensor", "port", "cycles"]].head(4))

    # 2. What would a DRAM read port twice as wide buy? Change one field, no YAML edited;
    #    the changed architecture is validated again like a file.
    arch = cyclesim.load_architecture(str(ARCH))
    wider = arch.with_port_width("DRAM", "rd", 2 * arch.memory("DRAM").ports[0].width_bits)
    faster = cyclesim.simulate(wider, WORKLOAD, MAPPING)
    print(f"2. DRAM rd x2: {result.cycles:,} -> {faster.cycles:,} cycles")
    slower = arch.with_field("memories.DRAM.ports.rd.latency_cycles", 400)
    print(f"   DRAM rd latency 400: {cyclesim.simulate(slower, WORKLOAD, MAPPING).cycles:,} cycles")

    # 3. Accesses per (einsum, tensor, memory, action), traces, JSON.
    dram = result.accesses.query("memory == 'DRAM'")
    print(
        "3. DRAM traffic (bits):",
        dict(zip(dram["tensor"] + " " + dram["action"], dram["bits"], strict=True)),
    )
    written = cyclesim.write_vcd(result, out / "run.vcd")
    written += cyclesim.write_perfetto(result, out / "run.perfetto.json")
    result.to_json(out / "run.json")
    print("   wrote", ", ".join(p.name for p in written), "and run.json")
    events = cyclesim.traced(result).events  # the run replayed once with tracing (the files did)
    print(f"   {len(events):,} events; first:", events.iloc[0].to_dict())

    # 4. A sweep from Python: the same as `cyclesim sweep dram_width_sweep.yaml` (Dask workers).
    run = cyclesim.sweep(HERE / "dram_width_sweep.yaml", out, workers=args.workers)
    columns = ["DRAM.rd.width_bits", "DRAM.rd.latency_cycles", "cycles", "onload_cycles"]
    print(f"4. sweep: {run.computed} computed, {run.cached} cached")
    print(run.table[columns].to_string(index=False))
    print("   wrote", ", ".join(p.name for p in run.files))


if __name__ == "__main__":
    main()
