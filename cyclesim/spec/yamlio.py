"""The one reader of every file cyclesim reads: bounded, line-tracking YAML and JSON, and pydantic
errors turned into SpecError.

A file is read as bytes (size bounded), decoded as UTF-8 (a bad byte is named with its line),
scanned for control characters, then parsed by PyYAML's composer with the nesting depth bounded;
the node graph is measured with aliases expanded (a billion-laughs file is refused before anything
is built) and built into plain dicts and lists, refusing duplicate keys with both lines. We keep
PyYAML (already a dependency, and its composer leaves aliases shared so their expansion can be
measured first) rather than adding ruamel.yaml, which expands aliases as it constructs.
"""

from __future__ import annotations

import json
import math
import re
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from cyclesim.errors import SpecError

Lines = dict[tuple, int]

MAX_FILE_BYTES = 32 * 1024 * 1024  # the largest shipped input is a few hundred kB
MAX_DEPTH = 64  # our deepest file (a sequential loop tree in a saved run) nests about 20 levels
MAX_NODES = 2_000_000  # YAML nodes after alias expansion; a billion-laughs file has 10**9
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_ONNX_SUFFIXES = (".onnx",)

TagHandler = Callable[[str, Any, int], Any]
MappingHook = Callable[[dict, int], dict]


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
    bad = _CONTROL.search(text)
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


def read_yaml(path: str | Path) -> tuple[Any, Lines, str]:
    """Parse a YAML file; return (data, line of every field path, file name shown in errors)."""
    return parse_yaml_text(read_text(path), str(path))


def parse_yaml_text(
    text: str,
    name: str = "<string>",
    *,
    tags: TagHandler | None = None,
    mappings: MappingHook | None = None,
) -> tuple[Any, Lines, str]:
    """Parse YAML text within the bounds; every fault is a SpecError with its line.

    `tags(tag, value, line)` builds the value of a node written with a local tag (`!Memory`);
    without it such a tag is refused. `mappings(dict, line)` may wrap every mapping built.
    """
    if _CONTROL.search(text):
        decode_text(text.encode("utf-8", "surrogatepass"), name)
    loader = None
    try:
        loader = _BoundedLoader(text, name)
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise SpecError(
            f"not valid YAML: {exc.problem or exc.context}",
            file=name,
            line=mark.line + 1 if mark else None,
        ) from None
    except yaml.YAMLError as exc:  # ReaderError: a character YAML does not allow
        position = getattr(exc, "position", None)
        line = text.count("\n", 0, position) + 1 if position is not None else None
        raise SpecError(f"not valid YAML: {exc}", file=name, line=line) from None
    finally:
        if loader is not None:
            loader.dispose()
    lines: Lines = {}
    if node is None:
        return None, lines, name
    _check_expanded_size(node, name)
    builder = _Builder(name, lines, tags, mappings)
    return builder.build(node, ()), lines, name


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe composer with the nesting depth bounded (it recurses once per level)."""

    def __init__(self, text: str, name: str) -> None:
        super().__init__(text)
        self._depth = 0
        self._name = name

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        if self._depth > MAX_DEPTH:
            mark = self.peek_event().start_mark
            raise SpecError(
                f"nested more than {MAX_DEPTH} levels deep",
                file=self._name,
                line=mark.line + 1,
                expected="a spec file (a few levels of nesting)",
            )
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _check_expanded_size(root: yaml.Node, name: str) -> None:
    """Count the nodes with every alias expanded (memoised per node, so this is linear)."""
    sizes: dict[int, int] = {}

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        sizes[key] = 0  # a recursive alias counts as nothing here; the builder refuses it
        if isinstance(node, yaml.MappingNode):
            total = 1 + sum(size(k) + size(v) for k, v in node.value)
        elif isinstance(node, yaml.SequenceNode):
            total = 1 + sum(size(item) for item in node.value)
        else:
            total = 1
        total = min(total, MAX_NODES + 1)
        sizes[key] = total
        return total

    if size(root) > MAX_NODES:
        raise SpecError(
            f"aliases expand to more than {MAX_NODES:,} values (an alias bomb?)",
            file=name,
            line=root.start_mark.line + 1,
            expected="aliases (&name / *name) that expand to a spec-sized document",
        )


_STANDARD = "tag:yaml.org,2002:"
_SCALAR_CONSTRUCTOR = yaml.SafeLoader("")


class _Builder:
    """Nodes to plain Python values, recording the line of every field path."""

    def __init__(
        self, name: str, lines: Lines, tags: TagHandler | None, mappings: MappingHook | None
    ) -> None:
        self.name, self.lines, self.tags, self.mappings = name, lines, tags, mappings
        self.active: set[int] = set()

    def fail(self, node: yaml.Node, message: str, **kw: Any) -> SpecError:
        return SpecError(message, file=self.name, line=node.start_mark.line + 1, **kw)

    def build(self, node: yaml.Node, path: tuple) -> Any:
        self.lines[path] = node.start_mark.line + 1
        if id(node) in self.active:
            raise self.fail(node, "an alias refers to a node that contains it (recursive YAML)")
        tag = node.tag or ""
        if tag.startswith("!"):
            if self.tags is None:
                raise self.fail(node, f"unknown YAML tag '{tag}'", expected="plain YAML, no tags")
            return self.tags(tag[1:], self._plain(node, path), node.start_mark.line + 1)
        if not tag.startswith(_STANDARD):
            raise self.fail(node, f"unsupported YAML tag '{tag}'", expected="plain YAML")
        return self._plain(node, path)

    def _plain(self, node: yaml.Node, path: tuple) -> Any:
        if isinstance(node, yaml.ScalarNode):
            return self._scalar(node)
        self.active.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                return [self.build(item, path + (i,)) for i, item in enumerate(node.value)]
            return self._mapping(node, path)
        finally:
            self.active.discard(id(node))

    def _scalar(self, node: yaml.ScalarNode) -> Any:
        if node.tag.startswith("!"):
            return node.value
        constructors = _SCALAR_CONSTRUCTOR.yaml_constructors
        try:
            value = constructors.get(node.tag, constructors[None])(_SCALAR_CONSTRUCTOR, node)
        except (ValueError, yaml.YAMLError) as exc:  # e.g. an integer of 5,000 digits
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise self.fail(
                node, f"cannot read the value: {problem}", found=node.value[:40]
            ) from None
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2**256:
            raise self.fail(node, "integer out of any sane range", found=node.value[:40])
        return value

    def _mapping(self, node: yaml.MappingNode, path: tuple) -> dict:
        out: dict = {}
        first_line: dict = {}
        merged: list[yaml.Node] = []
        for key_node, value_node in node.value:
            if key_node.tag == _STANDARD + "merge":
                merged.append(value_node)
                continue
            if not isinstance(key_node, yaml.ScalarNode):
                raise self.fail(key_node, "a mapping key must be a plain value, not a collection")
            key = self._scalar(key_node)
            mark = key_node.start_mark
            where = f"line {mark.line + 1} column {mark.column + 1}"
            if key in first_line:
                raise self.fail(
                    key_node,
                    f"duplicate key '{key}' (first at {first_line[key]}, again at {where})",
                    expected="each key once per mapping",
                )
            first_line[key] = where
            line = mark.line + 1
            out[key] = self.build(value_node, path + (key,))
            self.lines[path + (key,)] = line
        for merge_node in merged:  # `<<: *base`: explicit keys win, as in YAML 1.1
            sources = (
                merge_node.value if isinstance(merge_node, yaml.SequenceNode) else [merge_node]
            )
            for source in sources:
                value = self.build(source, path)
                if not isinstance(value, dict):
                    raise self.fail(source, "a merge key (<<) must name a mapping")
                for key, item in value.items():
                    out.setdefault(key, item)
        self.lines[path] = node.start_mark.line + 1
        return self.mappings(out, node.start_mark.line + 1) if self.mappings else out


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


def finite(value: float) -> bool:
    """True for a real number that is neither infinite nor NaN."""
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))


def format_path(loc: tuple) -> str:
    """('memories', 2, 'ports', 0, 'width_bits') -> 'memories[2].ports[0].width_bits'."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def line_of(lines: Lines, loc: tuple) -> int | None:
    """The line of the deepest known prefix of a field path."""
    loc = tuple(loc)
    while loc:
        if loc in lines:
            return lines[loc]
        loc = loc[:-1]
    return lines.get(())


