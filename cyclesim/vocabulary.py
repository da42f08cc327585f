"""The words the engine records and every layer above it reads: causes, waits, directions.

One module, importing nothing of cyclesim, so the engine, results, views and checks all use
the same names without an import cycle or a layer arrow pointing up. Each is a StrEnum whose
values are the strings reports, traces and JSON have always printed: a member *is* its string
(`Cause.BANDWIDTH == "bandwidth"`, same hash, same `str()` and `f"{...}"`), so a record made
of members formats, hashes and sorts exactly as one made of the bare strings.
"""

from __future__ import annotations

from enum import StrEnum


class Cause(StrEnum):
    """The root cause a stalled PE cycle is charged to (results/attribution.py; docs/causes.md).

    The order is the order of the report's columns and of the plots' legends.
    """

    BANDWIDTH = "bandwidth"  # moving bursts: the port's width binds
    CONTENTION = "contention"  # a port or DMA channel held by another requester
    BUFFER_FULL = "buffer_full"  # no free slot, or no room, in the memory
    LATENCY = "latency"  # a port's latency, a DMA setup, or the PE pipeline's depth
    DEPENDENCY = "dependency"  # the producing Einsum has not computed the values yet
    SPATIAL = "spatial"  # PE steps wait on a port too narrow for one step's values
    L1_ALLOC = "l1_alloc"  # an L1 allocator found no region (engine/l1.py)
    # DRAM-modelled memories (docs/dram_causes.md)
    ROW_MISS = "row_miss"
    BANK_CONFLICT = "bank_conflict"
    REFRESH = "refresh"
    TURNAROUND = "turnaround"
    DRAM_QUEUE = "dram_queue"  # the controller's queue full, or older requests served first
    # a systolic fold's wavefront (engine/systolic.py)
    SYSTOLIC_FILL = "systolic_fill"
    SYSTOLIC_DRAIN = "systolic_drain"


DRAM_CAUSES = (
    Cause.ROW_MISS,
    Cause.BANK_CONFLICT,
    Cause.REFRESH,
    Cause.TURNAROUND,
    Cause.DRAM_QUEUE,
)


class Wait(StrEnum):
    """Where a fill, write-back or PE process is, from a cycle on: one word for both records of it.

    A timeline row (engine/record.py: fill_tl, drain_tl; read by attribution and the deadlock
    report, so these values are user-visible) and the stage a process is suspended at
    (engine/storage_node.py NodeState, pe_array.py; read by fast-forward, compared only with itself). A member used only as a
    stage says so.
    """

    START = "start"  # stage only: not yet started
    SLOT = "slot"  # waiting for a free slot; info: tile index holding it
    SPACE = "space"  # waiting for room in its memory; info: (node, tile) holding it (space.py)
    PARENT = "parent"  # waiting for the parent tile; info: parent node index
    # waiting for the producer's part of the parent tile; info: (einsum, part key)
    PRODUCER = "dependency"
    # waiting for the previous write-back of the same values; info: node
    PREVIOUS_WRITE_BACK = "write-back"
    USES = "uses"  # waiting for the tile's users (children, PE) to finish; info: None
    TRANSFER = "transfer"  # stage only: a transfer in progress (its own stage in TransferState)
    DMA = "dma"  # waiting for a DMA channel; info: engine name
    SETUP = "setup"  # DMA setup; info: engine name
    PORT = "port"  # waiting for its ports (a grant); info: (port keys)
    WIDTH = "width"  # stage only: waiting for the port widths to be timed
    BURST = "burst"  # moving bursts (a run of them); info: bottleneck port key
    DRAM = "dram"  # a DRAM delay (engine/dram_port.py); info: (cause, port key, row opener, where)
    LATENCY = "latency"  # port latency after the last burst; info: port key
    PIPELINE = "pipeline"  # PE pipeline depth before results can leave
    OPERAND = "operand"  # stage only: the PE array waits for a segment's operands
    WAVEFRONT_FILL = "wavefront_fill"  # stage only: a systolic fold's preload and skew
    COMPUTE = "compute"  # stage only: the PE array computes a segment
    WAVEFRONT_DRAIN = "wavefront_drain"  # stage only: a systolic fold's results draining out
    IDLE = "idle"  # nothing left to do (the process is done)


class PeWait(StrEnum):
    """What the PE array waits for about a tile (Recorder.pe_waits)."""

    RESIDENT = "resident"  # the tile to be in its memory; key: the tile
    PRODUCED = "produced"  # an intermediate's part to be computed; key: the part key


class Direction(StrEnum):
    """The two processes of a storage node: filling it from its parent, writing back to it."""

    FILL = "fill"
    WRITE_BACK = "write-back"


class TransferKind(StrEnum):
    """A traced transfer (Recorder.transfers): what the events table and the DMA tracks show."""

    FILL = "fill"  # a tile entering a node from its parent
    RELOAD = "reload"  # an output tile's previous values coming back for accumulation
    WRITE_BACK = "write-back"  # a tile's values leaving for the parent


class Fold(StrEnum):
    """The two ends of a systolic fold (engine/systolic.py; Recorder.systolic, systolic_spans)."""

    FILL = "fill"
    DRAIN = "drain"


class BankCommand(StrEnum):
    """The bank commands of a traced DRAM replay (Recorder.dram_banks, dram/timer.py)."""

    ACTIVATE = "activate"
    PRECHARGE = "precharge"
    REFRESH = "refresh"


class Access(StrEnum):
    """The directions of a memory access count (schedule/counts.py)."""

    READ = "read"
    WRITE = "write"
    READ_TO_BELOW = "read_to_below"
    WRITE_FROM_ABOVE = "write_from_above"
    READ_TO_ABOVE = "read_to_above"
    WRITE_FROM_BELOW = "write_from_below"
