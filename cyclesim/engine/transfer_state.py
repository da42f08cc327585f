"""What one transfer in progress carries across a yield (TransferState): its bursts, its
current run and its DMA channel, kept apart so fast-forward can compare and move it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cyclesim.vocabulary import Wait

if TYPE_CHECKING:
    from simpy.resources.resource import Request

# bound once, as engine/transfer.py binds them: an enum attribute costs ~0.2 us
_BURST = Wait.BURST
_START = Wait.START


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
        "granted",
    )

    def __init__(self, big: int, small: int) -> None:
        self.stage = _START
        self.big, self.small = big, small  # parent and child bits of the whole transfer
        self.burst = 0  # child bits per burst
        self.i = 0  # next burst
        # (parent bits, child bits) left of burst i when it was cut short
        self.rest: tuple[int, int] | None = None
        self.stopping = False  # the run stops after the burst in progress (a competitor waits)
        self.start = self.end = self.last = self.last_start = 0  # the run: start, end, last burst
        self.first = 0  # cycles of the run's first burst
        self.j = 0  # burst after the run
        self.wp = self.wc = 0  # port widths the run was timed at
        self.channel: Request | None = None  # the DMA channel request held, if any
        self.granted = 0  # the first burst of the grant held (or asked for): x.i at the grant

    def snapshot(self, now: int, locs: dict, grants: bool) -> tuple:
        """The transfer's state relative to cycle now (engine/storage_node.py NodeState.snapshot
        says what grants leaves out); locs: id(event) -> where it is held."""
        channel = None if self.channel is None else locs.get(id(self.channel), "unseen")
        i = None if grants else self.i
        out: tuple = (self.stage, self.big, self.small, i, self.rest, self.stopping, channel)
        out += (self.i - self.granted,)  # bursts moved under the grant held
        if self.stage == _BURST:  # the run in progress: read back when it ends or is cut
            out += (self.start - now, self.first, self.j - self.i, self.last - now)
            out += (self.wp, self.wc)
        return out

    def shift(self, dt: int, bursts: int = 0) -> None:
        """Move the transfer's times dt cycles and its burst indices `bursts` on (a
        fast-forward jump; bursts only between grants, inside the same transfer)."""
        self.start += dt
        self.end += dt
        self.last += dt
        self.last_start += dt
        self.i += bursts
        self.j += bursts
        self.granted += bursts
