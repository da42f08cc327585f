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
import shutil
import sys
from types import ModuleType

from cyclesim.views.c_loop import CLoop


def fst_writer() -> str | None:
    """Which FST writer this machine has: 'pylibfst', 'vcd2fst', or None."""
    try:
        import pylibfst  # noqa: F401
    except ImportError:
        return "vcd2fst" if shutil.which("vcd2fst") else None
    return "pylibfst"


MODULE = "cyclesim.views._fst_emit"

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


LOOP = CLoop(MODULE, CDEF, SOURCE, "FST writer: C loop", "the Python loop is used")


def stamp() -> str:
    """The sha256 of the C source and its declarations, as the build stamps it in."""
    return LOOP.stamp()


def load() -> tuple[ModuleType | None, str]:
    """(the compiled module, how changes are written) when it is built from this source; else
    (None, how and why)."""
    module, why = LOOP.load()
    if module is None:
        loop = "the C loop is " if why.endswith("(make native)") else ""
        return None, f"changes written in Python: {loop}{why}"
    return module, "changes written by a compiled C loop"


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    return LOOP.make()


if __name__ == "__main__":
    sys.exit(main())
