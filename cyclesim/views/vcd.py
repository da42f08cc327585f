"""The VCD writer: the waveforms' signals (views.waves) as a VCD file; one cycle is one time unit.

The changes are streamed to the file in time order, a stretch of cycles at a time
(views.change_stream), so memory stays bounded; the same run gives the same bytes (no date).
An integer is declared with the fewest bits its values need, and a signal equal to an earlier
one over the window shares its identifier code (views.change_stream decides both).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from cyclesim.outputs import atomic_output
from cyclesim.results import Result
from cyclesim.results.activity import gc_paused
from cyclesim.views import text_native
from cyclesim.views.change_stream import ChangeStream, change_stream, distinct_rows
from cyclesim.views.progress import writing_bar
from cyclesim.views.waves import Signal, Waves, X

_UNITS = ("fs", "ps", "ns", "us", "ms", "s")


def timescale_for(clock_mhz: float | None) -> tuple[str, str]:
    """The VCD timescale that makes one cycle one unit, and a header comment saying so.

    The clock period is used when VCD can state it ({1, 10, 100} x s..fs); otherwise (and
    without a clock) the unit is 1 ns and the comment gives the real period.
    """
    if clock_mhz is None:
        return "1 ns", "1 time unit = 1 cycle (no clock given; 1 ns shown per cycle)"
    period_fs = 1e9 / clock_mhz
    exp = round(math.log10(period_fs)) if period_fs > 0 else -1
    if 0 <= exp <= 17 and math.isclose(period_fs, 10.0**exp, rel_tol=1e-12):
        unit, mag = _UNITS[exp // 3], 10 ** (exp % 3)
        return f"{mag} {unit}", f"1 time unit = 1 cycle = {mag} {unit} ({clock_mhz:g} MHz)"
    return (
        "1 ns",
        f"1 time unit = 1 cycle; the clock is {clock_mhz:g} MHz ({1e3 / clock_mhz:g} ns per cycle)",
    )


_CODE_CHARS = [chr(c) for c in range(33, 127)]


def _id_code(i: int) -> str:
    """VCD identifier of the i-th variable: base-94 over the printable characters."""
    out = ""
    while True:
        i, r = divmod(i, 94)
        out += _CODE_CHARS[r]
        if not i:
            return out


class _Texts(dict):
    """value -> VCD text of a change, made once per distinct value (wires and strings repeat)."""

    def __init__(self, make) -> None:
        super().__init__()
        self.make = make

    def __missing__(self, v):
        text = self[v] = self.make(v)
        return text


def _vcd_value(var_type: str, code: str):
    """A function value -> the VCD text of a change of this variable."""
    if var_type == "wire":
        return _Texts(lambda v: f"{v}{code}").__getitem__
    if var_type == "integer":
        return _VcdInteger(code)
    return _Texts(lambda v: f"s{v} {code}").__getitem__


class _VcdInteger:
    """An integer variable's change texts: `b<binary> <code>`, `bx <code>` for "x"; `many`
    makes those of a column of values at once (a counter has a new value at most changes)."""

    def __init__(self, code: str) -> None:
        self.code = code

    def __call__(self, v) -> str:
        return f"bx {self.code}" if v == "x" else f"b{v:b} {self.code}"

    def many(self, values: np.ndarray) -> list[str]:
        """The texts of int64 values (X for "x"), by Python's own integer formatting: 2-3x
        faster than cutting binary digits out of a numpy matrix (measured)."""
        code = self.code  # any printable character, "{" included: never a format string
        if (values == X).any():
            return [f"bx {code}" if v == X else f"b{v:b} {code}" for v in values.tolist()]
        return [f"b{v:b} {code}" for v in values.tolist()]


def _vcd_header(
    w: Waves, codes: list[str], sizes: list[int], timescale: str, comment: str
) -> list[str]:
    out = [f"$comment {comment} $end", f"$timescale {timescale} $end", "$version cyclesim $end"]
    open_scope: tuple[str, ...] = ()
    for sig, code, size in zip(w.signals, codes, sizes, strict=True):
        common = 0
        while (
            common < min(len(open_scope), len(sig.scope))
            and open_scope[common] == sig.scope[common]
        ):
            common += 1
        out += ["$upscope $end"] * (len(open_scope) - common)
        out += [f"$scope module {name} $end" for name in sig.scope[common:]]
        open_scope = sig.scope
        out.append(f"$var {sig.var_type} {size} {code} {sig.name} $end")
    out += ["$upscope $end"] * len(open_scope)
    out.append("$enddefinitions $end")
    return out


@atomic_output
def write_vcd(
    res: Result,
    path: str | Path,
    *,
    clock_mhz: float | None = None,
    window: tuple[int, int] | None = None,
    progress: bool | None = False,
) -> list[Signal]:
    """Write the VCD of a traced run over window; return the signals (for the .gtkw file).

    Raise TraceError if the run was not traced or the window is empty.
    """
    act = res.activity(window)
    timescale, comment = timescale_for(clock_mhz)
    with open(path, "wb") as f, gc_paused():  # UTF-8 text, encoded here
        stream = change_stream(act)
        w = stream.w
        # an alias shares its signal's identifier code: VCD's own way to write one value once
        own = [i for i, j in enumerate(stream.alias) if j is None]
        code_of = {i: _id_code(n) for n, i in enumerate(own)}
        codes = [code_of[i if j is None else j] for i, j in enumerate(stream.alias)]
        fmt = [_vcd_value(s.var_type, c) for s, c in zip(w.signals, codes, strict=True)]
        lines = _vcd_header(w, codes, stream.sizes, timescale, comment)
        lines += [f"#{act.start}", "$dumpvars"]
        lines += [fmt[i](stream.initial[i]) for i in own] + ["$end"]
        f.write(("\n".join(lines) + "\n").encode())
        native = text_native.load()
        with writing_bar(act.end - act.start, f"VCD {Path(path).name}", progress) as bar:
            if native is not None:
                last_time = _changes_in_c(native, f, stream, fmt, codes, bar)
            else:
                last_time = _changes_in_python(f, stream, fmt, bar)
        if last_time != act.end:
            f.write(f"#{act.end}\n".encode())
    return w.signals


def _changes_in_python(f, stream: ChangeStream, fmt: list, bar) -> int | None:
    """Every change after the window's start as VCD lines made in Python; the last time."""
    last_time = None
    for times, firsts, texts in stream.stretches(fmt, bar):
        # each time's "#t" line goes before its first change: text j moves down by
        # the number of times begun at or before it
        out = np.empty(len(texts) + len(times), dtype=object)
        marks = firsts + np.arange(len(times))
        out[marks] = [f"#{t}" for t in times.tolist()]
        rest = np.ones(len(out), dtype=bool)
        rest[marks] = False
        out[rest] = texts
        f.write(("\n".join(out.tolist()) + "\n").encode())
        last_time = int(times[-1])
    return last_time


