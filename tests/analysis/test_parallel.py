"""The one parallel runner: outcomes in task order, a failing task recorded, the rest complete."""

import os
import sys

import pytest

from cyclesim.analysis.parallel import map_tasks


def _square_but_three(x: int) -> int:
    if x == 3:
        raise ValueError("three is refused")
    return x * x


@pytest.mark.parametrize("workers", [1, 2])
def test_outcomes_in_order_and_a_failure_is_a_row(workers):
    out = map_tasks(_square_but_three, range(6), workers=workers, progress=False)
    assert [o.index for o in out] == list(range(6))
    assert [o.value for o in out if o.ok] == [0, 1, 4, 16, 25]
    (failed,) = [o for o in out if not o.ok]
    assert failed.index == 3 and failed.error.startswith("ValueError: three is refused")


def test_the_dask_backend_keeps_order_and_records_a_failure():
    """The same contract on a LocalCluster of two worker processes (what sweeps use)."""
    pytest.importorskip("distributed")
    out = map_tasks(_square_but_three, range(6), workers=2, progress=True, backend="dask")
    assert [o.index for o in out] == list(range(6))
    assert [o.value for o in out if o.ok] == [0, 1, 4, 16, 25]
    assert [o.index for o in out if not o.ok] == [3]


def test_an_unknown_backend_or_a_scheduler_without_dask_is_refused():
    from cyclesim.errors import CyclesimError

    with pytest.raises(CyclesimError, match="unknown parallel backend"):
        map_tasks(_square_but_three, [1], backend="threads")
    with pytest.raises(CyclesimError, match="needs the dask backend"):
        map_tasks(_square_but_three, [1], scheduler="tcp://127.0.0.1:1")


def test_an_unreachable_scheduler_is_a_clear_error():
    pytest.importorskip("distributed")
    from cyclesim.errors import CyclesimError

    with pytest.raises(CyclesimError, match="cannot reach the Dask scheduler"):
        map_tasks(_square_but_three, [1], backend="dask", scheduler="tcp://127.0.0.1:9")


def _pid(_item) -> int:
    return os.getpid()


def test_fresh_process_runs_every_task_in_a_process_of_its_own():
    """One worker or two: no task shares a process with another or with the caller, so each
    task's peak memory (benchmarks/zigzag_matrix.py) is its own."""
    for workers in (1, 2):
        outcomes = map_tasks(_pid, range(3), workers=workers, progress=False, fresh_process=True)
        pids = [o.value for o in outcomes]
        assert len(set(pids)) == 3 and os.getpid() not in pids


@pytest.mark.parametrize("workers, progress", [(1, False), (2, False), (2, True)])
def test_on_done_sees_every_outcome_once_as_it_finishes(workers, progress, capsys):
    """The hook runs in the caller, once per task, with a running count 1..n; with a bar shown
    what it prints lands on stderr on lines of its own, not inside the bar's line."""
    seen: list[tuple[int, int, bool]] = []

    def hook(outcome, finished):
        seen.append((outcome.index, finished, outcome.ok))
        print(f"task {outcome.index} done", file=sys.stderr)

    out = map_tasks(_square_but_three, range(6), workers=workers, progress=progress, on_done=hook)
    assert sorted(index for index, _, _ in seen) == list(range(6))
    assert [finished for _, finished, _ in seen] == [1, 2, 3, 4, 5, 6]
    assert [ok for index, _, ok in sorted(seen)] == [o.ok for o in out]
    assert all(o.seconds is not None and o.seconds >= 0 for o in out)  # the failure's too
    err = capsys.readouterr().err
    lines = [line.split("\r")[-1] for line in err.splitlines()]
    assert sorted(line for line in lines if line.startswith("task ")) == [
        f"task {i} done" for i in range(6)
    ]
