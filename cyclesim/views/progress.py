"""Progress bars on stderr while views are made: cycles of a trace file written so far, and
the steps of work that has no cycles to count (building the activity, drawing the plots)."""

from __future__ import annotations

import sys
from contextlib import contextmanager


@contextmanager
def writing_bar(total_cycles: int, desc: str, progress: bool | None):
    """A tqdm bar counting cycles written, or None; None for `progress` means 'when stderr is a terminal'."""
    show = sys.stderr.isatty() if progress is None else progress
    if not show or total_cycles <= 0:
        yield None
        return
    from tqdm import tqdm

    from cyclesim.outputs import final_names

    desc = final_names(desc)  # the file the user asked for, not its temporary name
    bar = tqdm(total=total_cycles, desc=desc, unit="cycle", unit_scale=True, file=sys.stderr, leave=False)  # fmt: skip
    try:
        yield bar
    finally:
        bar.close()


@contextmanager
def steps_bar(steps: int, desc: str, progress: bool | None):
    """A bar of `steps` named steps: yields tick(name), called as each step is done (or a
    no-op when no bar is shown; None for `progress` means 'when stderr is a terminal')."""
    show = sys.stderr.isatty() if progress is None else progress
    if not show:
        yield lambda name: None
        return
    from tqdm import tqdm

    bar = tqdm(total=steps, desc=desc, unit="step", file=sys.stderr, leave=False)

    def tick(name: str) -> None:
        bar.set_postfix_str(f"{name} done", refresh=False)
        bar.update(1)
        bar.refresh()  # a few steps of seconds each: draw every one

    try:
        yield tick
    finally:
        bar.close()
