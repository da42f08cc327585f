"""Field paths, their lines, and pydantic's validation errors as one SpecError each (file, field
path, line, what was found, the allowed fields)."""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from cyclesim.errors import SpecError
from cyclesim.spec.yaml_values import Lines


class StrictModel(BaseModel):
    """The base of every YAML validation model: an unknown field is an error that lists the
    allowed ones (extra="forbid"), and no value is silently coerced to another type (strict)."""

    model_config = ConfigDict(extra="forbid", strict=True)


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


def require_mapping(data: Any, name: str, what: str, expected: str | None = None) -> None:
    """A YAML file's top level must be a mapping: an empty file, or a list or a scalar there,
    is one SpecError saying which (`expected` says what the mapping holds)."""
    if not isinstance(data, dict):
        raise SpecError(
            f"the {what} file is empty"
            if data is None
            else f"the {what} file must be a YAML mapping at the top level, not {_kind(data)}",
            file=name,
            expected=expected
            or f"a mapping of the {what}'s fields ({DOCUMENTED_IN.get(what, 'see its docs')})",
        )


def validate(model: type[BaseModel], data: Any, lines: Lines, name: str, what: str) -> BaseModel:
    """Validate data against a pydantic model; the first fault becomes one SpecError."""
    require_mapping(data, name, what)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise pydantic_to_spec_error(exc, model, name, lines, what=what) from None


# A name that other names are built from (a chip's core or off-chip memory: 'dram.rw',
# 'l[c0>c1]', waveform scopes): no dots, brackets, spaces, and not empty
NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_-]*$"
_PATTERN_WORDS = {NAME_PATTERN: "a name of letters, digits, _ and -, not starting with a digit"}


# the names pydantic puts into an error's location for the member of a union it tried
# (`double_buffered: bool | {...}` reports 'memories[2].double_buffered.bool')
_UNION_MEMBERS = frozenset({"bool", "int", "float", "str", "none", "dict", "list"})


def _field_path(prefix: tuple, loc: tuple, lines: Lines) -> tuple:
    """The error's location as a path in the file: validator and union-member tags dropped
    (a part the file itself has, one with a line, is always kept)."""
    out = prefix
    for part in loc:
        tag = isinstance(part, str) and (
            part in _UNION_MEMBERS or "[" in part or part.startswith("function-")
        )
        if not tag or (*out, part) in lines:
            out = (*out, part)
    return out


def pydantic_to_spec_error(
    exc: ValidationError,
    model: type[BaseModel],
    file: str,
    lines: Lines,
    prefix: tuple = (),
    *,
    what: str | None = None,
) -> SpecError:
    """The first pydantic fault as a SpecError with field path, line and the allowed fields.

    A field reported missing beside an unknown one in the same mapping is most likely the
    unknown one misspelt: that one is reported, with the allowed field it is closest to."""
    errors = exc.errors()
    error = errors[0]
    if error["type"] == "missing":
        error = next(
            (
                e
                for e in errors
                if e["type"] == "extra_forbidden" and e["loc"][:-1] == error["loc"][:-1]
            ),
            error,
        )
    _, tags = _walk(model, tuple(error["loc"]))
    untagged = tuple(p for i, p in enumerate(error["loc"]) if i not in tags)
    loc = _field_path(prefix, untagged, lines)
    found = None if error["type"] in ("missing", "extra_forbidden") else error.get("input")
    message, expected = error["msg"], None
    if error["type"] == "extra_forbidden":
        message = f"unknown field '{loc[-1]}'"
        allowed = _fields_at(model, tuple(error["loc"][:-1]))  # through the tags
        expected = "one of: " + ", ".join(allowed) if allowed else None
    if error["type"] == "extra_forbidden":
        close = difflib.get_close_matches(str(loc[-1]), allowed, n=1, cutoff=0.6)
        if close:
            message = f"{message}: did you mean '{close[0]}'?"
    if what and error["type"] == "extra_forbidden":
        message = f"{message} (allowed: {', '.join(allowed)})"
        expected = None
    if error["type"] == "string_pattern_mismatch":
        pattern = error.get("ctx", {}).get("pattern", "")
        message, expected = (
            "not a valid name",
            _PATTERN_WORDS.get(pattern, f"text matching {pattern}"),
        )
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


# where each input's fields are described, named in the error for a file that is not a mapping
# (tests/docs/test_self_contained.py checks each page and heading exists)
DOCUMENTED_IN = {
    "architecture": "docs/inputs.md: 'The three inputs'",
    "workload": "docs/inputs.md: 'The three inputs'",
    "mapping": "docs/inputs.md: 'The three inputs'",
    "sweep": "docs/sweep.md: 'Sweeps'",
    "chip architecture": "docs/multicore.md: 'The chip architecture'",
    "chip mapping": "docs/multicore.md: 'The multi-core mapping'",
}


def _kind(data: Any) -> str:
    """What a YAML document's top level is, in YAML's words: 'a list', 'a string'."""
    kinds = {
        list: "a list",
        str: "a string",
        bool: "true/false",
        int: "a number",
        float: "a number",
    }
    return kinds.get(type(data), type(data).__name__)


def _fields_at(model: Any, loc: tuple) -> list[str]:
    """Field names accepted at a path, walking through dict values and list items."""
    return _walk(model, loc)[0]


def _walk(model: Any, loc: tuple) -> tuple[list[str], frozenset[int]]:
    """Walk a path of pydantic's through the model: the field names accepted at its end, and
    which of its parts are the tags pydantic adds for a discriminated union's member (a loop
    tree node's 'storage' in 'loop_tree[1].storage.memroy'), which the file does not have."""
    current: Any = _model_in(model)
    tags = set()
    for i, part in enumerate(loc):
        member = _tagged_member(current, part)
        if member is None:
            member = _union_member(current, part)
        if member is not None:
            current = member
            tags.add(i)
            continue
        if _is_model(current) and isinstance(part, str) and part in current.model_fields:
            current = current.model_fields[part].annotation
        elif not _is_model(current) and current is not None:
            current = _container_item(current)
        else:
            return [], frozenset(tags)
        current = _model_in(current) or current
    current = _model_in(current)
    return (list(current.model_fields) if _is_model(current) else []), frozenset(tags)


def _union_member(annotation: Any, tag: Any) -> Any:
    """The member of a plain union that pydantic's location part `tag` names ('str',
    'list[...]', a model's class name); None when annotation is no union or none matches."""
    if typing.get_origin(annotation) not in (typing.Union, types.UnionType):
        return None
    if not isinstance(tag, str):
        return None
    for member in typing.get_args(annotation):
        name = getattr(typing.get_origin(member) or member, "__name__", "")
        if name and (tag == name or tag.startswith(name + "[")):
            return member
    return None


def _tagged_member(annotation: Any, tag: Any) -> Any:
    """The member of a discriminated union (Annotated[A | B, Field(discriminator=...)]) whose
    discriminator field is the literal `tag`; None when annotation is no such union."""
    if typing.get_origin(annotation) is not typing.Annotated or not isinstance(tag, str):
        return None
    union, *extras = typing.get_args(annotation)
    key = next((getattr(e, "discriminator", None) for e in extras), None)
    if not isinstance(key, str):
        return None
    for member in typing.get_args(union):
        field_info = getattr(member, "model_fields", {}).get(key)
        if field_info is not None and tag in typing.get_args(field_info.annotation):
            return member
    return None


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
