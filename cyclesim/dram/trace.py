"""Trace-driven DRAM timing: DRAMsim3's trace format in, cycles, row hits and latencies out.

A trace line is `0xADDRESS READ|WRITE CYCLE`. Requests enter in order, at most one per cycle
and no earlier than their cycle; a request whose channel's queue is full waits, and so does
every request behind it (DRAMsim3's front end). The run ends at the end of the last data
burst; writes still buffered when the trace ends are drained.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cyclesim.dram.config import DramConfig
from cyclesim.dram.controller import Channel
from cyclesim.dram.frontend import FrontEnd
from cyclesim.dram.frontend import Request as FrontRequest
from cyclesim.dram.timing import ACTIVATE, NAMES, PRECHARGE, READS, REFRESH, REFRESH_BANK, WRITES
from cyclesim.errors import SpecError

WRITE_WORDS = {"WRITE", "write", "P_MEM_WR", "BOFF"}  # DRAMsim3's spellings of a write
READ_WORDS = {"READ", "read", "P_MEM_RD", "P_FETCH", "P_LOCK_RD", "P_LOCK_WR"}
MAX_REQUESTS = 10_000_000


@dataclass(frozen=True, slots=True)
class Request:
    address: int
    is_write: bool
    cycle: int


@dataclass(frozen=True)
class DramRun:
    """The outcome of a trace: totals over all channels."""

    config: str
    requests: int
    reads: int
    writes: int
    cycles: int  # to the end of the last data burst
    read_commands: int
    write_commands: int
    row_hits: int
    activates: int
    precharges: int
    refreshes: int
    read_latency_mean: float
    read_latency_p50: float
    read_latency_p95: float
    read_latency_max: int
    bytes_moved: int
    tck_ns: float
    commands: tuple[tuple[int, int, int, int, int, int, int, int], ...] = ()  # with the channel

    @property
    def row_hit_rate(self) -> float:
        columns = self.read_commands + self.write_commands
        return self.row_hits / columns if columns else 0.0

    @property
    def bandwidth_gb_per_s(self) -> float:
        return self.bytes_moved / (self.cycles * self.tck_ns) if self.cycles else 0.0

    def to_json_dict(self) -> dict:
        return {
            "config": self.config,
            "requests": self.requests,
            "reads": self.reads,
            "writes": self.writes,
            "cycles": self.cycles,
            "row_hit_rate": round(self.row_hit_rate, 6),
            "bandwidth_gb_per_s": round(self.bandwidth_gb_per_s, 6),
            "read_latency_cycles": {  # null without reads: nothing was measured
                "mean": round(self.read_latency_mean, 3) if self.reads else None,
                "p50": self.read_latency_p50 if self.reads else None,
                "p95": self.read_latency_p95 if self.reads else None,
                "max": self.read_latency_max if self.reads else None,
            },
            "commands": {
                "read": self.read_commands,
                "write": self.write_commands,
                "activate": self.activates,
                "precharge": self.precharges,
                "refresh": self.refreshes,
            },
            "row_hits": self.row_hits,
        }


def read_trace(path: str | Path) -> list[Request]:
    """Parse a DRAMsim3 trace; a bad line is refused with the file and line, a trace without
    requests (empty, or comments only) with the file."""
    name = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise SpecError(f"cannot read the trace ({exc.strerror})", file=name) from None
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError as exc:
        raise SpecError(f"not a text trace (byte {exc.start} is not ASCII)", file=name,
                        expected="lines '0xADDRESS READ|WRITE CYCLE'") from None  # fmt: skip
    out: list[Request] = []
    last = 0
    for number, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        if len(parts) != 3 or (parts[1] not in WRITE_WORDS and parts[1] not in READ_WORDS):
            raise SpecError("not a trace line", file=name, line=number, found=line[:80],
                            expected="'0xADDRESS READ|WRITE CYCLE'")  # fmt: skip
        try:
            address = int(parts[0], 16)
            cycle = int(parts[2], 10)
        except ValueError:
            raise SpecError("address must be hexadecimal and cycle decimal", file=name,
                            line=number, found=line[:80]) from None  # fmt: skip
        if not 0 <= address < 1 << 64 or not 0 <= cycle < 1 << 48:
            raise SpecError("out of range", file=name, line=number, found=line[:80],
                            expected="a 64-bit address and a cycle below 2**48")  # fmt: skip
        if cycle < last:
            raise SpecError("cycles go backwards", file=name, line=number, found=cycle,
                            expected=f"at least {last} (requests enter in order)")  # fmt: skip
        last = cycle
        out.append(Request(address, parts[1] in WRITE_WORDS, cycle))
        if len(out) > MAX_REQUESTS:
            raise SpecError("too many requests", file=name, line=number,
                            expected=f"at most {MAX_REQUESTS}")  # fmt: skip
    if not out:  # else a report of 0 cycles and a read latency of 0, as if measured
        raise SpecError("no requests in the trace", file=name,
                        expected="lines '0xADDRESS READ|WRITE CYCLE'")  # fmt: skip
    return out


def simulate_trace(
    config: DramConfig,
    requests: Iterable[Request],
    *,
    keep_commands: bool = False,
    skip_idle: bool = True,
) -> DramRun:
    """Replay requests through one controller per channel; exact per cycle, idle spans skipped.

    `skip_idle=False` ticks every cycle (the reference the skipping is tested against).
    """
    reqs = list(requests)
    front = FrontEnd(config, keep_commands=keep_commands)
    for r in reqs:
        front.push(FrontRequest(r.address, r.is_write, r.cycle))
    front.run_until(None, flush_at_end=True, skip_idle=skip_idle)
    return _summarise(config, reqs, front.channels)


def completion_cycles(config: DramConfig, requests: Iterable[Request]) -> list[int]:
    """Each request's completion cycle (its read data back, its write accepted), in trace
    order: what the replay's in-loop controller gives the same requests (engine/dram_loop.py)."""
    pushed = [FrontRequest(r.address, r.is_write, r.cycle) for r in requests]
    front = FrontEnd(config)
    for r in pushed:
        front.push(r)
    front.run_until(None, flush_at_end=True)
    return [r.complete for r in pushed]


