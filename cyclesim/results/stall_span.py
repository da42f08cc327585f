"""A stall span (cycles charged to one root cause) and the causes in the report's order."""

from __future__ import annotations

from dataclasses import dataclass

from cyclesim.vocabulary import Cause

# the last link of the chain of a latency the PE array's pipeline causes
PIPELINE_DEPTH = "PE pipeline depth"
CAUSES = tuple(Cause)  # in the report's column order


@dataclass(frozen=True, slots=True)
class StallSpan:
    """Cycles [start, end) charged to one root cause."""

    start: int
    end: int
    phase: str  # onload, compute, offload
    cause: str
    memory: str | None
    tensor: str | None
    port: str | None  # port name
    port_memory: str | None
    competitor: str | None
    chain: str  # the path from the PE array's wait to the root, words joined by ' <- '
    cycles: int  # end - start, except for spatial stalls spread over [start, end)
    action: str | None = (
        None  # what the root process was doing: fill, entry (reload), write-back, compute
    )
    holder: tuple[int, int] | None = None  # buffer_full: (node, the tile holding its slot)


def is_pipeline_latency(span) -> bool:
    """Whether a StallSpan (or a group of them, with the same cause and port) is the PE array's
    pipeline depth: the one latency charged to no port (a port's latency and a DMA engine's
    setup name theirs), what explain cuts."""
    return span.cause == Cause.LATENCY and span.port is None
