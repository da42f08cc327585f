"""A writer's inner loop in C, compiled with cffi by `make native` and used only while it is
built from the current source: the FST change loop (views/fst_native.py) and the trace text
loops (views/text_native.py) are each one CLoop.

The build is stamped with the sha256 of its declarations and source (like the compiled DRAM
modules, dram/native.py); a stale or missing build, or CYCLESIM_PURE_PYTHON=1, leaves the
writer's Python code, which writes the same bytes.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from cyclesim.compiled import pure_python_requested

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class CLoop:
    """One compiled loop: its module name, C declarations and source, and how it is named in
    `make native`'s line ("FST writer: C loop") and what does the work without it."""

    module: str  # e.g. "cyclesim.views._fst_emit", built next to this file
    cdef: str  # must declare `const char *source_sha256(void);`
    source: str
    label: str
    fallback: str  # "the Python loop is used"

    def stamp(self) -> str:
        """The sha256 of the C source and its declarations, as the build stamps it in."""
        return hashlib.sha256((self.cdef + "\0" + self.source).encode()).hexdigest()

    def load(self) -> tuple[ModuleType | None, str]:
        """(the compiled module, '') when it is built from this source and pure Python is not
        asked for; else (None, why not)."""
        try:
            if pure_python_requested():
                return None, "CYCLESIM_PURE_PYTHON"
        except ValueError:
            return None, "CYCLESIM_PURE_PYTHON has an unknown value"
        try:
            module = importlib.import_module(self.module)
        except ImportError:
            return None, "not built (make native)"
        if module.ffi.string(module.lib.source_sha256()).decode() != self.stamp():
            return None, "stale (make native)"
        return module, ""

    def build(self) -> None:
        """Compile the source with cffi next to this module (replacing any older build)."""
        from cffi import FFI

        stem = self.module.rsplit(".", 1)[1]
        ffi = FFI()
        ffi.cdef(self.cdef)
        stamped = self.source + (
            f'\nconst char *source_sha256(void) {{ return "{self.stamp()}"; }}\n'
        )
        ffi.set_source(self.module, stamped, extra_compile_args=["-O2"])
        with tempfile.TemporaryDirectory(prefix="cyclesim-c-loop-") as tmp:
            built = Path(ffi.compile(tmpdir=tmp))
            for old in HERE.glob(f"{stem}.*"):
                if old.suffix in (".so", ".pyd"):
                    old.unlink()
            staged = HERE / (built.name + ".new")  # replace, never overwrite a mapped library
            shutil.copy2(built, staged)
            os.replace(staged, HERE / built.name)

    def make(self) -> int:
        """`make native`'s step: build unless up to date, and say so in one line (1: not built,
        the writer's Python code is used)."""
        if self.load()[0] is not None:
            print(f"{self.label}, up to date")
            return 0
        try:
            self.build()
        except Exception as e:  # no cffi, no C compiler: the Python code writes the same bytes
            first = (str(e).splitlines() or [type(e).__name__])[0][:160]
            print(f"{self.label} not built, {self.fallback} ({first})")
            return 1
        print(f"{self.label} compiled")
        return 0
