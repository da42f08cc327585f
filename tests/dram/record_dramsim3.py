"""Record DRAMsim3's numbers for the validation patterns (run by hand; CI reads the JSON).

Usage: python tests/dram/record_dramsim3.py DRAMSIM3MAIN CONFIGS_DIR COMMIT
DRAMSIM3MAIN is a `dramsim3main` built with `-DCMD_TRACE=1` (its command trace gives every
command's cycle), CONFIGS_DIR its `configs/` folder, COMMIT the source commit it was built
from. For each pattern and config it writes the trace, runs DRAMsim3 for long enough, and
records the cycle at which the last data burst ends (last column command + read or write
delay), the row-hit rate and the command counts, into `dramsim3_reference.json`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

from patterns import PATTERNS, write_trace  # noqa: E402

from cyclesim.dram.load import load_dram_config  # noqa: E402

CONFIGS = ("DDR4_8Gb_x8_2400", "HBM2_8Gb_x128")


def run_one(binary: str, ini: Path, trace: Path, work: Path) -> dict:
    subprocess.run([binary, str(ini), "-c", "400000", "-t", str(trace), "-o", str(work)],
                   cwd=work, capture_output=True, check=True)  # fmt: skip
    config = load_dram_config(ini)
    end = 0
    for cmd_trace in sorted(work.glob("*cmd.trace")):
        for line in cmd_trace.read_text().splitlines():
            cycle, kind = int(line.split()[0]), line.split()[1]
            if kind.startswith("read"):
                end = max(end, cycle + config.read_delay)
            elif kind.startswith("write"):
                end = max(end, cycle + config.write_delay)
    stats = json.loads((work / "dramsim3.json").read_text()).values()
    total = {k: sum(s[k] for s in stats) for k in (
        "num_read_cmds", "num_write_cmds", "num_read_row_hits", "num_write_row_hits",
        "num_act_cmds", "num_pre_cmds", "num_ref_cmds", "num_reads_done")}  # fmt: skip
    columns = total["num_read_cmds"] + total["num_write_cmds"]
    hits = total["num_read_row_hits"] + total["num_write_row_hits"]
    return {"cycles": end, "row_hit_rate": round(hits / columns, 6), **total}


def main(binary: str, configs_dir: str, commit: str) -> None:
    out = {"dramsim3_commit": commit, "cycles_simulated": 400000, "results": {}}
    for name in CONFIGS:
        for pattern, make in PATTERNS.items():
            with tempfile.TemporaryDirectory() as tmp:
                work = Path(tmp)
                trace = write_trace(work / f"{pattern}.trace", make())
                out["results"][f"{name}/{pattern}"] = run_one(
                    binary, Path(configs_dir) / f"{name}.ini", trace, work
                )
            print(name, pattern, out["results"][f"{name}/{pattern}"], flush=True)
    (HERE / "dramsim3_reference.json").write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:4])
