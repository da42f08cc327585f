"""The progress bar shown on stderr while a trace file is written (cycles written so far)."""

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
