"""A DRAM trace is bounded while it is read: its lines (counted before parsing a regular file,
as they stream from a pipe), its bytes and its line length; nothing of it is read whole."""

from __future__ import annotations

import os
import threading

import pytest

import cyclesim.dram.trace as trace
from cyclesim.errors import SpecError

LINES = "".join(f"0x{i * 64:x} READ {i}\n" for i in range(6))


def test_a_file_with_too_many_lines_is_refused_before_parsing(tmp_path, monkeypatch):
    monkeypatch.setattr(trace, "MAX_LINES", 5)
    parsed = []
    monkeypatch.setattr(trace, "Request", lambda *a: parsed.append(a))  # nothing is parsed
    (tmp_path / "t.trc").write_text(LINES)
    with pytest.raises(SpecError, match=r"t.trc:6: too many lines; expected at most 5"):
        trace.read_trace(tmp_path / "t.trc")
    assert parsed == []


def test_a_pipe_with_too_many_lines_is_refused_as_it_streams(tmp_path, monkeypatch):
    monkeypatch.setattr(trace, "MAX_LINES", 5)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "w") as f:
            try:
                f.write(LINES + "0x0 READ 9\n" * 1000)
            except BrokenPipeError:
                pass

    writer = threading.Thread(target=write)
    writer.start()
    with pytest.raises(SpecError, match=r"pipe:6: too many lines"):
        trace.read_trace(fifo)
    writer.join(timeout=10)


def test_the_bytes_and_the_line_length_are_bounded(tmp_path, monkeypatch):
    (tmp_path / "long.trc").write_text("0x0 READ 0\n" + "0" * 1000 + "\n")
    with pytest.raises(SpecError, match=r"long.trc:2: a line longer than 256 bytes"):
        trace.read_trace(tmp_path / "long.trc")
    monkeypatch.setattr(trace, "MAX_TRACE_BYTES", 20)
    (tmp_path / "t.trc").write_text(LINES)
    with pytest.raises(SpecError, match=r"t.trc: the trace is larger than 0 MiB"):
        trace.read_trace(tmp_path / "t.trc")
