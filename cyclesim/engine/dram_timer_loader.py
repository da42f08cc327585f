"""Which DRAM timer the replay uses: the mypyc-compiled copy of dram_timer.py when it was built
from the current source, else the pure-Python module (never a stale binary).

`make native` (python -m cyclesim.engine.dram_timer_build) compiles a copy of dram_timer.py
as `cyclesim.engine._dram_timer_native` with the source's sha256 stamped in. It is used only
while that stamp equals the hash of dram_timer.py as it is now: a developer who edits the
source tests the source. CYCLESIM_PURE_PYTHON=1 forces the pure module.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import os
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType

from cyclesim.engine import dram_timer as pure

NATIVE_MODULE = "cyclesim.engine._dram_timer_native"
SOURCE = Path(pure.__file__)
PURE_ENVIRONMENT_VARIABLE = "CYCLESIM_PURE_PYTHON"
COMPILED = "compiled (mypyc)"


def source_sha256(source: Path = SOURCE) -> str:
    """The sha256 of a timer source file, as the build stamps it into the compiled module."""
    return hashlib.sha256(source.read_bytes()).hexdigest()


def choose_timer(
    source: Path = SOURCE,
    native_name: str = NATIVE_MODULE,
    environ: Mapping[str, str] = os.environ,
) -> tuple[ModuleType, str]:
    """(the timer module to use, which one and why): the compiled module if it is built, is an
    extension module and carries the hash of `source`; else the pure module, saying why."""
    if environ.get(PURE_ENVIRONMENT_VARIABLE, "") not in ("", "0"):
        return (
            pure,
            f"pure Python ({PURE_ENVIRONMENT_VARIABLE}={environ[PURE_ENVIRONMENT_VARIABLE]})",
        )
    try:
        native = importlib.import_module(native_name)
    except ImportError:
        return pure, "pure Python (the compiled timer is not built: make native)"
    if not str(native.__file__).endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)):
        return pure, f"pure Python ({native.__file__} is not an extension module)"
    if getattr(native, "SOURCE_SHA256", None) != source_sha256(source):
        return pure, (
            "pure Python (the compiled timer is stale: dram_timer.py changed since it was "
            "built; make native)"
        )
    return native, COMPILED


timer_module, TIMER_KIND = choose_timer()
DramTimer = timer_module.DramTimer