def _summarise(config: DramConfig, reqs: list[Request], channels: list[Channel]) -> DramRun:
    commands = [0] * len(NAMES)
    row_hits, latencies, end = 0, [], 0
    log = []
    for ch in channels:
        s = ch.stats
        for k, v in enumerate(s.commands):
            commands[k] += v
        row_hits += s.read_row_hits + s.write_row_hits
        latencies.extend(s.read_latencies)
        end = max(end, s.last_data_cycle)
        if s.log is not None:
            log.extend((ch.index, *entry) for entry in s.log)
    latencies.sort()
    reads = sum(1 for r in reqs if not r.is_write)
    columns = sum(commands[k] for k in READS) + sum(commands[k] for k in WRITES)
    return DramRun(
        config=config.name,
        requests=len(reqs),
        reads=reads,
        writes=len(reqs) - reads,
        cycles=end,
        read_commands=sum(commands[k] for k in READS),
        write_commands=sum(commands[k] for k in WRITES),
        row_hits=row_hits,
        activates=commands[ACTIVATE],
        precharges=commands[PRECHARGE],
        refreshes=commands[REFRESH] + commands[REFRESH_BANK],
        read_latency_mean=statistics.fmean(latencies) if latencies else 0.0,
        read_latency_p50=_percentile(latencies, 0.50),
        read_latency_p95=_percentile(latencies, 0.95),
        read_latency_max=latencies[-1] if latencies else 0,
        bytes_moved=columns * config.request_bytes,
        tck_ns=config.tck_ns,
        commands=tuple(sorted(log, key=lambda e: (e[1], e[0]))),
    )


def _percentile(values: list[int], q: float) -> float:
    if not values:
        return 0.0
    return float(values[min(len(values) - 1, int(q * len(values)))])
