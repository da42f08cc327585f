"""results: SimResult tables built once after a run; views and checks read only these."""

from cyclesim.results.stall_span import CAUSES, StallSpan
from cyclesim.results.result import SimResult, build_result

__all__ = ["CAUSES", "SimResult", "StallSpan", "build_result"]
