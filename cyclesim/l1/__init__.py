"""L1 placement of composite ops on a Tensix-like core: heap, stack and pool policies.

Runtime API (see `cyclesim.l1.model` for a worked sequence):

* `L1(config, policy)` / `L1.from_config(mapping, policy)`: one core's L1.
* `L1.allocate(name, kind, size_bytes, *, page_size_bytes, num_banks, region) -> Placement`,
  `L1.free(name)`, `L1.push_frame(op, *, pool_bytes)`, `L1.pop_frame()`, `L1.launch(program)`,
  `L1.end_program()`, `L1.snapshot()`, `L1.events`.
* `L1AllocationError` (clash / out of memory / beyond L1, with tt-metal's facts).

Offline: `load_ops(path)` validates op descriptions, `replay(ops, config, policy)` replays them.
"""

from importlib import import_module
from typing import TYPE_CHECKING

# name -> submodule; imported on first use, so `cyclesim --help` (which registers `l1`) does
# not load the YAML loader and the model
_WHERE = {
    **dict.fromkeys(
        ("AllocKind", "FailureKind", "L1Config", "Policy", "Region", "load_l1_config"), "config"
    ),
    "L1": "model",
    **dict.fromkeys(("L1AllocationError", "L1UsageError"), "errors"),
    **dict.fromkeys(("L1Event", "Placement", "Snapshot"), "events"),
    **dict.fromkeys(("OpsFile", "load_ops", "load_ops_text"), "ops"),
    **dict.fromkeys(("ReplayResult", "replay"), "tree_replay"),
}

if TYPE_CHECKING:
    from cyclesim.l1.config import AllocKind, FailureKind, L1Config, Policy, Region, load_l1_config
    from cyclesim.l1.errors import L1AllocationError, L1UsageError
    from cyclesim.l1.events import L1Event, Placement, Snapshot
    from cyclesim.l1.model import L1
    from cyclesim.l1.ops import OpsFile, load_ops, load_ops_text
    from cyclesim.l1.tree_replay import ReplayResult, replay


def __getattr__(name: str):
    """Import the submodule that holds `name` on first use (PEP 562)."""
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"cyclesim.l1.{where}"), name)
    globals()[name] = value
    return value


__all__ = [
    "L1",
    "AllocKind",
    "FailureKind",
    "L1AllocationError",
    "L1Config",
    "L1Event",
    "L1UsageError",
    "OpsFile",
    "Placement",
    "Policy",
    "Region",
    "ReplayResult",
    "Snapshot",
    "load_l1_config",
    "load_ops",
    "load_ops_text",
    "replay",
]
