"""`cyclesim dram CONFIG TRACE`: time a DRAMsim3-format trace on a DRAM config."""

from __future__ import annotations

import argparse
import json
import sys

from cyclesim.dram.presets import PRESET_NAMES


def register(sub) -> None:
    p = sub.add_parser(
        "dram",
        help="time a DRAM access trace (DRAMsim3 format) on a standard's timing",
        description=(
            "Replay a trace of '0xADDRESS READ|WRITE CYCLE' lines through an open-page "
            "controller per channel (FR-FCFS, refresh) and report the cycles to the end of "
            "the last data burst, the row-hit rate, bandwidth, read latency and command counts."
        ),
    )
    p.add_argument("config", help=f"a preset ({', '.join(PRESET_NAMES)}) or a DRAMsim3 .ini file")
    p.add_argument("trace", help="trace file: one '0xADDRESS READ|WRITE CYCLE' per line")
    p.add_argument("--channels", type=int, help="override the number of channels")
    p.add_argument("--address-mapping", help="override the address mapping, e.g. rochrababgco")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from cyclesim.dram.load import load_dram_config
    from cyclesim.dram.trace import read_trace, simulate_trace
    from cyclesim.errors import OptionError, SpecError

    overrides = {}
    if args.channels is not None:
        overrides["channels"] = args.channels
    if args.address_mapping is not None:
        overrides["address_mapping"] = args.address_mapping
    try:
        config = load_dram_config(args.config, overrides)
    except SpecError as exc:  # a wrong --channels / --address-mapping is the option's fault
        if exc.field not in overrides:
            raise
        flag = "--" + exc.field.replace("_", "-")
        expected = f"; expected {exc.expected}" if exc.expected else ""
        raise OptionError(f"{flag} {overrides[exc.field]}: {exc.detail}{expected}") from None
    requests = read_trace(args.trace)
    show = None if args.quiet else _progress_line(len(requests))
    result = simulate_trace(config, requests, progress=show)
    if args.json:
        from cyclesim.results.schema import versioned

        json.dump(versioned(result.to_json_dict()), sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    lat = result
    print(f"{_count(result.requests, 'request')} ({_count(result.reads, 'read')}, "
          f"{_count(result.writes, 'write')}) on {config.name}: {config.protocol}, "
          f"{_count(config.channels, 'channel')} x {_count(config.ranks, 'rank')} x "
          f"{config.banks} banks, tCK {config.tck_ns} ns")  # fmt: skip
    print(f"  cycles to the last data burst  {result.cycles:,}  "
          f"({result.cycles * config.tck_ns:,.1f} ns)")  # fmt: skip
    print(f"  row-hit rate                   {result.row_hit_rate:.3f}  "
          f"({result.row_hits:,} of {result.read_commands + result.write_commands:,} "
          "column commands)")  # fmt: skip
    print(f"  bandwidth                      {result.bandwidth_gb_per_s:.2f} GB/s")
    if result.reads:
        print(f"  read latency (cycles)          mean {lat.read_latency_mean:.1f}, p50 "
              f"{lat.read_latency_p50:.0f}, p95 {lat.read_latency_p95:.0f}, max {lat.read_latency_max}")  # fmt: skip
    else:  # no read to measure: not a latency of 0
        print("  read latency (cycles)          - (no reads)")
    print(f"  commands                       {result.read_commands:,} read, "
          f"{result.write_commands:,} write, {result.activates:,} activate, "
          f"{result.precharges:,} precharge, {result.refreshes:,} refresh")  # fmt: skip
    return 0


def _progress_line(total: int):
    """A line every few seconds on stderr: requests in, the cycle reached, the time so far."""
    import logging
    import time

    start = time.monotonic()
    log = logging.getLogger("cyclesim")

    def show(done: int, _total: int, cycle: int) -> None:
        log.warning(
            "dram: %s of %s requests in, cycle %s, after %.0f s",
            f"{done:,}", f"{total:,}", f"{cycle:,}", time.monotonic() - start,
        )  # fmt: skip

    return show


def _count(n: int, noun: str) -> str:
    """'1 read', '2 reads'."""
    return f"{n:,} {noun}" + ("" if n == 1 else "s")
