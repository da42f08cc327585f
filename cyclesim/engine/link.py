"""One direction of a node's transfers (Link) and its bursts: the bits each burst moves on
either side (moved_bits), the cycles of every burst per port widths (burst_timing, the tables a
Link caches) and the port a wait is named after (named_keys)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cyclesim.schedule.plan import PortRef

if TYPE_CHECKING:
    from cyclesim.engine.dma import Channels
    from cyclesim.engine.dram_port import DramSide


class Link:
    """One direction of a node's transfers (fill or write-back), resolved once per replay.

    Holds the ports' keys, the burst size, the latency and, per transfer size and port widths,
    the cycles of every burst and their running sums, so a run of bursts is timed by a
    subtraction instead of a loop.
    """

    __slots__ = (
        "who",
        "tensor",
        "pk",
        "ck",
        "keys",
        "burst",
        "latency",
        "latency_key",
        "dma",
        "timings",
        "dram",
        "child_on_tie",
        "sized",
    )

    def __init__(
        self,
        who: int,
        tensor: str,
        parent_port: PortRef,
        child_port: PortRef,
        dma: tuple[Channels, int, str] | None,
    ) -> None:
        self.who = who
        self.tensor = tensor
        self.pk, self.ck = parent_port.key, child_port.key
        self.keys = (self.pk, self.ck) if self.pk != self.ck else (self.pk,)
        self.burst = min(parent_port.burst_bits, child_port.burst_bits)
        self.latency = max(parent_port.latency_cycles, child_port.latency_cycles)
        self.latency_key = (
            self.pk if parent_port.latency_cycles >= child_port.latency_cycles else self.ck
        )
        self.dma = dma
        self.timings: dict[
            tuple, tuple[list, list, list, list]
        ] = {}  # (bits, widths) -> burst_timing
        # its DRAM side (engine/dram_port.py) when one end is a DRAM-modelled memory
        self.dram: DramSide | None = None
        self.child_on_tie = False  # a write-back: a tie names the child's port, which data leaves
        # (parent bits, child bits) -> what each transfer of that size shares: its bursts,
        # the keys its first wait names (at the ports' full widths, which never change in a
        # replay), what a grant of all its bursts moved and its side (engine/transfer.py
        # _sized); all its transfers record in one timeline (its process's)
        self.sized: dict[tuple[int, int], tuple] = {}


def moved_bits(big: int, small: int, burst: int, lo: int, hi: int) -> tuple[int, int]:
    """(parent bits, child bits) of bursts lo..hi-1 (burst j alone: lo=j, hi=j+1; a grant's
    bits, recorded with it in engine/fabric.py: the grant's bursts).

    Bursts are counted where the bits meet (DESIGN "Bursts are counted where the bits meet"):
    on the side that moves more bits — the parent's port when it carries several instances'
    shares (parent bits > child bits), else one instance's port — and the other side moves
    its share pro rata in the same bursts. Each side's bits before burst j are a function of
    j alone, so a run of bursts is a difference of two of them."""
    if big > small:
        a, b = min(big, lo * burst), min(big, hi * burst)
        return b - a, small * b // big - small * a // big
    if not small:
        return 0, 0
    a, b = min(small, lo * burst), min(small, hi * burst)
    return big * b // small - big * a // small, b - a


def n_bursts_of(big: int, small: int, burst: int) -> int:
    """Bursts of a transfer of big parent bits and small bits per child instance."""
    return -(-max(big, small) // burst)


def burst_timing(
    big: int, small: int, burst: int, wp: int, wc: int, child_on_tie: bool = False
) -> tuple[list, list, list, list]:
    """Per burst at widths (wp, wc): cycles, whether the parent side is the one named (the
    slower; on a tie the side the data leaves: the parent for a fill, the child for a
    write-back, child_on_tie), and the running sum of cycles (prefix[j] = cycles of bursts
    0..j-1); then the splits, the bursts that name another port than the burst before them
    (where an uncontested run stops). Burst j as in moved_bits."""
    if big > small:  # counted on the parent side: the same with the sides swapped
        return _timing_counted(small, big, burst, wc, wp, not child_on_tie, True)
    return _timing_counted(big, small, burst, wp, wc, child_on_tie, False)


def _timing_counted(
    big: int, small: int, burst: int, wp: int, wc: int, child_on_tie: bool, swapped: bool
) -> tuple[list, list, list, list]:
    """burst_timing with the bursts counted on the `small` side; `swapped`: the sides were swapped
    by the caller, so each burst's named side is reported the other way round. Equal full
    bursts are made as one repeated value (C), not burst by burst: a streamed tile has a burst
    per few cycles, and its table grows with the tile."""
    full = (small - 1) // burst  # bursts before the last one, all of `burst` child bits
    if full > 1 and big * burst % small == 0:  # they all move the same parent bits too
        share = big * burst // small
        cp, cc = -(-share // wp), -(-burst // wc)
        c = max(cp, cc, 1)
        lo = full * burst  # the last burst: as in the loop below
        cp_last, cc_last = -(-(big - big * lo // small) // wp), -(-(small - lo) // wc)
        c_last = max(cp_last, cc_last, 1)
        prefix = list(range(0, full * c + 1, c))
        prefix.append(prefix[-1] + c_last)
        named = parent_named(cp, cc, child_on_tie) != swapped
        named_last = parent_named(cp_last, cc_last, child_on_tie) != swapped
        return (
            [c] * full + [c_last],
            [named] * full + [named_last],
            prefix,
            [full] if named_last != named else [],
        )
    cycles: list[int] = []
    parent_slower: list[bool] = []
    prefix, splits = [0], []
    t = 0
    below = 0  # parent bits of the bursts before j: big * lo // small
    for lo in range(0, small, burst):
        hi = min(small, lo + burst)
        upto = big * hi // small
        cp, cc = -((below - upto) // wp), -((lo - hi) // wc)  # ceil divisions
        below = upto
        c = max(cp, cc, 1)
        named = parent_named(cp, cc, child_on_tie) != swapped
        if parent_slower and parent_slower[-1] != named:
            splits.append(len(cycles))
        cycles.append(c)
        parent_slower.append(named)
        t += c
        prefix.append(t)
    return cycles, parent_slower, prefix, splits


def parent_named(cp: int, cc: int, child_on_tie: bool) -> bool:
    """Does a burst of cp parent-side and cc child-side cycles name the parent's port?"""
    return cp > cc or (cp == cc and not child_on_tie)


def named_keys(
    link: Link, big: int, small: int, width: dict[str, int], j: int = 0
) -> tuple[str, ...]:
    """The link's port keys, the one a wait for burst j is named after first: the port whose
    ceil(bits / width) for that burst is largest, on a tie the port the data leaves (DESIGN
    "Naming a stalled transfer's port")."""
    if len(link.keys) == 1:
        return link.keys
    pb, cb = moved_bits(big, small, link.burst, j, j + 1)
    cp, cc = -(-pb // width[link.pk]), -(-cb // width[link.ck])
    return link.keys if parent_named(cp, cc, link.child_on_tie) else (link.ck, link.pk)
