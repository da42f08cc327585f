"""The one parallel runner: map a function over tasks in worker processes, results in task order.

Every command that replays many independent things (explain's remedies, a whole network's
layers, a sweep's points) goes through `map_tasks`, so worker count, progress bar and error
capture behave the same everywhere. A failing task is an outcome with its error, never a lost
batch. An `on_done` hook sees each outcome as it finishes (a command's one line per task where
no progress bar can be drawn, as in a CI log), printed around the bar when there is one.

Two backends: `processes` (a local process pool, cheap to start: explain, checks) and `dask`
(a `distributed` cluster: a LocalCluster of worker processes, or an existing cluster's
scheduler by address; sweeps, where points may outnumber one machine's cores).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, as_completed, wait
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TaskOutcome:
    """One task's result (`value`) or its failure (`error`: type and message, one line), and
    the wall-clock seconds the task took in its worker (None when the worker was lost)."""

    index: int
    value: Any = None
    error: str | None = None
    seconds: float | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def default_workers(n_tasks: int) -> int:
    """As many workers as cores, never more than tasks."""
    return max(1, min(n_tasks, os.cpu_count() or 1))


def _call(fn: Callable[[Any], Any], index: int, item: Any) -> TaskOutcome:
    from cyclesim.errors import CyclesimError

    start = time.perf_counter()
    try:
        value = fn(item)
        return TaskOutcome(index, value=value, seconds=time.perf_counter() - start)
    except CyclesimError as exc:
        error = f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # a worker bug must not lose the other tasks; keep where it was
        where = traceback.extract_tb(exc.__traceback__)[-1]
        error = (
            f"{type(exc).__name__}: {exc} (at {os.path.basename(where.filename)}:{where.lineno})"
        )
    return TaskOutcome(index, error=error, seconds=time.perf_counter() - start)


def _progress_bar(total: int, desc: str, progress: bool | None):
    """A tqdm bar on stderr; None means 'only when stderr is a terminal'."""
    show = sys.stderr.isatty() if progress is None else progress
    if not show or total <= 1:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="task", file=sys.stderr, leave=False)


def progress_lines(
    desc: str, total: int, progress: bool | None, noun: str = "tasks"
) -> Callable[[int], None] | None:
    """A map_tasks heartbeat that logs how far and how long every LOG_SECONDS where no bar is
    drawn (progress None and stderr not a terminal), as a replay does; None elsewhere."""
    if progress is not None or sys.stderr.isatty() or total <= 1:
        return None
    import logging

    from cyclesim.engine import loop

    start = last = time.perf_counter()

    def line(finished: int) -> None:
        nonlocal last
        now = time.perf_counter()
        if now - last >= loop.LOG_SECONDS:
            last = now
            logging.getLogger("cyclesim").warning(
                "%s: %d of %d %s done after %.0f s", desc, finished, total, noun, now - start
            )

    return line


BACKENDS = ("processes", "dask")
HEARTBEAT_SECONDS = 1.0  # how often a waiting map_tasks calls its heartbeat
SCHEMES = ("tcp", "tls", "ws", "wss")  # Dask's schemes that reach a scheduler on another host
ADDRESS_FORM = "expected [tcp://]HOST:PORT (or tls://, ws://, wss://), e.g. tcp://127.0.0.1:8786"


def check_scheduler_address(address: str) -> None:
    """Refuse a Dask scheduler address that cannot name one (no port, a port that is not a
    number, an unknown scheme) before any work, saying the form expected: Dask itself raises
    a bare ValueError from deep inside Client. An unreachable address is found by Client."""
    from cyclesim.errors import CyclesimError

    scheme, has_scheme, rest = address.rpartition("://")
    host, has_port, port = rest.rpartition(":")
    if has_scheme and scheme not in SCHEMES:
        reason = f"unknown scheme {scheme + '://'!r}"
    elif not has_port or not host:
        reason = "no port" if not has_port else "no host"
    elif not port.isdigit() or not 0 < int(port) < 65536:
        reason = f"port {port!r} is not a number from 1 to 65535"
    else:
        return
    raise CyclesimError(f"malformed Dask scheduler address {address!r} ({reason}); {ADDRESS_FORM}")


def map_tasks(
    fn: Callable[[Any], Any],
    items: Iterable[Any],
    *,
    workers: int | None = None,
    progress: bool | None = None,
    desc: str = "",
    backend: str = "processes",
    scheduler: str | None = None,
    fresh_process: bool = False,
    on_done: Callable[[TaskOutcome, int], None] | None = None,
    postfix: Callable[[TaskOutcome], str | None] | None = None,
    heartbeat: Callable[[int], None] | None = None,
) -> list[TaskOutcome]:
    """Run `fn(item)` for every item, in worker processes when workers > 1; outcomes in item order.

    `fn` and the items must be picklable (module-level functions, plain data). With the
    processes backend and one worker (or one task) everything runs in this process, which
    keeps tracebacks and debuggers simple. backend='dask' starts a LocalCluster of `workers`
    single-threaded worker processes, or uses the cluster whose scheduler is at `scheduler`
    (then `workers` is the cluster's business). Raise CyclesimError for an unknown backend or
    an unreachable scheduler. fresh_process (processes backend): every task in a process of its
    own, one worker or many, so a task's peak memory is its own and is given back after it.
    on_done(outcome, finished): called in this process as each task finishes, in the order
    they finish, with how many have finished so far; what it prints to stderr goes around the
    progress bar, not through it. postfix(outcome): a short text shown after the bar's count
    (e.g. the best found so far), kept until it returns another. heartbeat(finished): called
    after each task and, with the processes backend, every HEARTBEAT_SECONDS while workers run
    (progress_lines: a line every few seconds where no bar is drawn).
    """
    from cyclesim.errors import CyclesimError

    if backend not in BACKENDS:
        raise CyclesimError(f"unknown parallel backend {backend!r}; expected one of {BACKENDS}")
    if scheduler is not None and backend != "dask":
        raise CyclesimError("a scheduler address needs the dask backend")
    if scheduler is not None:
        check_scheduler_address(scheduler)
    tasks: Sequence[Any] = list(items)
    n_workers = default_workers(len(tasks)) if workers is None else max(1, workers)
    bar = _progress_bar(len(tasks), desc, progress)
    outcomes: list[TaskOutcome | None] = [None] * len(tasks)
    done = 0

    def finished(outcome: TaskOutcome) -> None:
        nonlocal done
        outcomes[outcome.index] = outcome
        done += 1
        if on_done is not None:
            if bar is None:
                on_done(outcome, done)
            else:  # clear the bar, let the hook write, redraw the bar
                with bar.external_write_mode(file=sys.stderr):
                    on_done(outcome, done)
        if bar is not None:
            text = postfix(outcome) if postfix is not None else None
            if text:
                bar.set_postfix_str(text, refresh=False)
            bar.update(1)
        if heartbeat is not None:
            heartbeat(done)

    try:
        if backend == "dask" and tasks:
            arriving = _dask_outcomes(fn, tasks, n_workers, scheduler)
        elif not tasks or ((n_workers == 1 or len(tasks) <= 1) and not fresh_process):
            arriving = (_call(fn, i, item) for i, item in enumerate(tasks))
        else:
            waiting = (lambda: heartbeat(done)) if heartbeat is not None else None
            arriving = _pool_outcomes(fn, tasks, n_workers, fresh_process, waiting)
        with contextlib.closing(arriving):  # an interrupt here stops the workers at once
            for outcome in arriving:
                finished(outcome)
    finally:
        if bar is not None:
            bar.close()
    return [o for o in outcomes if o is not None]


def _pool_outcomes(
    fn: Callable[[Any], Any],
    tasks: Sequence[Any],
    workers: int,
    fresh_process: bool,
    waiting: Callable[[], None] | None,
) -> Iterator[TaskOutcome]:
    """Every task in a local process pool; outcomes as they finish. waiting(): called every
    HEARTBEAT_SECONDS in which no task finished (a long task: a line still says how far)."""
    fresh = {"max_tasks_per_child": 1} if fresh_process else {}
    pool = ProcessPoolExecutor(
        max_workers=min(workers, len(tasks)), initializer=_worker_signals, **fresh
    )
    try:
        pending = {pool.submit(_call, fn, i, item) for i, item in enumerate(tasks)}
        if waiting is None:  # as_completed: wait() rescans every pending future each time
            for fut in as_completed(pending):
                yield fut.result()
        while pending and waiting is not None:
            ended, pending = wait(pending, timeout=HEARTBEAT_SECONDS, return_when=FIRST_COMPLETED)
            for fut in ended:
                yield fut.result()
            if not ended:
                waiting()
    except BaseException:  # an interrupt (or the caller closing us): no queued task runs, no
        _stop_pool(pool)  # worker outlives us
        raise
    pool.shutdown()


def _worker_signals() -> None:
    """In a worker process: Ctrl-C (sent to the whole process group) is the main process's to
    handle, SIGTERM ends the worker; neither prints a traceback of the worker's."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel the queued tasks and terminate the workers now (not after their current task)."""
    processes = list(getattr(pool, "_processes", {}).values())  # the executor names no API
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout=5)


