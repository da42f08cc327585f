"""A run cut short: out of memory (a reserve freed first, so the handler can run) or by SIGINT /
SIGTERM; either way the outputs it began are removed and one line says so.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from cyclesim.cli.output_paths import remove_begun

OUT_OF_MEMORY = 4  # exit code: the replay's records did not fit in memory


RESERVE_BYTES = 8 << 20  # freed first when memory runs out, so that the handler itself can run
memory_reserve: list[bytearray] = []


def _remedies(args: argparse.Namespace) -> str:
    """What the user can change to need less memory: only options this command has."""
    tips = []
    if hasattr(args, "layer"):
        tips.append("one layer at a time (--layer)")
    if hasattr(args, "workers"):
        tips.append("fewer --workers")
    if hasattr(args, "window"):
        tips.append("a trace --window or no trace")
    if getattr(args, "command", None) == "dram":
        tips.append("a shorter trace")
    return ", ".join([*tips, "or a machine with more memory"])


def out_of_memory(args: argparse.Namespace, fresh: list[Path]) -> int:
    """One line for a run that ran out of memory; the outputs it began are removed. The reserve
    is freed first: the handler itself needs memory to build its line."""
    memory_reserve.clear()
    try:
        remove_begun(fresh)
        what = [
            " ".join(v for v in (getattr(args, "command", None), getattr(args, "peer", None)) if v)
        ]
        for option in ("layer", "accelerator", "architecture", "arch", "workload", "mapping"):
            value = getattr(args, option, None)
            if isinstance(value, str) and value:
                what.append(f"--{option} {value}")
        line = (
            f"{getattr(args, 'error_prefix', 'cyclesim')}: ran out of memory running "
            f"{' '.join(what)}; nothing was written. Try {_remedies(args)}\n"
        )
    except MemoryError:  # even the reserve was not enough: the fixed line
        line = "cyclesim: ran out of memory; nothing was written\n"
    _say(line)
    return OUT_OF_MEMORY


def interrupted(signum: int, fresh: list[Path]) -> int:
    """SIGINT or SIGTERM: peers terminated, outputs begun removed, one line, 128 + signal."""
    import signal

    from cyclesim.outputs import terminate_peers

    for sig in (signal.SIGINT, signal.SIGTERM):  # a second signal must not cut the cleanup short
        signal.signal(sig, signal.SIG_IGN)
    terminate_peers()
    remove_begun(fresh)
    _say("cyclesim: interrupted\n")
    return 128 + signum


def _say(line: str) -> None:
    """One line on stderr, written even when the stream object cannot allocate."""
    try:
        sys.stderr.write(line)
        sys.stderr.flush()
    except (OSError, MemoryError, ValueError):
        try:
            os.write(2, line.encode("utf-8", "replace"))
        except OSError:
            pass


def install_interrupt_handler() -> dict:
    """SIGINT and SIGTERM raise Interrupted in the main thread (one path for both); returns the
    handlers it replaced (restored when main returns: tests call main in-process)."""
    import signal
    import threading

    from cyclesim.outputs import raise_interrupt

    if threading.current_thread() is not threading.main_thread():
        return {}

    def handler(signum: int, _frame) -> None:
        raise_interrupt(signum)

    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        previous[sig] = signal.signal(sig, handler)
    return previous
