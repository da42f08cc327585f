"""`cyclesim explain`: the root causes of the non-compute cycles, ranked, where they occur, and
what would remove them — each remedy verified by replaying the changed architecture, the
replays in parallel worker processes (analysis.parallel.map_tasks). A remedy's replay is
attributed again, so a remedy that saves little names what binds after it.

Cycles per cause come from Result.stall_spans (they add up to the phase totals); this package
only groups them (causes.py), proposes the changes that could remove each (candidates.py,
arch_changes.py, dram_remedies.py, from the transfer facts in transfer.py), replays them
(replays.py) and prints the result (text.py).
"""

from cyclesim.analysis.explain.candidates import GROW, candidates
from cyclesim.analysis.explain.causes import Cause, Explanation, Remedy, rank_causes
from cyclesim.analysis.explain.replays import explain, verify
from cyclesim.analysis.explain.text import format_explanation
from cyclesim.analysis.explain.transfer import TransferEnds

__all__ = [
    "GROW",
    "Cause",
    "Explanation",
    "Remedy",
    "TransferEnds",
    "candidates",
    "explain",
    "format_explanation",
    "rank_causes",
    "verify",
]
