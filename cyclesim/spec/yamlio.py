"""YAML reading that keeps line numbers, and pydantic errors turned into SpecError."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from cyclesim.errors import SpecError

Lines = dict[tuple, int]


def _walk(node: yaml.Node, path: tuple, lines: Lines) -> None:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value
            lines[path + (key,)] = key_node.start_mark.line + 1
            _walk(value_node, path + (key,), lines)
            lines[path + (key,)] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, path + (index,), lines)


def read_yaml(path: str | Path) -> tuple[Any, Lines, str]:
    """Parse a YAML file; return (data, line of every field path, file name shown in errors)."""
    name = str(path)
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise SpecError(f"cannot read the file: {exc.strerror}", file=name) from None
    return parse_yaml_text(text, name)


def parse_yaml_text(text: str, name: str = "<string>") -> tuple[Any, Lines, str]:
    """Parse YAML text; a syntax error becomes a SpecError with its line."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else None
        raise SpecError(f"not valid YAML: {exc.problem}", file=name, line=line) from None
    lines: Lines = {}
    if node is not None:
        _walk(node, (), lines)
    return data, lines, name


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
        err = exc.errors()[0]
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        found = err.get("input")
        if err["type"] == "missing":
            found = None
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            allowed = ", ".join(_fields_at(model, loc[:-1]))
            msg = f"unknown field '{loc[-1]}' (allowed: {allowed})"
            found = None
        raise SpecError(
            f"{what}: {msg}",
            file=name,
            field=format_path(loc),
            line=line_of(lines, loc),
            found=_short(found),
        ) from None


def _short(value: Any) -> Any:
    text = repr(value)
    return value if len(text) <= 80 else text[:77] + "..."


def _fields_at(model: type[BaseModel], loc: tuple) -> list[str]:
    """The field names a pydantic model accepts at a path (for 'allowed:' lists)."""
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        field = getattr(current, "model_fields", {}).get(part)
        if field is None:
            return []
        current = _inner_model(field.annotation)
        if current is None:
            return []
    return list(getattr(current, "model_fields", {}).keys())


def _inner_model(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _inner_model(arg)
        if found is not None:
            return found
    return None
