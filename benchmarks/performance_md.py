"""Run the benchmarks and write what they print to docs/performance.md (`make bench`).

Measurements are never typed by hand: this page is the benchmarks' own output, with the
machine and the date it was taken on, so a reader sees what was measured where.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
from pathlib import Path

HEADER = """# Performance

Written by `make bench` (`benchmarks/performance_md.py`): each section is what one benchmark
printed, measured side by side in one run on the machine named below. Do not edit by hand;
run `make bench` again.

Machine: {machine}, {cpus} CPUs, Python {python}; taken {date}.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the Markdown page to write")
    parser.add_argument("benchmarks", nargs="+", help="benchmark scripts, run in this order")
    args = parser.parse_args(argv)
    parts = [
        HEADER.format(
            machine=platform.machine(),
            cpus=os.cpu_count(),
            python=platform.python_version(),
            date=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        )
    ]
    status = 0
    for script in args.benchmarks:
        print(f"== {script}", flush=True)
        done = subprocess.run(
            [sys.executable, script], capture_output=True, text=True, env=os.environ.copy()
        )
        sys.stdout.write(done.stdout)
        sys.stderr.write(done.stderr[-2000:] if done.returncode else "")
        status = status or done.returncode
        parts.append(f"\n## `{script}`\n\n```text\n{done.stdout.rstrip()}\n```\n")
        if done.returncode:
            parts.append(f"\nexited {done.returncode}\n")
    tmp = args.out.with_suffix(args.out.suffix + ".tmp")
    tmp.write_text("".join(parts), encoding="utf-8")
    tmp.replace(args.out)
    print(f"wrote {args.out}")
    return status


if __name__ == "__main__":
    sys.exit(main())