def _dask_outcomes(
    fn: Callable[[Any], Any], tasks: Sequence[Any], workers: int, scheduler: str | None
) -> Iterator[TaskOutcome]:
    """Submit every task to a distributed cluster; yield outcomes as they complete."""
    from distributed import Client, as_completed

    from cyclesim.errors import CyclesimError

    cluster = None
    try:
        if scheduler is None:
            cluster = _local_cluster(min(workers, len(tasks)))
            client = Client(cluster)
        else:
            client = Client(scheduler, timeout="10s")
    except ValueError as exc:  # an address check_scheduler_address let through but Dask did not
        raise CyclesimError(
            f"malformed Dask scheduler address {scheduler!r} ({exc}); {ADDRESS_FORM}"
        ) from None
    except OSError as exc:
        if cluster is not None:
            cluster.close()
        raise CyclesimError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
    try:
        futures = [
            client.submit(_call, fn, i, item, key=f"cyclesim-task-{i}-{id(tasks)}", pure=False)
            for i, item in enumerate(tasks)
        ]
        index = {fut.key: i for i, fut in enumerate(futures)}
        for fut in as_completed(futures):
            try:
                yield fut.result()
            except Exception as exc:  # the worker died or the task was lost: still a row
                yield TaskOutcome(index[fut.key], error=f"{type(exc).__name__}: {exc}")
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _local_cluster(workers: int):
    """A LocalCluster of single-threaded worker processes, started deaf to Ctrl-C."""
    import logging

    from distributed import LocalCluster

    with _spawned_deaf_to_ctrl_c():
        return LocalCluster(
            n_workers=workers,
            threads_per_worker=1,  # the replay is pure Python: one task per process
            processes=True,
            dashboard_address=":0",  # no fixed port: other clusters may be running
            # CRITICAL, not ERROR: a worker's heartbeat that meets the scheduler closing at the
            # end logs a CommClosedError traceback at ERROR (seen under load at the end of
            # examples/api/simulate.py's sweep); a task's own failure is its row
            silence_logs=logging.CRITICAL,
        )


