"""Which engine runs the replay's events: the mypyc-compiled copy of its hot path (the
storage nodes' processes, the PE array's, the transfers, the fabric and the event loop,
engine/components.py) when `make native` built it from the current sources, else the
pure-Python modules, which give the same events in the same order (cyclesim/compiled.py NativeUnits: stamps,
CYCLESIM_PURE_PYTHON).

What mypyc checks at run time: every argument and field annotated with a builtin type (int,
list, tuple, dict, str) or a class of the unit must be one; others (SimPy's, the records'
Rows) are not checked.
"""

from __future__ import annotations

from pathlib import Path

from cyclesim.compiled import NativeUnits

PACKAGE = "cyclesim.engine"
HERE = Path(__file__).resolve().parent
# the module shared.py imports -> the modules compiled with it, itself first
NATIVE_UNITS = {
    "components": (
        "components",
        "storage_node",
        "pe_array",
        "transfer",
        "fabric",
        "link",
        "tiles",
        "transfer_state",
        "visits",
        "event_loop",
    ),
}
UNITS = NativeUnits(PACKAGE, HERE, NATIVE_UNITS)
# looked up by shared.py at each replay, so that a test may swap them
components, ENGINE_KIND = UNITS.choose("components")
