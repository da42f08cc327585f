"""Trace-driven DRAM timing: DRAMsim3's trace format in, cycles, row hits and latencies out.

A trace line is `0xADDRESS READ|WRITE CYCLE`. Requests enter in order, at most one per cycle
and no earlier than their cycle; a request whose channel's queue is full waits, and so does
every request behind it (DRAMsim3's front end). The run ends at the end of the last data
burst; writes still buffered when the trace ends are drained.
"""

from __future__ import annotations

import os
import re
import stat
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cyclesim.dram import native
from cyclesim.dram.config import DramConfig
from cyclesim.dram.timing import ACTIVATE, NAMES, PRECHARGE, READS, REFRESH, REFRESH_BANK, WRITES
from cyclesim.errors import SpecError

if TYPE_CHECKING:
    from cyclesim.dram.controller import Channel

WRITE_WORDS = {"WRITE", "write", "P_MEM_WR", "BOFF"}  # DRAMsim3's spellings of a write
READ_WORDS = {"READ", "read", "P_MEM_RD", "P_FETCH", "P_LOCK_RD", "P_LOCK_WR"}
MAX_REQUESTS = 10_000_000
MAX_LINES = MAX_REQUESTS  # comments and blank lines included
MAX_LINE_BYTES = 256  # '0x' + 16 hex digits, a command word, a cycle: far below this
MAX_TRACE_BYTES = 1 << 30  # about 40 bytes a request: the request limit's worth, and then some
PROGRESS_SECONDS = 5.0
_LINE = "lines '0xADDRESS READ|WRITE CYCLE'"


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


_ADDRESS = re.compile(r"(?:0[xX])?[0-9a-fA-F]{1,16}")  # DRAMsim3: `>> std::hex`, no '_'
_CYCLE = re.compile(r"[0-9]{1,15}")


def read_trace(path: str | Path) -> list[Request]:
    """Parse a DRAMsim3 trace, streaming: a bad line is refused with the file and line, a trace
    without requests (empty, or comments only) with the file. The line length, the bytes and the
    requests are bounded as they are read, so /dev/zero or a 10-million-line file is refused at
    once, not after it was read into memory. A line is quoted in a message only once the file
    has shown itself a trace (a request read before it)."""
    name = str(path)
    out: list[Request] = []
    last, number, size = 0, 0, 0
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below; OSError handled in one place
    except OSError as exc:
        raise SpecError(f"cannot read the trace ({exc.strerror})", file=name) from None
    with handle:
        try:
            whole = (
                os.fstat(handle.fileno()).st_size
                if stat.S_ISREG(os.fstat(handle.fileno()).st_mode)
                else 0
            )
        except OSError:
            whole = 0
        if whole > MAX_TRACE_BYTES:  # a regular file says its size: refused before reading it
            raise SpecError(f"the trace is larger than {MAX_TRACE_BYTES >> 20} MiB",
                            file=name, found=f"{whole:,} bytes", expected="a shorter trace")  # fmt: skip
        if whole and _count_lines(handle) > MAX_LINES:  # counted at C speed, before parsing any
            raise SpecError("too many lines", file=name, line=MAX_LINES + 1,
                            expected=f"at most {MAX_LINES:,}")  # fmt: skip
        while True:
            try:
                raw = handle.readline(MAX_LINE_BYTES + 1)
            except OSError as exc:
                raise SpecError(f"cannot read the trace ({exc.strerror})", file=name) from None
            if not raw:
                break
            number += 1
            size += len(raw)
            if number > MAX_LINES:  # a pipe: counted as it streams
                raise SpecError("too many lines", file=name, line=number,
                                expected=f"at most {MAX_LINES:,}")  # fmt: skip
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                raise SpecError(f"a line longer than {MAX_LINE_BYTES} bytes: not a trace",
                                file=name, line=number, expected=_LINE)  # fmt: skip
            if size > MAX_TRACE_BYTES:
                raise SpecError(f"the trace is larger than {MAX_TRACE_BYTES >> 20} MiB",
                                file=name, line=number, expected="a shorter trace")  # fmt: skip
            try:
                line = raw.decode("ascii")
            except UnicodeDecodeError as exc:
                raise SpecError(f"not a text trace (byte {exc.start} of the line is not ASCII)",
                                file=name, line=number, expected=_LINE) from None  # fmt: skip
            parts = line.split()
            if not parts or parts[0].startswith("#"):
                continue
            shown = line.strip()[:80] if out else None  # nothing of a file of another kind
            if len(parts) != 3 or (parts[1] not in WRITE_WORDS and parts[1] not in READ_WORDS):
                raise SpecError("not a trace line", file=name, line=number, found=shown,
                                expected=_LINE)  # fmt: skip
            if not _ADDRESS.fullmatch(parts[0]) or not _CYCLE.fullmatch(parts[2]):
                raise SpecError(
                    "address must be hexadecimal (at most 16 digits) and cycle decimal",
                    file=name, line=number, found=shown, expected=_LINE,
                )  # fmt: skip
            address, cycle = int(parts[0], 16), int(parts[2], 10)
            if cycle >= 1 << 48:
                raise SpecError("out of range", file=name, line=number, found=shown,
                                expected="a cycle below 2**48")  # fmt: skip
            if cycle < last:
                raise SpecError("cycles go backwards", file=name, line=number, found=cycle,
                                expected=f"at least {last} (requests enter in order)")  # fmt: skip
            last = cycle
            if len(out) == MAX_REQUESTS:
                raise SpecError("too many requests", file=name, line=number,
                                expected=f"at most {MAX_REQUESTS:,}")  # fmt: skip
            out.append(Request(address, parts[1] in WRITE_WORDS, cycle))
    if not out:  # else a report of 0 cycles and a read latency of 0, as if measured
        raise SpecError("no requests in the trace", file=name, expected=_LINE)
    return out


def _count_lines(handle) -> int:
    """Newlines in a regular file, in 1 MiB blocks (the file is left at its start)."""
    count = 0
    while block := handle.read(1 << 20):
        count += block.count(b"\n")
    handle.seek(0)
    return count


def simulate_trace(
    config: DramConfig,
    requests: Iterable[Request],
    *,
    keep_commands: bool = False,
    skip_idle: bool = True,
    progress: Callable[[int, int, int], None] | None = None,
) -> DramRun:
    """Replay requests through one controller per channel; exact per cycle, idle spans skipped.

    `skip_idle=False` ticks every cycle (the reference the skipping is tested against).
    `progress(requests in, requests, cycle)` is called every PROGRESS_SECONDS or so.
    """
    reqs = list(requests)
    front = native.FrontEnd(config, keep_commands=keep_commands)
    for r in reqs:
        front.push(native.Request(r.address, r.is_write, r.cycle))
    front.run_until(
        None,
        flush_at_end=True,
        skip_idle=skip_idle,
        progress=progress,
        progress_seconds=PROGRESS_SECONDS,
    )
    return _summarise(config, reqs, front.channels)


def completion_cycles(config: DramConfig, requests: Iterable[Request]) -> list[int]:
    """Each request's completion cycle (its read data back, its write accepted), in trace
    order: what the replay's in-loop controller gives the same requests (engine/dram_loop.py)."""
    pushed = [native.Request(r.address, r.is_write, r.cycle) for r in requests]
    front = native.FrontEnd(config)
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
