"""The trace text writers' loops in C: the VCD's change lines and the Perfetto JSON's lines
copied out of byte tables, a stretch of a million lines per call instead of numpy passes.

Python made those bytes with numpy (TextLines: padded rows written side by side, then the
padding squeezed out) and per-value f-strings (a VCD integer's binary digits); these C
functions write the same bytes straight into one buffer. Compiled with cffi by `make native`
(`python -m cyclesim.views.text_native`), stamped with the sha256 of the C source like the
FST writer's loop (views/fst_native.py), and used only while the stamp matches;
CYCLESIM_PURE_PYTHON=1 forces the Python code, which writes the same bytes.
"""

from __future__ import annotations

import argparse
import sys
from types import ModuleType

from cyclesim.views.c_loop import CLoop

MODULE = "cyclesim.views._text_fill"

# a VCD change row's kind: an integer's binary digits made here, or a text made in Python
NUMBER, TEXT = 0, 1

CDEF = """
const char *source_sha256(void);
int64_t vcd_lines(size_t n_times, const uint64_t *times, const int64_t *firsts,
    size_t n, const int64_t *at, size_t n_rows, const uint8_t *kinds, const uint64_t *values,
    const int64_t *codes, const char *blob, const int64_t *offsets, char *out);
int64_t text_lines(size_t lo, size_t hi, size_t n_fields, const uintptr_t *rows,
    const int64_t *bases, const int64_t *sizes, const char *blob, const int64_t *offsets,
    char *out);
"""

SOURCE = r"""
#include <stdint.h>
#include <stddef.h>
#include <string.h>

static char *decimal(char *o, uint64_t v)
{
    char digits[20];
    int k = 0;
    do {
        digits[k++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (k)
        *o++ = digits[--k];
    return o;
}

static char *binary(char *o, uint64_t v)
{
    int top = v ? 63 - __builtin_clzll(v) : 0;
    for (int b = top; b >= 0; b--)
        *o++ = (char)('0' + ((v >> b) & 1));
    return o;
}

/* The VCD lines of n changes in time order: "#<time>" before change firsts[j] for each time j,
   then change i's line from its row at[i]: kind 0, "b<binary digits of values[r]> " and the
   identifier code blob[offsets[codes[r]] ..]; kind 1, the text blob[offsets[values[r]] ..].
   Each line ends in "\n". Returns the bytes written to out, or -1 for a row out of range. */
int64_t vcd_lines(size_t n_times, const uint64_t *times, const int64_t *firsts,
    size_t n, const int64_t *at, size_t n_rows, const uint8_t *kinds, const uint64_t *values,
    const int64_t *codes, const char *blob, const int64_t *offsets, char *out)
{
    char *o = out;
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        while (j < n_times && (size_t)firsts[j] == i) {
            *o++ = '#';
            o = decimal(o, times[j]);
            *o++ = '\n';
            j++;
        }
        int64_t r = at[i];
        if (r < 0 || (size_t)r >= n_rows)
            return -1;
        int64_t t;
        if (kinds[r] == 0) {
            *o++ = 'b';
            o = binary(o, values[r]);
            *o++ = ' ';
            t = codes[r];
        } else {
            t = (int64_t)values[r];
        }
        size_t len = (size_t)(offsets[t + 1] - offsets[t]);
        memcpy(o, blob + offsets[t], len);
        o += len;
        *o++ = '\n';
    }
    return o - out;
}

/* Lines lo..hi of fields side by side: field f of line i is text bases[f] + rows[f][i] of
   blob (from offsets[k] to offsets[k + 1]); a field whose rows is 0 has text bases[f] on
   every line. blob and out have 16 bytes to spare after their last text. Returns the bytes
   written to out, or -1 for a row not below sizes[f]. */
int64_t text_lines(size_t lo, size_t hi, size_t n_fields, const uintptr_t *rows,
    const int64_t *bases, const int64_t *sizes, const char *blob, const int64_t *offsets,
    char *out)
{
    char *o = out;
    for (size_t i = lo; i < hi; i++) {
        for (size_t f = 0; f < n_fields; f++) {
            const int64_t *column = (const int64_t *)rows[f];
            int64_t k = 0;
            if (column) {
                k = column[i];
                if (k < 0 || k >= sizes[f])
                    return -1;
            }
            k += bases[f];
            size_t len = (size_t)(offsets[k + 1] - offsets[k]);
            if (len <= 16)  /* most fields: one fixed 16-byte copy, the slack overwritten */
                memcpy(o, blob + offsets[k], 16);
            else
                memcpy(o, blob + offsets[k], len);
            o += len;
        }
    }
    return o - out;
}
"""


LOOP = CLoop(MODULE, CDEF, SOURCE, "trace text: C loops", "numpy and Python write it")


def stamp() -> str:
    """The sha256 of the C source and its declarations, as the build stamps it in."""
    return LOOP.stamp()


def load() -> ModuleType | None:
    """The compiled module when it is built from this source and pure Python is not asked
    for; else None (the writers' numpy and Python code makes the same bytes)."""
    return LOOP.load()[0]


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    return LOOP.make()


if __name__ == "__main__":
    sys.exit(main())
