"""Which DRAM modules run compiled: the mypyc-compiled copy of the timer (dram/timer.py and
the modules it is made of), of the byte-run slicing (dram/byte_runs.py) and of the controller
in the loop (dram/frontend.py with dram/controller.py) when it was built from the current
sources, else the pure-Python modules (never a stale binary).

`make native` (python -m cyclesim.dram.native_build) compiles a copy of each source under
another name (`_timer_native`: an extension next to timer.py would shadow it) with the sha256
of its unit's sources stamped in. A copy is used only while that stamp equals the hash of the
sources as they are now: a developer who edits a source tests the source.
CYCLESIM_PURE_PYTHON=1 (or true, yes, on) forces pure Python; 0, false, no, off or empty
leave the choice to the build; any other value is refused by the CLI (pure_python_requested).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import os
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType

from cyclesim.compiled import PURE_ENVIRONMENT_VARIABLE, pure_python_requested

PACKAGE = "cyclesim.dram"
HERE = Path(__file__).resolve().parent
# what make native compiles, a unit at a time: the module others import -> the modules compiled
# together with it (they call each other natively), itself first
NATIVE_UNITS = {
    "timer": ("timer", "column_timing", "paces", "row_visits"),
    "byte_runs": ("byte_runs",),
    "frontend": ("frontend", "controller"),
}
COMPILED = "compiled (mypyc)"


def native_name(module: str) -> str:
    """The name of a module's compiled copy: timer -> _timer_native."""
    return f"_{module}_native"


def unit_sources(name: str) -> list[Path]:
    """The source files of compiled unit `name` (NATIVE_UNITS), in order."""
    return [HERE / f"{module}.py" for module in NATIVE_UNITS[name]]


def source_sha256(sources: list[Path]) -> str:
    """The sha256 of a unit's source files (each one's name and bytes, in order), as the build
    stamps it into the compiled copies."""
    digest = hashlib.sha256()
    for source in sources:
        digest.update(source.name.encode() + b"\0" + source.read_bytes() + b"\0")
    return digest.hexdigest()


def choose(
    name: str,
    sources: list[Path] | None = None,
    compiled_name: str | None = None,
    environ: Mapping[str, str] = os.environ,
) -> tuple[ModuleType, str]:
    """(the module to use for unit `name`, which one and why): its compiled copy if it is
    built, is an extension module and carries the hash of `sources` (default: the unit's
    files); else the pure module, saying why."""
    pure = importlib.import_module(f"{PACKAGE}.{name}")
    sources = sources or unit_sources(name)
    try:
        if pure_python_requested(environ):
            value = environ[PURE_ENVIRONMENT_VARIABLE]
            return pure, f"pure Python ({PURE_ENVIRONMENT_VARIABLE}={value})"
    except ValueError as e:  # the library runs on, pure; the CLI refuses the value (exit 2)
        return pure, f"pure Python ({e})"
    compiled_name = compiled_name or f"{PACKAGE}.{native_name(name)}"
    try:
        native = importlib.import_module(compiled_name)
    except ModuleNotFoundError as e:
        if e.name != compiled_name:  # the module is there but imports one that is not
            return pure, f"pure Python (the compiled {name}.py cannot be loaded: {e}; make native)"
        return pure, f"pure Python (the compiled {name}.py is not built: make native)"
    except Exception as e:  # a damaged or foreign build (bad ELF header, a stray source file)
        why = f"{type(e).__name__}: {e}".splitlines()[0]
        return pure, f"pure Python (the compiled {name}.py cannot be loaded: {why}; make native)"
    where = getattr(native, "__file__", None)
    if where is None:  # a directory of that name: imported as a namespace package
        where = next(iter(getattr(native, "__path__", [])), compiled_name)
    if not str(where).endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)):
        return pure, f"pure Python ({where} is not an extension module: make native)"
    if getattr(native, "SOURCE_SHA256", None) != source_sha256(sources):
        return pure, (
            f"pure Python (the compiled {name}.py is stale: its sources changed since it was "
            "built; make native)"
        )
    return native, COMPILED


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
