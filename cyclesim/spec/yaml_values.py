"""PyYAML's node graph to plain Python values (dicts, lists, scalars), recording the line of
every field path and of every mapping key, and refusing duplicate keys with both lines."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml

from cyclesim.errors import SpecError

Lines = dict[tuple, int]
TagHandler = Callable[[str, Any, int], Any]
# mappings(the dict, the line it starts on, each key's line) -> the value to use for it
MappingHook = Callable[[dict, int, dict[Any, int]], dict]

_STANDARD = "tag:yaml.org,2002:"
# the tags of YAML's own types (what yaml.safe_load builds, and merge keys); `!!python/...`
# shares their prefix and must not pass for one of them
_SAFE_TAGS = frozenset(
    ("str", "int", "float", "bool", "null", "seq", "map", "merge", "timestamp", "binary", "set",
     "omap", "pairs", "value")
)  # fmt: skip
_SCALAR_CONSTRUCTOR = yaml.SafeLoader("")


class ValueBuilder:
    """Nodes to plain Python values, recording the line of every field path."""

    def __init__(
        self,
        name: str,
        lines: Lines,
        tags: TagHandler | None,
        mappings: MappingHook | None,
        *,
        last_duplicate_wins: bool = False,
    ) -> None:
        self.name, self.lines, self.tags, self.mappings = name, lines, tags, mappings
        self.active: set[int] = set()
        self.last_duplicate_wins = last_duplicate_wins

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
        if not tag.startswith(_STANDARD) or tag.removeprefix(_STANDARD) not in _SAFE_TAGS:
            shown = "!!" + tag.removeprefix(_STANDARD) if tag.startswith(_STANDARD) else tag
            raise self.fail(
                node,
                f"YAML tag '{shown}' is not allowed (a spec file holds plain values: it never "
                "builds Python objects or runs code)",
                expected="plain YAML: mappings, lists, strings, numbers, true/false, null",
            )
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
        key_lines: dict[Any, int] = {}
        first_seen: dict = {}
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
            if key in first_seen and not self.last_duplicate_wins:
                raise self.fail(
                    key_node,
                    f"duplicate key '{key}' (first at {first_seen[key]}, again at {where})",
                    expected="each key once per mapping",
                )
            first_seen[key] = where
            out[key] = self.build(value_node, path + (key,))
            key_lines[key] = mark.line + 1
        for merge_node in merged:  # `<<: *base`: explicit keys win, as in YAML 1.1
            sources = (
                merge_node.value if isinstance(merge_node, yaml.SequenceNode) else [merge_node]
            )
            for source in sources:
                value = self.build(source, path)
                if not isinstance(value, dict):
                    raise self.fail(source, "a merge key (<<) must name a mapping")
                for key, item in value.items():
                    if key not in out:
                        out[key] = item
                        key_lines[key] = self.lines[path + (key,)]  # its line in the anchor
        for key, line in key_lines.items():  # a merged source does not move an explicit key
            self.lines[path + (key,)] = line
        line = node.start_mark.line + 1
        self.lines[path] = line
        return self.mappings(out, line, key_lines) if self.mappings else out
