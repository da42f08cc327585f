"""What the engine writes down while it runs: state timelines, port grants, PE waits, counts.

Always on, because stall attribution needs it; flat tuples appended in the hot path. The
optional trace (buffer occupancy, segment spans) is collected only when tracing is on.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# states of a node process (its timeline): what it is doing from that cycle on
S_SLOT = "slot"  # waiting for a free slot; info: tile index holding it
S_PARENT = "parent"  # waiting for the parent tile; info: parent node index
S_PRODUCER = "dependency"  # waiting for the producing Einsum to finish the parent tile; info: einsum
S_PORT = "port"  # waiting for its ports; info: (port keys)
S_DMA = "dma"  # waiting for a DMA channel; info: engine name
S_SETUP = "setup"  # DMA setup; info: engine name
S_BURST = "burst"  # moving a burst; info: bottleneck port key
S_LATENCY = "latency"  # port latency after the last burst; info: port key
S_USES = "uses"  # waiting for the tile's users (children, PE) to finish; info: None
S_DRAIN = "drain"  # waiting for the previous write-back of the same values; info: node index
S_PIPE = "pipeline"  # PE pipeline depth before results can leave
S_IDLE = "idle"  # nothing left to do
S_WAIT_FILL = "wait_fill"  # drain process: the tile is not yet entered; info: node index


@dataclass(slots=True)
class Recorder:
    """Per-run records; indices are node indices, port keys are 'memory.port'."""

    fill_tl: list[list[tuple]] = field(default_factory=list)  # per node: [(t, state, info)]
    drain_tl: list[list[tuple]] = field(default_factory=list)
    grants: dict[str, list[list]] = field(default_factory=dict)  # port -> [[start, end, who, tensor]]
    pe_waits: list[tuple] = field(default_factory=list)  # (start, end, node, kind)
    pe_segments: list[tuple] | None = None  # (start, end, leaf, g) when tracing
    spatial: dict[tuple, list] = field(default_factory=dict)  # (leaf, operand) -> [cycles, first, last]
    transfers: list[tuple] | None = None  # (start, end, node, kind, tile, bits) when tracing
    occupancy: list[tuple] | None = None  # (t, node, tiles resident) when tracing
    last_finisher: dict[tuple, tuple] = field(default_factory=dict)  # (node, tile) -> ('pe'|'node', idx)
    events: int = 0
    first_step: int | None = None
    last_step_end: int = 0
