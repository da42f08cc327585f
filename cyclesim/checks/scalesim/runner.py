"""Run the real SCALE-Sim 3.0.0 on a config and topology; print one JSON object on stdout.

Executed by `cyclesim.checks.scalesim.peer` with SCALE-Sim's own interpreter
(`.venv-scalesim`, numpy < 2.4); imports nothing from cyclesim. Each layer runs alone (a
one-row copy of the topology) so its wall time is its own; traces are not written
(`save_disk_space=True`) and a header-only layout CSV stands in for the one SCALE-Sim always
parses. Per layer: the compute report, the DRAM access counts and the wall time; for the
whole run the peak memory.
"""

import contextlib
import io
import json
import os
import resource
import sys
import tempfile
import time


def main(config: str, topology: str, gemm: bool, names: list) -> None:
    import numpy
    from scalesim.scale_sim import scalesim

    with open(topology) as f:
        rows = [r for r in f if r.strip()]
    header, body = rows[0], rows[1:]
    layers = []
    with tempfile.TemporaryDirectory() as out:
        layout = os.path.join(out, "layout.csv")
        with open(layout, "w") as f:
            f.write("Layer name,\n")
        for row in body:
            name = row.split(",")[0].strip()
            if names and name not in names:
                continue
            topo = os.path.join(out, "layer.csv")
            with open(topo, "w") as f:
                f.write(header + row)
            t0, c0 = time.perf_counter(), time.process_time()
            sim = scalesim(
                save_disk_space=True,
                verbose=False,
                config=config,
                topology=topo,
                layout=layout,
                input_type_gemm=gemm,
            )
            with contextlib.redirect_stdout(io.StringIO()):  # its progress and report prints
                sim.run_scale(top_path=out)
            seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
            lo = sim.runner.single_layer_sim_object_list[0]
            incl, total, stall, util, mapping_eff, compute_util = lo.get_compute_report_items()
            detail = lo.get_detail_report_items()
            layers.append(
                {
                    "name": name,
                    "total_cycles_incl_prefetch": int(incl),
                    "total_cycles": int(total),
                    "stall_cycles": int(stall),
                    "overall_util_percent": float(util),
                    "mapping_efficiency_percent": float(mapping_eff),
                    "compute_util_percent": float(compute_util),
                    "dram_reads_ifmap": int(detail[11]),
                    "dram_reads_filter": int(detail[14]),
                    "dram_writes_ofmap": int(detail[17]),
                    "seconds": seconds,
                    "cpu_seconds": cpu,
                }
            )
    json.dump(
        {
            "layers": layers,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "numpy_version": numpy.__version__,
            "python_version": sys.version.split()[0],
        },
        sys.stdout,
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3] == "gemm", sys.argv[4:])
