"""CYCLESIM_PURE_PYTHON: the one switch that makes every compiled part (the DRAM timer and
controller and the engine's hot path compiled by mypyc, the FST writer's C loop, the VCD and
Perfetto JSON text loops) give way to its pure-Python code, which gives the same results; and
NativeUnits, which chooses between a mypyc-compiled copy and its source. Foundation: it
imports no other cyclesim module.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import os
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType

PURE_ENVIRONMENT_VARIABLE = "CYCLESIM_PURE_PYTHON"
# CYCLESIM_PURE_PYTHON's values, as the user may spell them (any case, spaces around)
PURE_WORDS = {"1": True, "true": True, "yes": True, "on": True}
PURE_WORDS |= {"": False, "0": False, "false": False, "no": False, "off": False}


def pure_python_requested(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether CYCLESIM_PURE_PYTHON asks for pure Python (unset: no); ValueError naming the
    variable, its value and the accepted ones when it is none of PURE_WORDS."""
    value = environ.get(PURE_ENVIRONMENT_VARIABLE, "")
    try:
        return PURE_WORDS[value.strip().lower()]
    except KeyError:
        raise ValueError(
            f"{PURE_ENVIRONMENT_VARIABLE}={value!r}: expected 1, true, yes or on (pure Python), "
            "or 0, false, no, off or empty (the compiled code where make native built it)"
        ) from None


class NativeUnits:
    """A package's units compiled by mypyc (make native: cli/native_build.py) and which module
    to use for each: its compiled copy `_<unit>_native` only when it is an extension module
    stamped with the sha256 of the unit's sources as they are now, else the pure module (never
    a stale binary: a developer who edits a source tests the source)."""

    def __init__(self, package: str, folder: Path, units: dict[str, tuple[str, ...]]) -> None:
        self.package = package  # "cyclesim.dram"
        self.folder = folder  # where its sources and the compiled copies are
        # the module others import -> the modules compiled with it (they call each other
        # natively), itself first
        self.units = units

    def sources(self, name: str) -> list[Path]:
        """The source files of unit `name`, in order."""
        return [self.folder / f"{module}.py" for module in self.units[name]]

    def choose(
        self,
        name: str,
        sources: list[Path] | None = None,
        compiled_name: str | None = None,
        environ: Mapping[str, str] = os.environ,
    ) -> tuple[ModuleType, str]:
        """(the module to use for unit `name`, which one and why): its compiled copy if it is
        built, is an extension module and carries the hash of `sources` (default: the unit's
        files); else the pure module, saying why."""
        pure = importlib.import_module(f"{self.package}.{name}")
        try:
            if pure_python_requested(environ):
                value = environ[PURE_ENVIRONMENT_VARIABLE]
                return pure, f"pure Python ({PURE_ENVIRONMENT_VARIABLE}={value})"
        except ValueError as e:  # the library runs on, pure; the CLI refuses the value (exit 2)
            return pure, f"pure Python ({e})"
        compiled_name = compiled_name or f"{self.package}.{native_name(name)}"
        it = f"the compiled {name}.py"
        try:
            native = importlib.import_module(compiled_name)
        except ModuleNotFoundError as e:
            if e.name != compiled_name:  # the module is there but imports one that is not
                return pure, f"pure Python ({it} cannot be loaded: {e}; make native)"
            return pure, f"pure Python ({it} is not built: make native)"
        except Exception as e:  # a damaged or foreign build (bad ELF header, a stray source file)
            why = f"{type(e).__name__}: {e}".splitlines()[0]
            return pure, f"pure Python ({it} cannot be loaded: {why}; make native)"
        where = getattr(native, "__file__", None)
        if where is None:  # a directory of that name: imported as a namespace package
            where = next(iter(getattr(native, "__path__", [])), compiled_name)
        if not str(where).endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)):
            return pure, f"pure Python ({where} is not an extension module: make native)"
        if getattr(native, "SOURCE_SHA256", None) != source_sha256(sources or self.sources(name)):
            why = "its sources changed since it was built; make native"
            return pure, f"pure Python ({it} is stale: {why})"
        return native, COMPILED


COMPILED = "compiled (mypyc)"


def native_name(module: str) -> str:
    """The name of a module's compiled copy: timer -> _timer_native (an extension named after
    the module would shadow its source)."""
    return f"_{module}_native"


def source_sha256(sources: list[Path]) -> str:
    """The sha256 of a unit's source files (each one's name and bytes, in order), as the build
    stamps it into the compiled copies."""
    digest = hashlib.sha256()
    for source in sources:
        digest.update(source.name.encode() + b"\0" + source.read_bytes() + b"\0")
    return digest.hexdigest()
