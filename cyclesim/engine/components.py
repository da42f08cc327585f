"""The replay's components as engine/shared.py builds them: the storage nodes, the PE array,
the fabric, the links and the tile visits fast-forward moves; and the environment's per-event
work (engine/event_loop.py: the loop, a process's resume, the events and timeouts). `make native`
compiles this module with the modules of the hot path (engine/native.py ENGINE_UNIT) into one
mypyc unit, whose calls to each other are native."""

from __future__ import annotations

from cyclesim.engine.event_loop import Event, Resumer, Succeeder, Timeout, Timeouts, run_events
from cyclesim.engine.fabric import Fabric
from cyclesim.engine.link import Link
from cyclesim.engine.pe_array import PeArray
from cyclesim.engine.storage_node import StorageNode
from cyclesim.engine.visits import VisitBlocks

__all__ = [
    "Event",
    "Fabric",
    "Link",
    "PeArray",
    "Resumer",
    "StorageNode",
    "Succeeder",
    "Timeout",
    "Timeouts",
    "VisitBlocks",
    "run_events",
]
