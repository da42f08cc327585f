"""Which DRAM modules run compiled: the mypyc-compiled copy of the timer (dram/timer.py and
the modules it is made of), of the byte-run slicing (dram/byte_runs.py) and of the controller
in the loop (dram/frontend.py with dram/controller.py) when it was built from the current
sources, else the pure-Python modules (never a stale binary).

`make native` (python -m cyclesim.cli.native_build) compiles a copy of each source under
another name (`_timer_native`: an extension next to timer.py would shadow it) with the sha256
of its unit's sources stamped in. A copy is used only while that stamp equals the hash of the
sources as they are now: a developer who edits a source tests the source.
CYCLESIM_PURE_PYTHON=1 (or true, yes, on) forces pure Python; 0, false, no, off or empty
leave the choice to the build; any other value is refused by the CLI (pure_python_requested).
"""

from __future__ import annotations

from pathlib import Path

from cyclesim.compiled import COMPILED as COMPILED  # (tests compare choose() with it)
from cyclesim.compiled import NativeUnits

PACKAGE = "cyclesim.dram"
HERE = Path(__file__).resolve().parent
# what make native compiles, a unit at a time: the module others import -> the modules compiled
# together with it (they call each other natively), itself first
NATIVE_UNITS = {
    "timer": ("timer", "column_timing", "paces", "row_visits"),
    "byte_runs": ("byte_runs",),
    "frontend": ("frontend", "controller"),
}
UNITS = NativeUnits(PACKAGE, HERE, NATIVE_UNITS)
unit_sources = UNITS.sources
choose = UNITS.choose

timer_module, TIMER_KIND = choose("timer")
slices_module, SLICES_KIND = choose("byte_runs")
DramTimer = timer_module.DramTimer
byte_runs = slices_module.byte_runs
# the front end and the controllers (`cyclesim dram`, `timing: controller`): the compiled
# frontend imports the compiled controller, so both come from the one module chosen
controller_module, CONTROLLER_KIND = choose("frontend")
FrontEnd = controller_module.FrontEnd
Request = controller_module.Request
Channel = controller_module.Channel
# what `cyclesim --version` and the DRAM benchmark print after "DRAM timer: "
NATIVE_KIND = TIMER_KIND
if SLICES_KIND != TIMER_KIND:
    NATIVE_KIND += f"; byte-run slicing {SLICES_KIND}"
if CONTROLLER_KIND != TIMER_KIND:
    NATIVE_KIND += f"; controller {CONTROLLER_KIND}"
