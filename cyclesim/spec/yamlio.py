"""The one YAML reader of every file cyclesim reads: bounded and line-tracking.

A file's text comes from `text_files` (size bounded, UTF-8, no control characters); PyYAML's
composer parses it with the nesting depth bounded; the node graph is measured with aliases
expanded (a billion-laughs file is refused before anything is built) and `yaml_values` builds it
into plain dicts and lists, refusing duplicate keys with both lines. We keep PyYAML (already a
dependency, and its composer leaves aliases shared so their expansion can be measured first)
rather than adding ruamel.yaml, which expands aliases as it constructs. The JSON reader and the
pydantic error mapping (`field_errors`) are importable from here too, where callers import them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from cyclesim.errors import SpecError
from cyclesim.spec.field_errors import (
    StrictModel,
    format_path,
    line_of,
    pydantic_to_spec_error,
    require_mapping,
    validate,
)
from cyclesim.spec.text_files import (
    CONTROL_CHARACTERS,
    MAX_DEPTH,
    MAX_FILE_BYTES,
    check_depth,
    decode_text,
    is_onnx,
    read_json,
    read_text,
)
from cyclesim.spec.yaml_values import Lines, MappingHook, TagHandler, ValueBuilder

__all__ = [
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_NODES",
    "Lines",
    "StrictModel",
    "check_depth",
    "decode_text",
    "format_path",
    "is_onnx",
    "line_of",
    "parse_yaml_text",
    "pydantic_to_spec_error",
    "read_json",
    "read_text",
    "read_yaml",
    "require_mapping",
    "validate",
]

MAX_NODES = 2_000_000  # YAML nodes after alias expansion; a billion-laughs file has 10**9


def read_yaml(path: str | Path, *, last_duplicate_wins: bool = False) -> tuple[Any, Lines, str]:
    """Parse a YAML file; return (data, line of every field path, file name shown in errors).

    `last_duplicate_wins` reads a repeated key as PyYAML does (the last one counts) instead of
    refusing it: for a peer's own files that the peer reads that way (ZigZag's tpu_like.yaml).
    """
    return parse_yaml_text(read_text(path), str(path), last_duplicate_wins=last_duplicate_wins)


def parse_yaml_text(
    text: str,
    name: str = "<string>",
    *,
    tags: TagHandler | None = None,
    mappings: MappingHook | None = None,
    last_duplicate_wins: bool = False,
) -> tuple[Any, Lines, str]:
    """Parse YAML text within the bounds; every fault is a SpecError with its line.

    `tags(tag, value, line)` builds the value of a node written with a local tag (`!Memory`);
    without it such a tag is refused. `mappings(dict, line, key_lines)` may wrap every mapping
    built; it is given the line the mapping starts on and each key's line.
    """
    if CONTROL_CHARACTERS.search(text):
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
    builder = ValueBuilder(name, lines, tags, mappings, last_duplicate_wins=last_duplicate_wins)
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
