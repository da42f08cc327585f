"""Fast-forward's DRAM rule: with a DRAM model, skip only periods that issue no DRAM request.

The DRAM timer's state (dram/timer.py: open rows, bank ready cycles, calendars, each
rank's next refresh) is in absolute cycles and does not shift by a period; but only a request
changes it: a refresh is applied when a request arrives past its due cycle, and a DRAM side's
stream starts afresh with each transfer (engine/dram_port.py). So with DRAM a snapshot is
taken only when no transfer through a DRAM side is under way (its state lives in its
generator and the side, runs issued ahead in the timer), and two snapshots pair only if no
request reached any timer between them (DramTimer.calls, never rolled back). The periods a
jump skips are of the same class as that one (engine/fastforward.py), so they make the same
transfers: none through the DRAM either. The first request after the jump finds the timer
exactly as the full replay leaves it, and nothing the DRAM path records (bank commands, DRAM
delays, counts, refreshes) was written in the skipped periods.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from cyclesim.vocabulary import Wait

if TYPE_CHECKING:
    from cyclesim.engine.shared import Replay

# why a look at a boundary found DRAM traffic (FastForward.misses)
DRAM_REQUESTS = "DRAM requests in the period"
DRAM_UNDER_WAY = "a DRAM transfer under way"
DRAM_OFF_BECAUSE = "DRAM requests in every period"  # FastForwardStats.off_because


@dataclass(frozen=True, slots=True)
class DramWatch:
    """A replay's DRAM timers and the nodes that transfer through them (empty without DRAM)."""

    timers: tuple  # the DRAM-modelled memories' timers
    nodes: frozenset  # indices of the nodes whose parent is a DRAM-modelled memory
    states: tuple  # their fills' and write-backs' states (engine/storage_node.py: NodeState)

    def calls(self) -> tuple[int, ...]:
        """Per timer, its issue() calls so far: equal at two moments, no request in between."""
        return tuple(t.calls for t in self.timers)

    def under_way(self) -> bool:
        """Is a transfer through a DRAM side in progress (a snapshot cannot describe it)?"""
        return any(st.stage == Wait.TRANSFER for st in self.states) or any(
            t.ahead for t in self.timers
        )

    def every_iteration(self, below: tuple) -> bool:
        """Does a loop move some DRAM-linked node to other tiles in every iteration (below: tiles
        per iteration, per node)? Each tile is a transfer: no iteration is free of requests."""
        return any(below[i] for i in self.nodes)


def dram_watch(r: Replay, active: list) -> DramWatch:
    """The DRAM side of replay r; active: (node, its fill's or write-back's state, is the fill)."""
    dram_nodes = r.plan.dram_nodes
    if not r.dram or not dram_nodes:
        return DramWatch((), frozenset(), ())
    nodes = frozenset(i for i, a in enumerate(dram_nodes) if a is not None)
    return DramWatch(
        tuple(r.dram.values()), nodes, tuple(st for n, st, _ in active if n.index in nodes)
    )
