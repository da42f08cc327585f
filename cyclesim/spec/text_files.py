"""Reading an input file as text, bounded: its size, its encoding, control characters; and JSON.

Every fault is a SpecError naming the file (and the line of a bad byte). The YAML parser
(`cyclesim.spec.yamlio`) reads its text through here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from cyclesim.errors import SpecError

MAX_FILE_BYTES = 32 * 1024 * 1024  # the largest shipped input is a few hundred kB
MAX_DEPTH = 64  # our deepest file (a sequential loop tree in a saved run) nests about 20 levels
CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_ONNX_SUFFIXES = (".onnx",)


def read_text(path: str | Path) -> str:
    """Read a text file as UTF-8; raise SpecError naming the file (and the line of a bad byte)."""
    name = str(path)
    if is_onnx(path):
        raise SpecError(
            "this is an ONNX model (binary protobuf), not a YAML or JSON file",
            file=name,
            expected="a YAML file; ONNX models are read only where a command says it takes them",
        )
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise SpecError(f"cannot read the file: {exc.strerror or exc}", file=name) from None
    if len(data) > MAX_FILE_BYTES:
        raise SpecError(
            f"the file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MB",
            file=name,
            expected="a spec file (these are kilobytes)",
        )
    return decode_text(data, name)


def decode_text(data: bytes, name: str) -> str:
    """Bytes to text: UTF-8 (a BOM is allowed); a bad byte or a control character is refused."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        column = exc.start - data.rfind(b"\n", 0, exc.start)
        raise SpecError(
            f"not UTF-8 text: byte 0x{data[exc.start]:02x} at column {column}",
            file=name,
            line=line,
            expected="a UTF-8 text file",
        ) from None
    bad = CONTROL_CHARACTERS.search(text)
    if bad is not None:
        line = text.count("\n", 0, bad.start()) + 1
        raise SpecError(
            f"control character {bad.group()!r} in the text",
            file=name,
            line=line,
            expected="printable text (tabs and newlines only)",
        )
    return text


def is_onnx(path: str | Path) -> bool:
    """True for an ONNX model: by its suffix, or by its bytes (a protobuf starting with ir_version)."""
    if str(path).lower().endswith(_ONNX_SUFFIXES):
        return True
    try:
        with open(path, "rb") as handle:
            head = handle.read(64)
    except OSError:
        return False
    # field 1 (ir_version, varint) then field 2..8 strings such as producer_name "pytorch"/"onnx"
    return head[:1] == b"\x08" and (b"onnx" in head or b"pytorch" in head or b"tf2onnx" in head)


def read_json(path: str | Path) -> tuple[Any, str]:
    """Parse a JSON file within the bounds (depth, size; NaN and Infinity refused)."""
    name = str(path)
    text = read_text(path)

    def refuse_constant(token: str) -> Any:
        found = re.search(rf"[:,\[]\s*-?{token}\b", text)
        line = text.count("\n", 0, found.start()) + 1 if found else None
        raise SpecError(
            f"{token} is not a number JSON allows here", file=name, line=line, expected="a number"
        )

    try:
        return json.loads(text, parse_constant=refuse_constant), name
    except json.JSONDecodeError as exc:
        raise SpecError(f"not valid JSON: {exc.msg}", file=name, line=exc.lineno) from None
    except RecursionError:
        raise SpecError(
            "nested too deeply", file=name, expected="a saved run (a few levels of nesting)"
        ) from None


def check_depth(value: Any, name: str, limit: int = MAX_DEPTH) -> None:
    """Refuse a parsed value nested deeper than `limit` (iteratively, so it cannot overflow)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            raise SpecError(f"nested more than {limit} levels deep", file=name)
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
