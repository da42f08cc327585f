"""Which FST writer this machine has, and its change loop in C: one call per stretch of
changes instead of one per change.

pylibfst exposes libfst's functions to Python, so writing a change costs a Python call (about
a microsecond, several times libfst's own work). This small C function, compiled with cffi by
`make native` (`python -m cyclesim.views.fst_native`), makes the same libfst calls in the same
order from columns (numpy arrays): the file is byte for byte the one the Python loop writes.
It receives libfst's functions as addresses taken from pylibfst, so it links against nothing.

Like the compiled DRAM modules (dram/native.py), the build is stamped with the sha256 of its C
source and used only while the stamp matches; CYCLESIM_PURE_PYTHON=1 forces the Python loop.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import os
import shutil
import sys
import tempfile
from pathlib import Path
from types import ModuleType

from cyclesim.compiled import pure_python_requested


def fst_writer() -> str | None:
    """Which FST writer this machine has: 'pylibfst', 'vcd2fst', or None."""
    try:
        import pylibfst  # noqa: F401
    except ImportError:
        return "vcd2fst" if shutil.which("vcd2fst") else None
    return "pylibfst"


MODULE = "cyclesim.views._fst_emit"
HERE = Path(__file__).resolve().parent

# what each change asks libfst for (the kinds column)
NUMBER, BITS, STRING = 0, 1, 2

CDEF = """
const char *source_sha256(void);
void emit_changes(uintptr_t ctx, uintptr_t emit_time, uintptr_t emit_bits,
    uintptr_t emit_number, uintptr_t emit_string,
    size_t n_times, const uint64_t *times, const int64_t *firsts,
    size_t n, const uint8_t *kinds, const uint32_t *handles, const uint32_t *sizes,
    const uint64_t *values, const char *blob, const int64_t *offsets);
"""

SOURCE = r"""
#include <stdint.h>
#include <stddef.h>

/* libfst's signatures (fstapi.h) */
typedef void (*time_fn)(void *, uint64_t);
typedef void (*bits_fn)(void *, uint32_t, const void *);
typedef void (*number_fn)(void *, uint32_t, uint32_t, uint64_t);
typedef void (*string_fn)(void *, uint32_t, const void *, uint32_t);

/* Change i: kinds[i] 0 = a number of sizes[i] bits (values[i]), 1 = bits, 2 = a string, both
   the bytes blob[offsets[values[i]] .. offsets[values[i] + 1]]. Time j is emitted before
   change firsts[j]. */
void emit_changes(uintptr_t ctx, uintptr_t emit_time, uintptr_t emit_bits,
    uintptr_t emit_number, uintptr_t emit_string,
    size_t n_times, const uint64_t *times, const int64_t *firsts,
    size_t n, const uint8_t *kinds, const uint32_t *handles, const uint32_t *sizes,
    const uint64_t *values, const char *blob, const int64_t *offsets)
{
    void *c = (void *)ctx;
    time_fn at = (time_fn)emit_time;
    bits_fn bits = (bits_fn)emit_bits;
    number_fn number = (number_fn)emit_number;
    string_fn string = (string_fn)emit_string;
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        while (j < n_times && (size_t)firsts[j] == i) {
            at(c, times[j]);
            j++;
        }
        uint64_t v = values[i];
        if (kinds[i] == 0) {
            number(c, handles[i], sizes[i], v);
        } else if (kinds[i] == 1) {
            bits(c, handles[i], blob + offsets[v]);
        } else {
            string(c, handles[i], blob + offsets[v], (uint32_t)(offsets[v + 1] - offsets[v]));
        }
    }
}
"""


def stamp() -> str:
    """The sha256 of the C source and its declarations, as the build stamps it in."""
    return hashlib.sha256((CDEF + "\0" + SOURCE).encode()).hexdigest()


def _stamped_source() -> str:
    return SOURCE + f'\nconst char *source_sha256(void) {{ return "{stamp()}"; }}\n'


def load() -> tuple[ModuleType | None, str]:
    """(the compiled module, how changes are written) when it is built from this source; else
    (None, how and why)."""
    try:
        if pure_python_requested():
            return None, "changes written in Python: CYCLESIM_PURE_PYTHON"
    except ValueError:
        return None, "changes written in Python: CYCLESIM_PURE_PYTHON has an unknown value"
    try:
        module = importlib.import_module(MODULE)
    except ImportError:
        return None, "changes written in Python: the C loop is not built (make native)"
    if module.ffi.string(module.lib.source_sha256()).decode() != stamp():
        return None, "changes written in Python: the C loop is stale (make native)"
    return module, "changes written by a compiled C loop"


def build() -> None:
    """Compile the C loop with cffi next to this module (replacing any older build)."""
    from cffi import FFI

    ffi = FFI()
    ffi.cdef(CDEF)
    ffi.set_source(MODULE, _stamped_source(), extra_compile_args=["-O2"])
    with tempfile.TemporaryDirectory(prefix="cyclesim-fst-") as tmp:
        built = Path(ffi.compile(tmpdir=tmp))
        for old in HERE.glob("_fst_emit.*"):
            if old.suffix in (".so", ".pyd"):
                old.unlink()
        staged = HERE / (built.name + ".new")  # replace, never overwrite a mapped library
        shutil.copy2(built, staged)
        os.replace(staged, HERE / built.name)


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    module, kind = load()
    if module is not None:
        print("FST writer: C loop, up to date")
        return 0
    try:
        build()
    except Exception as e:  # no cffi, no C compiler: the Python loop writes the same bytes
        first = (str(e).splitlines() or [type(e).__name__])[0][:160]
        print(f"FST writer: C loop not built, the Python loop is used ({first})")
        return 1
    print("FST writer: C loop compiled")
    return 0


if __name__ == "__main__":
    sys.exit(main())