def _changes_in_c(native, f, stream: ChangeStream, fmt: list, codes: list[str], bar) -> int | None:
    """The lines _changes_in_python writes, written by the C loop (views/text_native.py) from
    rows of distinct (signal, value): an integer's binary digits made there, every other
    text (a wire's, a string's, "x", a negative number's) by fmt, once per row."""
    kinds, values, code_col, where, texts = _change_rows(stream, fmt, codes)
    blob = b"".join(texts)
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum([len(t) for t in texts], out=offsets[1:])
    longest = 3 + 64 + offsets[code_col + 1] - offsets[code_col]  # "b", 64 digits, " ", code, "\n"
    text = np.where(kinds == text_native.TEXT, values, 0).astype(np.int64)
    row_bytes = np.where(kinds == text_native.NUMBER, longest, offsets[text + 1] - offsets[text] + 1)  # fmt: skip
    ffi, lib = native.ffi, native.lib
    buffer = ffi.from_buffer
    rows = (len(kinds), buffer("uint8_t[]", kinds), buffer("uint64_t[]", values),
            buffer("int64_t[]", code_col), buffer("char[]", blob), buffer("int64_t[]", offsets))  # fmt: skip
    last_time = None
    for times, firsts, at in stream.merged(where, bar):
        at = np.ascontiguousarray(at, dtype=np.int64)
        # a row's longest line, and "#", 20 digits and "\n" per time
        out = np.empty(int(row_bytes[at].sum()) + 22 * len(times), dtype=np.uint8)
        times = np.ascontiguousarray(times, dtype=np.int64)
        firsts = np.ascontiguousarray(firsts, dtype=np.int64)
        written = lib.vcd_lines(len(times), buffer("uint64_t[]", times.view(np.uint64)),
                                buffer("int64_t[]", firsts), len(at), buffer("int64_t[]", at),
                                *rows, buffer("char[]", out))  # fmt: skip
        if written < 0:
            raise IndexError("a VCD change's row is outside the rows made for it")
        f.write(out[:written])
        last_time = int(times[-1])
    return last_time


def _change_rows(stream: ChangeStream, fmt: list, codes: list[str]) -> tuple:
    """Every distinct (signal, value) as a row of columns the C loop reads, per signal each
    change's row, and the texts the rows point to (the identifier codes first, by signal):
    kind NUMBER (a non-negative integer: value and code) or TEXT (fmt's text: its index)."""

    def classify(i: int, uniq, texts: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
        f = fmt[i]
        if stream.is_string[i] or getattr(f, "many", None) is None:
            new = uniq if stream.is_string[i] else ["x" if v == X else v for v in uniq.tolist()]  # fmt: skip
            value = np.arange(len(texts), len(texts) + len(uniq), dtype=np.uint64)
            texts += [f(v).encode() for v in new]
            return np.full(len(uniq), text_native.TEXT, dtype=np.uint8), value
        number = uniq >= 0  # an integer's digits made in C; X (no value) is negative too
        kind = np.where(number, text_native.NUMBER, text_native.TEXT).astype(np.uint8)
        value = uniq.astype(np.uint64)
        for k in np.flatnonzero(~number).tolist():
            value[k] = len(texts)
            texts.append(f("x" if uniq[k] == X else int(uniq[k])).encode())
        return kind, value

    return distinct_rows(stream, classify, [c.encode() for c in codes])