@contextlib.contextmanager
def _spawned_deaf_to_ctrl_c() -> Iterator[None]:
    """Processes spawned inside never see SIGINT, and a SIGINT meanwhile is held, then raised.

    Ctrl-C reaches every process of the terminal's process group; Dask's worker processes,
    still importing, each printed a KeyboardInterrupt traceback. Here SIGINT is blocked in
    this thread, so in the threads started inside (Dask's IO loop, the threads that spawn its
    workers) and in the processes they spawn (a blocked signal stays blocked across exec):
    it is this process's to handle, which closes the cluster. Not SIG_IGN, which also makes
    the workers deaf: a Ctrl-C then would be dropped, not held (a library's own thread, which
    does not block SIGINT, takes it and ignores it).
    """
    import signal
    import threading
    from multiprocessing import resource_tracker

    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or previous is None:
        yield  # handlers are the main thread's to set; None: a handler not set from Python
        return
    # started now, not by Dask's first spawn: starting it unblocks SIGINT in the thread that
    # starts it, whose later spawns would then hear Ctrl-C
    resource_tracker.ensure_running()
    held: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, _frame: held.append(signum))
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # one still pending is held now
        signal.signal(signal.SIGINT, previous)
        if held:
            signal.raise_signal(signal.SIGINT)  # the interrupt, as the user sent it
