"""results: Result tables built once after a run; views and checks read only these."""

from cyclesim.results.result import Result
from cyclesim.results.result_build import build_result
from cyclesim.results.stall_span import CAUSES, StallSpan

__all__ = ["CAUSES", "Result", "StallSpan", "build_result"]
