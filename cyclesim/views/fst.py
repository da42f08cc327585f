"""FST waveforms (compressed; GTKWave and Surfer read them): the VCD's signals and changes.

Written directly with pylibfst (GTKWave's libfst behind a Python binding, from PyPI) when it is
installed; otherwise the VCD is written to a temporary file and converted with GTKWave's
`vcd2fst` (Debian package gtkwave, `make gtkwave-deps`). Neither: a TraceError saying so.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections import deque
from itertools import repeat, starmap
from operator import call
from pathlib import Path

import numpy as np

from cyclesim.errors import TraceError
from cyclesim.outputs import atomic_output, final_names
from cyclesim.results import Result
from cyclesim.results.activity import gc_paused
from cyclesim.views import fst_native
from cyclesim.views.change_stream import ChangeStream, change_stream, distinct_rows
from cyclesim.views.fst_native import fst_writer
from cyclesim.views.progress import writing_bar
from cyclesim.views.vcd import timescale_for, write_vcd
from cyclesim.views.waves import Signal, X, plan_waves


@atomic_output
def write_fst(
    res: Result,
    path: str | Path,
    *,
    clock_mhz: float | None = None,
    window: tuple[int, int] | None = None,
    progress: bool | None = False,
    written_vcd: Path | None = None,
) -> list[Signal]:
    """Write the FST of a traced run over window; return the signals (for the .gtkw file).

    written_vcd: a VCD of this run, clock and window written just before; vcd2fst converts it
    rather than a second copy of it (pylibfst writes the FST directly and needs none).
    """
    writer = fst_writer()
    if writer == "pylibfst":
        return _write_with_pylibfst(res, Path(path), clock_mhz, window, progress)
    if writer == "vcd2fst":
        if written_vcd is not None:
            _vcd2fst(written_vcd, path)
            return plan_waves(res.activity(window)).signals  # the VCD's, without its changes
        with tempfile.TemporaryDirectory() as tmp:
            vcd = Path(tmp) / "trace.vcd"
            signals = write_vcd(res, vcd, clock_mhz=clock_mhz, window=window, progress=progress)
            _vcd2fst(vcd, path)
        return signals
    raise TraceError(
        f"FST {path}: needs the pylibfst package (pip install pylibfst) or GTKWave's vcd2fst "
        "(make gtkwave-deps); --vcd needs neither"
    )


def _vcd2fst(vcd: Path, path: str | Path) -> None:
    out = subprocess.run(["vcd2fst", str(vcd), str(path)], capture_output=True, text=True)
    if out.returncode != 0:
        raise TraceError(f"vcd2fst could not convert the VCD: {out.stderr.strip()}")


def _write_with_pylibfst(res, path: Path, clock_mhz, window, progress) -> list[Signal]:
    from pylibfst import ffi, lib

    act = res.activity(window)
    timescale, comment = timescale_for(clock_mhz)
    ctx = create_fst_writer(ffi, lib, path)
    try:
        lib.fstWriterSetTimescaleFromString(ctx, timescale.replace(" ", "").encode())
        lib.fstWriterSetVersion(ctx, b"cyclesim")
        lib.fstWriterSetComment(ctx, comment.encode())
        lib.fstWriterSetDate(ctx, b"")
        with gc_paused(), writing_bar(act.end - act.start, f"FST {path.name}", progress) as bar:
            stream = change_stream(act)
            w = stream.w
            handles = _register(lib, ffi, ctx, w.signals, stream.sizes, stream.alias)
            ops = [
                _fst_call(lib, ctx, s.var_type, h, size)
                for s, h, size in zip(w.signals, handles, stream.sizes, strict=True)
            ]
            emit_time = lib.fstWriterEmitTimeChange
            emit_time(ctx, act.start)
            own = [i for i, j in enumerate(stream.alias) if j is None]  # an alias has no changes
            _calls([ops[i](stream.initial[i]) for i in own])
            native, _ = fst_native.load()
            blocks = _Blocks(lib, ctx)
            if native is not None:
                _emit_in_c(native, lib, ffi, ctx, w.signals, handles, stream, bar, blocks)
            else:
                _emit_in_python(emit_time, ctx, ops, stream, bar, blocks)
            emit_time(ctx, act.end)
    finally:
        lib.fstWriterClose(ctx)
    return w.signals


def create_fst_writer(ffi, lib, path: Path):
    """libfst's writer for path, or TraceError naming the file and why the system refused it
    (a missing folder, no permission: fopen's errno)."""
    ffi.errno = 0
    ctx = lib.fstWriterCreate(str(path).encode(), 1)
    if ctx == ffi.NULL:
        why = os.strerror(ffi.errno) if ffi.errno else "libfst could not open it"
        raise TraceError(f"FST {final_names(str(path))}: cannot create the file: {why}")
    return ctx


# Changes per FST block: libfst holds a block's changes in one buffer, each signal's a chain
# linked backwards through it, and walks every chain when it writes the block. In one block
# (the memory-size example's 2.5 million changes, ~30 MB) the walk missed the cache at every
# link: 0.31 s for the FST; in blocks of 2^18 changes (a few MB) 0.21 s, files as large
BLOCK_CHANGES = 1 << 18


class _Blocks:
    """Ends libfst's block (fstWriterFlushContext: at the next time change) once BLOCK_CHANGES
    changes have been emitted into it; counted per stretch, the C and Python loops alike."""

    def __init__(self, lib, ctx) -> None:  # noqa: ANN001
        self.flush, self.ctx, self.changes = lib.fstWriterFlushContext, ctx, 0

    def emitted(self, changes: int) -> None:
        self.changes += changes
        if self.changes >= BLOCK_CHANGES:
            self.flush(self.ctx)
            self.changes = 0


def _emit_in_python(emit_time, ctx, ops: list, stream: ChangeStream, bar, blocks: _Blocks) -> None:
    """Every change after the window's start, as libfst calls made from Python (C-looped)."""
    for times, firsts, calls in stream.stretches(ops, bar):
        # each time's call goes before its first change's: call j moves down by the number of
        # times begun at or before it
        out = np.empty(len(calls) + len(times), dtype=object)
        marks = firsts + np.arange(len(times))
        out[marks] = np.fromiter(((emit_time, ctx, t) for t in times.tolist()), dtype=object, count=len(times))  # fmt: skip
        rest = np.ones(len(out), dtype=bool)
        rest[marks] = False
        out[rest] = calls
        _calls(out.tolist())
        blocks.emitted(len(calls))


def _emit_in_c(native, lib, ffi, ctx, signals: list[Signal], handles, stream, bar, blocks: _Blocks) -> None:  # fmt: skip
    """Every change after the window's start, as the same libfst calls _emit_in_python makes
    (so the same bytes), made by the compiled loop from columns: one call per stretch."""
    kinds, handle_col, size_col, values, blob, offsets, where = _change_columns(
        signals, handles, stream
    )
    address = [int(ffi.cast("uintptr_t", x)) for x in (
        ctx, ffi.addressof(lib, "fstWriterEmitTimeChange"), ffi.addressof(lib, "fstWriterEmitValueChange"),
        ffi.addressof(lib, "fstWriterEmitValueChange64"), ffi.addressof(lib, "fstWriterEmitVariableLengthValueChange"),
    )]  # fmt: skip
    buffer = native.ffi.from_buffer
    blob_c, offsets_c = buffer("char[]", blob), buffer("int64_t[]", offsets)
    for times, firsts, at in stream.merged(where, bar):
        columns = [c[at] for c in (kinds, handle_col, size_col, values)]  # gathered: contiguous
        times, firsts = times.astype(np.uint64), firsts.astype(np.int64, copy=False)
        native.lib.emit_changes(
            *address, len(times), buffer("uint64_t[]", times), buffer("int64_t[]", firsts),
            len(at), *(buffer(t, c) for t, c in zip(_C_TYPES, columns, strict=True)),
            blob_c, offsets_c,
        )  # fmt: skip
        blocks.emitted(len(at))


_C_TYPES = ("uint8_t[]", "uint32_t[]", "uint32_t[]", "uint64_t[]")


def _change_columns(signals: list[Signal], handles, stream: ChangeStream) -> tuple:
    """Every distinct (signal, value) as a row of columns the C loop reads, and per signal each
    change's row: kind (fst_native's NUMBER, BITS or STRING), handle, size and value (a
    number's, or where its bytes are in blob by offsets), making the libfst call _fst_call
    makes for it."""

    def classify(i: int, uniq, texts: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
        if stream.is_string[i]:  # strings
            value = np.arange(len(texts), len(texts) + len(uniq), dtype=np.uint64)
            texts += [str(v).encode() for v in uniq]
            return np.full(len(uniq), fst_native.STRING, dtype=np.uint8), value
        if signals[i].var_type == "wire":
            return np.full(len(uniq), fst_native.BITS, dtype=np.uint8), (uniq != 0).astype(
                np.uint64
            )
        number = uniq >= 0  # a number of `size` bits, below 1 << size; "x" or negative as bits
        kind = np.where(number, fst_native.NUMBER, fst_native.BITS).astype(np.uint8)
        value = uniq.astype(np.uint64)
        for k in np.flatnonzero(~number).tolist():
            v = int(uniq[k])
            value[k] = len(texts)
            texts.append(b"x" * stream.sizes[i] if v == X else f"{v:064b}".encode())
        return kind, value

    # a wire's two values: texts 0 and 1
    kinds, values, signal, where, texts = distinct_rows(stream, classify, [b"0", b"1"])
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum([len(t) for t in texts], out=offsets[1:])
    handle_col = np.asarray(handles, dtype=np.uint32)[signal]
    size_col = np.asarray(stream.sizes, dtype=np.uint32)[signal]
    return kinds, handle_col, size_col, values, b"".join(texts), offsets, where


def _calls(calls: list[tuple]) -> None:
    """Make each call (function, *arguments) in order, looped in C (map, deque), not Python."""
    deque(starmap(call, calls), maxlen=0)


def _fst_call(lib, ctx, var_type: str, handle: int, size: int = 64):
    """A function value -> the libfst call (function, *arguments) that writes one change of
    this variable (an integer of `size` bits): as change_emitter writes a _fst_value change,
    made once per distinct value."""
    fixed, variable = lib.fstWriterEmitValueChange, lib.fstWriterEmitVariableLengthValueChange
    number = lib.fstWriterEmitValueChange64
    if var_type == "wire":
        one, zero = (fixed, ctx, handle, b"1"), (fixed, ctx, handle, b"0")
        return lambda v: one if v else zero
    if var_type == "integer":
        unknown = (fixed, ctx, handle, b"x" * size)

        def integer(v):
            if v == "x":
                return unknown
            if 0 <= v < 1 << size:
                return (number, ctx, handle, size, v)
            return (fixed, ctx, handle, f"{v:064b}".encode())  # negative: size is 64

        def many(values: np.ndarray) -> list[tuple]:
            """The calls of a column of int64 values (X for "x"), made by zip in C: a counter
            has a new value at most changes."""
            if (values < 0).any():  # "x" or a negative number: one at a time
                return [integer("x" if v == X else v) for v in values.tolist()]
            n = len(values)
            return list(
                zip(repeat(number, n), repeat(ctx), repeat(handle), repeat(size), values.tolist())
            )

        integer.many = many  # type: ignore[attr-defined]
        return integer

    def string(v):
        data = str(v).encode()
        return (variable, ctx, handle, data, len(data))

    return string


def change_emitter(lib, ctx):
    """emit(change): write one change made by a _fst_value function, the way its kind asks
    (the single-core and the chip waveforms write through it)."""
    fixed, variable = lib.fstWriterEmitValueChange, lib.fstWriterEmitVariableLengthValueChange
    number = lib.fstWriterEmitValueChange64  # libfst writes its 64 bits out as '0'/'1'

    def emit(change) -> None:
        h, data, kind = change
        if kind is _NUMBER:
            number(ctx, h, 64, data)
        elif kind is _STRING:
            variable(ctx, h, data, len(data))
        else:
            fixed(ctx, h, data)

    return emit


def _register(
    lib, ffi, ctx, signals: list[Signal], sizes: list[int] | None = None, alias: list | None = None
) -> list[int]:
    """Scopes and variables in the VCD's order; the handle of each variable. sizes: each
    integer's bits (default 64); alias[i] = j: variable i is an alias of variable j (it shares
    j's handle and changes, as the VCD's identifier code)."""
    handles, open_scope = [], ()
    kinds = {
        "wire": lib.FST_VT_VCD_WIRE,
        "integer": lib.FST_VT_VCD_INTEGER,
        "string": lib.FST_VT_GEN_STRING,
    }
    for i, sig in enumerate(signals):
        common = 0
        while common < min(len(open_scope), len(sig.scope)) and open_scope[common] == sig.scope[common]:  # fmt: skip
            common += 1
        for _ in range(len(open_scope) - common):
            lib.fstWriterSetUpscope(ctx)
        for name in sig.scope[common:]:
            lib.fstWriterSetScope(ctx, lib.FST_ST_VCD_MODULE, name.encode(), ffi.NULL)
        open_scope = sig.scope
        size = {"wire": 1, "string": 0}.get(sig.var_type) or (sizes[i] if sizes else 64)
        same = alias[i] if alias else None
        of = 0 if same is None else handles[same]
        handles.append(lib.fstWriterCreateVar(ctx, kinds[sig.var_type], lib.FST_VD_IMPLICIT, size, sig.name.encode(), of))  # fmt: skip
    for _ in open_scope:
        lib.fstWriterSetUpscope(ctx)
    return handles


_BITS, _NUMBER, _STRING = "bits", "number", "string"  # how emit writes a change


def _fst_value(var_type: str, handle: int):
    """A function value -> (handle, data, how emit writes it) for one change of this variable:
    a wire's two changes made once, an integer passed as a number (libfst writes its bits), a
    string's bytes made once per distinct value."""
    if var_type == "wire":
        one, zero = (handle, b"1", _BITS), (handle, b"0", _BITS)
        return lambda v: one if v else zero
    if var_type == "integer":
        unknown = (handle, b"x" * 64, _BITS)

        def integer(v):
            if v == "x":
                return unknown
            if 0 <= v < 1 << 64:
                return (handle, v, _NUMBER)
            return (handle, f"{v:064b}".encode(), _BITS)

        return integer
    texts: dict = {}

    def string(v):
        out = texts.get(v)
        if out is None:
            out = texts[v] = (handle, str(v).encode(), _STRING)
        return out

    return string