def validate(model: type[BaseModel], data: Any, lines: Lines, name: str, what: str) -> BaseModel:
    """Validate data against a pydantic model; the first fault becomes one SpecError."""
    if not isinstance(data, dict):
        raise SpecError(
            f"the {what} file must be a YAML mapping at the top level",
            file=name,
            found=type(data).__name__,
            expected="a mapping",
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise pydantic_to_spec_error(exc, model, name, lines, what=what) from None


def pydantic_to_spec_error(
    exc: ValidationError,
    model: type[BaseModel],
    file: str,
    lines: Lines,
    prefix: tuple = (),
    *,
    what: str | None = None,
) -> SpecError:
    """The first pydantic fault as a SpecError with field path, line and the allowed fields."""
    error = exc.errors()[0]
    loc = prefix + tuple(
        p for p in error["loc"] if not (isinstance(p, str) and p.startswith("function-"))
    )
    found = None if error["type"] in ("missing", "extra_forbidden") else error.get("input")
    message, expected = error["msg"], None
    if error["type"] == "extra_forbidden":
        message = f"unknown field '{loc[-1]}'"
        allowed = _fields_at(model, tuple(error["loc"][:-1]))
        expected = "one of: " + ", ".join(allowed) if allowed else None
    if what and error["type"] == "extra_forbidden":
        message = f"{message} (allowed: {', '.join(allowed)})"
        expected = None
    if isinstance(found, dict | list | str) and len(repr(found)) > 80:
        found = repr(found)[:77] + "..."
    return SpecError(
        f"{what}: {message}" if what else message,
        file=file,
        field=format_path(loc) or None,
        line=line_of(lines, loc),
        found=found,
        expected=expected,
    )


def _fields_at(model: Any, loc: tuple) -> list[str]:
    """Field names accepted at a path, walking through dict values and list items."""
    current: Any = _model_in(model)
    for part in loc:
        if _is_model(current) and isinstance(part, str) and part in current.model_fields:
            current = current.model_fields[part].annotation
        elif not _is_model(current) and current is not None:
            current = _container_item(current)
        else:
            return []
        current = _model_in(current) or current
    current = _model_in(current)
    return list(current.model_fields) if _is_model(current) else []


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _model_in(annotation: Any) -> Any:
    """The model class an annotation is, or is Optional of; None otherwise."""
    if _is_model(annotation):
        return annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            if _is_model(arg):
                return arg
    return None


def _container_item(annotation: Any) -> Any:
    """The item type of list[X] / dict[str, X] (through Optional)."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        for arg in args:
            if typing.get_origin(arg) in (list, dict):
                return _container_item(arg)
        return None
    if origin is list:
        return args[0]
    if origin is dict:
        return args[1]
    return None
