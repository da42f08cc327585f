"""The replays of `cyclesim rank`, peer-neutral: cached ones read back, the others through the
one parallel runner with a progress bar (or a line per replay where no bar is drawn), every
row merged into the rank tables' input (an explained row over the timed one)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from cyclesim.analysis.parallel import TaskOutcome, map_tasks
from cyclesim.analysis.rank import merge_row
from cyclesim.analysis.rank_cache import ResultCache


def bar_shown(progress: bool | None) -> bool:
    """As map_tasks decides: a bar when asked, or by default when stderr is a terminal."""
    return sys.stderr.isatty() if progress is None else progress


def row_key(task: Any) -> tuple[str, int]:
    """A replay's row in the tables: its layer and the candidate's order in the peer's search."""
    return task.layer, task.candidate["order"]


def run_replays(
    replay: Callable[[Any], dict],
    tasks: list,
    rows: dict[tuple[str, int], dict],
    store: ResultCache,
    parallel: dict,
    on_line: Callable[[str], None] | None,
    desc: str,
    status_of: Callable[[str], str],
) -> int:
    """Run `replay` on the tasks not in the cache; put every task's row into `rows`.

    A task has `key` (its cache key), `layer`, `candidate` (with its `order`) and `explain`;
    `replay` is a module-level function (it pickles to a worker). A failed task's row gets
    `status_of(its error)`. Return how many ran.
    """
    todo = []
    for task in tasks:
        cached = store.get(task.key)
        if cached is None:
            todo.append(task)
        else:
            merge_row(rows, row_key(task), cached | {"cached": True}, task.explain)
    best: dict[str, int] = {}

    def postfix(outcome: TaskOutcome) -> str | None:
        task = todo[outcome.index]
        if outcome.ok and outcome.value.get("replay_cycles") is not None:
            cycles = outcome.value["replay_cycles"]
            best[task.layer] = min(cycles, best.get(task.layer, cycles))
            return f"{task.layer}: best {best[task.layer]:,} cycles"
        return None

    lines = on_line is not None and not bar_shown(parallel["progress"])

    def finished(outcome: TaskOutcome, count: int) -> None:
        """Cache each replay as it finishes (an interrupted run keeps what it did); one line
        per replay where no bar is drawn."""
        task = todo[outcome.index]
        if outcome.ok:
            store.put(task.key, outcome.value)
        if lines:
            assert on_line is not None
            value = outcome.value or {}
            what = value.get("replay_cycles", value.get("status")) if outcome.ok else outcome.error
            on_line(
                f"{task.layer} candidate {task.candidate['order']}: {what} "
                f"({count} of {len(todo)} {desc})"
            )

    if on_line and todo:
        on_line(f"replaying {len(todo)} {desc} ({len(tasks) - len(todo)} from the cache)")
    outcomes = map_tasks(replay, todo, desc=desc, postfix=postfix, on_done=finished, **parallel)
    for task, outcome in zip(todo, outcomes, strict=True):
        if outcome.ok:
            row = outcome.value | {"cached": False}
        else:
            row = {"status": status_of(outcome.error or ""), "error": outcome.error or ""}
        merge_row(rows, row_key(task), row, task.explain)
    return len(todo)
