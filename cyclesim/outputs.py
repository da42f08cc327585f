"""Outputs written whole or not at all, and what an interrupt must clean up.

Every file cyclesim writes goes to a temporary name beside it (`.NAME.partial-PID.SUFFIX`, the
suffix kept so a writer that picks its format from it still does) and is renamed over the final
name only when complete: no interrupt, full disk or crash leaves a partial file under a final
name. The temporary files being written and the peer processes running (AccelForge, SCALE-Sim)
are registered here, so the one interrupt handler (cli.aborts) removes the first and terminates the
second: no partial file, no orphan.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, TypeVar

T = TypeVar("T")

_LOCK = threading.Lock()
_TEMPORARY: set[Path] = set()  # files being written under their temporary names
_CHILDREN: set[subprocess.Popen] = set()  # peer processes running now


class Interrupted(BaseException):  # noqa: N818 - like KeyboardInterrupt, not an error of ours
    """SIGINT or SIGTERM arrived: unwinds like KeyboardInterrupt, carrying the signal."""

    def __init__(self, signum: int) -> None:
        # args is (signum,): SimPy (and the replay's event loop) re-raise a failed process's
        # exception as type(exc)(*exc.args), which must make the same Interrupted again
        super().__init__(signum)
        self.signum = signum

    def __str__(self) -> str:
        return signal.Signals(self.signum).name


def temporary_name(path: str | Path) -> Path:
    """Where `path` is written until complete: hidden, beside it, its suffix kept."""
    path = Path(path)
    return path.with_name(f".{path.stem}.partial-{os.getpid()}{path.suffix}")


_TEMPORARY_NAME = re.compile(r"\.([^/\s]+?)\.partial-\d+(\.\w+)?")


def final_names(text: str) -> str:
    """`text` with every temporary name in it shown as its final name (for progress lines)."""
    return _TEMPORARY_NAME.sub(lambda m: m.group(1) + (m.group(2) or ""), text)


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path to write; rename it to `path` when the block ends normally, remove
    it when the block raises (an error, an interrupt)."""
    final = Path(path)
    temporary = temporary_name(final)
    with _LOCK:
        _TEMPORARY.add(temporary)
    try:
        yield temporary
        os.replace(temporary, final)
    except OSError as exc:  # a full disk, a vanished folder: name the final file
        _remove(temporary)
        if exc.filename is None or str(exc.filename) == str(temporary):
            raise OSError(exc.errno, exc.strerror, str(final)) from None
        raise
    except BaseException:
        _remove(temporary)
        raise
    finally:
        with _LOCK:
            _TEMPORARY.discard(temporary)


def make_parent_folders(outputs: dict[str, str | None]) -> None:
    """Make the missing folders of each output file, {flag: path} ('-' and empty skipped):
    every command makes them alike (the CLI checked beforehand that they can be made), and a
    folder that cannot be made is one OptionError naming the flag."""
    from cyclesim.errors import OptionError

    for flag, value in outputs.items():
        if isinstance(value, str) and value not in ("", "-"):
            try:
                Path(value).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise OptionError(f"{flag} {value} cannot be written: {exc.strerror}") from None


@contextlib.contextmanager
def atomic_open(path: str | Path, mode: str = "w", **kwargs: Any) -> Iterator[IO]:
    """open() of a temporary name, renamed to `path` once closed after a normal end."""
    with atomic_path(path) as temporary, open(temporary, mode, **kwargs) as handle:
        yield handle


def write_atomically(path: str | Path, text: str) -> None:
    """Path.write_text, whole or not at all."""
    with atomic_path(path) as temporary:
        temporary.write_text(text, encoding="utf-8")


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def remove_temporary_files() -> None:
    """Remove every output still being written (called by the interrupt handler)."""
    with _LOCK:
        pending = list(_TEMPORARY)
    for path in pending:
        _remove(path)


# ---------------------------------------------------------------- peer processes
def run_peer(
    command: list[str],
    *,
    timeout: float,
    heartbeat: Callable[[float], None] | None = None,
    every: float = 5.0,
    **kwargs: Any,
) -> subprocess.CompletedProcess:
    """subprocess.run for a peer, registered while it runs so that an interrupt terminates it
    (and the processes it started: it leads a process group of its own). heartbeat(seconds)
    is called every `every` seconds while the peer runs (a line saying it still does)."""
    process = _start_registered(command, kwargs)
    start = time.monotonic()
    try:
        if _HELD:  # an interrupt arrived while the peer started: now it is seen, unwind
            raise Interrupted(_HELD.pop())
        while True:
            left = timeout - (time.monotonic() - start)
            try:
                out, err = process.communicate(timeout=max(0.0, min(left, every)))
                break
            except subprocess.TimeoutExpired:
                if left <= every:
                    raise
                if heartbeat is not None:
                    heartbeat(time.monotonic() - start)
    except BaseException:  # a timeout or an interrupt: the peer must not outlive us
        _terminate(process)
        raise
    finally:
        with _LOCK:
            _CHILDREN.discard(process)
    return subprocess.CompletedProcess(command, process.returncode, out, err)


_HELD: list[int] = []  # interrupts that arrived while the main thread started a peer
_starting = False  # the main thread is between a peer's fork and its registration


def _start_registered(command: list[str], kwargs: dict[str, Any]) -> subprocess.Popen:
    """Start a peer and register it, holding interrupts meanwhile: one that unwound inside
    Popen (after the fork) or before the registration would leave the peer running unseen."""
    global _starting
    _starting = threading.current_thread() is threading.main_thread()
    try:
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
            **kwargs,
        )  # fmt: skip
        with _LOCK:
            _CHILDREN.add(process)
        return process
    except BaseException:
        if _HELD:  # the peer did not start; the interrupt still ends the run
            raise Interrupted(_HELD.pop()) from None
        raise
    finally:
        _starting = False


def raise_interrupt(signum: int) -> None:
    """The interrupt handler's body: raise Interrupted, or hold the signal while the main thread
    starts a peer (run_peer raises it as soon as the peer is registered)."""
    if _starting:
        _HELD.append(signum)
        return
    raise Interrupted(signum)


def _terminate(process: subprocess.Popen, grace: float = 2.0) -> None:
    """SIGTERM to the peer's process group, SIGKILL after `grace` seconds; reaped either way."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def terminate_peers() -> None:
    """Terminate every peer process still running (called by the interrupt handler)."""
    with _LOCK:
        running = list(_CHILDREN)
    for process in running:
        _terminate(process)


def atomic_output(function: Callable[..., T]) -> Callable[..., T]:
    """Decorate a writer whose argument `path` names its output: it writes a temporary name,
    renamed to `path` when the writer returns (removed when it raises)."""
    signature = inspect.signature(function)

    @functools.wraps(function)
    def writer(*args: Any, **kwargs: Any) -> T:
        bound = signature.bind(*args, **kwargs)
        with atomic_path(bound.arguments["path"]) as temporary:
            bound.arguments["path"] = temporary
            return function(*bound.args, **bound.kwargs)

    return writer
