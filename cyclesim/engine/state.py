"""Where each replay process keeps what it carries across a yield, so fast-forward can read it.

A SimPy process is a generator: whatever it keeps in locals across a `yield` can be neither
compared with another moment of the run nor moved in time. The fill, write-back and PE
processes (engine/run.py) and the transfers (engine/transfer.py) keep it here instead; after
every yield they read it back, so fast-forward (engine/fastforward.py) can shift a snapshot
by whole periods with arithmetic on these objects: times by a number of cycles, tile and
segment indices by a number of tiles. `stage` is the yield a process is suspended at, a Wait (vocabulary.py),
the same word its timeline row records.
"""

from __future__ import annotations

from cyclesim.vocabulary import Wait


class TransferState:
    """One transfer in progress (engine/transfer.py): its bursts, current run and DMA channel."""

    __slots__ = (
        "stage",
        "big",
        "small",
        "burst",
        "i",
        "rest",
        "stopping",
        "start",
        "first",
        "j",
        "end",
        "last",
        "last_start",
        "wp",
        "wc",
        "channel",
    )

    def __init__(self, big: int, small: int) -> None:
        self.stage = Wait.START
        self.big, self.small = big, small  # parent and child bits of the whole transfer
        self.burst = 0  # child bits per burst
        self.i = 0  # next burst
        self.rest = None  # (parent bits, child bits) left of burst i when it was cut short
        self.stopping = False  # the run stops after the burst in progress (a competitor waits)
        self.start = self.end = self.last = self.last_start = 0  # the run: start, end, last burst
        self.first = 0  # cycles of the run's first burst
        self.j = 0  # burst after the run
        self.wp = self.wc = 0  # port widths the run was timed at
        self.channel = None  # the DMA channel request held, if any

    def times(self) -> tuple:
        return (self.start, self.end, self.last, self.last_start)

    def shift(self, dt: int) -> None:
        self.start += dt
        self.end += dt
        self.last += dt
        self.last_start += dt


class NodeState:
    """A fill or write-back process: the entry it is at, where it waits, its transfer."""

    __slots__ = ("stage", "k", "prev", "start", "xfer")

    def __init__(self) -> None:
        self.stage = Wait.START
        self.k = 0  # the entry being entered, filled or written back (n.entries: done)
        self.prev = None  # outputs' fill: the previous visit of entry k's values (or None)
        self.start = 0  # start of the entry's transfer
        self.xfer: TransferState | None = None  # the transfer in progress


class PeState:
    """The PE array's process: the segment it is at and the kinds of segment it has run."""

    __slots__ = ("stage", "g", "start", "held", "kinds", "wait")

    def __init__(self) -> None:
        self.stage = Wait.START
        self.g = 0  # the segment being waited for or computed
        self.start = 0  # start of the segment's stream
        self.held = None  # the kind of segment whose port shares the PE array holds
        self.kinds: dict = {}  # (leaf, level, first visit) -> _SegmentKind, in first-run order
        self.wait = None  # the open _SegmentWait while the PE array waits for operands
