"""AccelForge's YAML edge: node tags, merged files and set expressions, over the one loader,
the sandboxed Jinja renderer and the bounded evaluator of `cyclesim.spec`."""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping as MappingABC
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cyclesim.errors import OptionError, SpecError
from cyclesim.spec.expressions import MAX_CHARS, evaluate_number
from cyclesim.spec.templates import HelperRefusal, render_template
from cyclesim.spec.yamlio import parse_yaml_text, read_text

__all__ = ["evaluate_number", "evaluate_tensor_set", "load_yaml_file", "merge_top_level"]

# Tags AccelForge registers for its architecture and mapping nodes. Any other tag (AccelForge's
# own !include, !nomerge, ...) is read too, then refused by name where it is used.
ARCH_TAGS = ("Memory", "Compute", "Container", "Toll", "Network", "Fork", "Array", "Hierarchical")
MAPPING_TAGS = ("Storage", "Temporal", "Spatial", "Compute", "Sequential", "Pipeline", "Nested")
SET_EXPRESSION_KEYWORDS = (
    "All",
    "Tensors",
    "Nothing",
    "Inputs",
    "Outputs",
    "Intermediates",
    "Shared",
    "Persistent",
)


class LineDict(dict):
    """A YAML mapping that remembers the (1-based) line it starts on and each key's line, so an
    error in a field names the field's own line."""

    line: int | None = None
    # each key's line in the rendered text; at the top level, in the file as written (before
    # Jinja), a key that an include_text() brought in getting the line of that call
    key_lines: dict[Any, int] | None = None


@dataclass(frozen=True, slots=True)
class TaggedNode:
    """A YAML value written with an AccelForge tag such as `!Memory` or `!Temporal`."""

    tag: str
    value: Any
    line: int


def _tagged(tag: str, value: Any, line: int) -> TaggedNode:
    return TaggedNode(tag=tag, value=value, line=line)


def _line_dict(mapping: dict, line: int, key_lines: dict[Any, int]) -> LineDict:
    data = LineDict(mapping)
    data.line = line
    data.key_lines = key_lines
    return data


# AccelForge's own Jinja helpers (accelforge/util/_yaml.py) that this reader does not provide.
_UNSUPPORTED_JINJA_FUNCTIONS = (
    "include",
    "include_all",
    "find_paths",
    "path_exists",
    "setenv",
    "cwd",
)


def render_jinja(
    text: str,
    file: str,
    jinja_data: MappingABC[str, Any],
    search_folders: list[Path] | None = None,
) -> str:
    """Render `text` as a sandboxed Jinja2 template when it uses `{{`, `{%` or `{#`; else return it.

    Rendering goes through the project's bounded sandbox (`cyclesim.spec.templates`): a template
    can read the data it is given, `include_text('other.yaml')` (a file next to it, rendered
    with the same data), `add_to_path('folder')` and `find_path('file')` (AccelForge's file
    search: the template's own folder, then the folders added, in order; they only name files,
    never run them), as AccelForge's templates do, and nothing else. Variables without a
    value and without a `| default(...)` are errors, as in AccelForge. AccelForge's other
    helpers are refused by name with the template line.
    """

    folders = search_folders if search_folders is not None else []

    def include_text(path: str, **overrides: Any) -> str:
        target = Path(file).parent / str(path)
        try:
            included = read_text(target)
        except SpecError as error:
            raise HelperRefusal(f"include_text('{path}'): {error.detail}") from None
        return render_jinja(included, str(target), {**dict(jinja_data), **overrides}, folders)

    def add_to_path(folder: str) -> str:
        folders.append((Path(file).parent / str(folder)).resolve())
        return ""

    def find_path(name: str) -> str:
        candidates = [Path(str(name))] if Path(str(name)).is_absolute() else []
        candidates += [(folder / str(name)).resolve() for folder in [Path(file).parent, *folders]]
        for candidate in candidates:
            if candidate.exists():
                return str(candidate)
        raise HelperRefusal(
            f"find_path('{name}'): no such file in " + ", ".join(str(c.parent) for c in candidates)
        )

    def refuse(name: str):
        def helper(*_args: Any, **_kwargs: Any) -> str:
            raise HelperRefusal(
                f"the Jinja helper {name}() of AccelForge is not supported",
                expected="plain values, | default(...) and include_text('file')",
            )

        return helper

    helpers = {"include_text": include_text, "add_to_path": add_to_path, "find_path": find_path}
    helpers.update((name, refuse(name)) for name in _UNSUPPORTED_JINJA_FUNCTIONS)
    return render_template(text, file, jinja_data, helpers=helpers)


def parse_jinja_data(items: list[str] | None) -> dict[str, Any]:
    """`--jinja-data` values, in order: `FILE` (a YAML mapping) or `KEY=VALUE` (a YAML scalar).

    Later items override earlier ones. Raise SpecError for a missing file, a file that is not a
    mapping, or an item that is neither.
    """
    data: dict[str, Any] = {}
    for item in items or ():
        key, equals, value = item.partition("=")
        if equals and key.strip().isidentifier():
            data[key.strip()] = (
                parse_yaml_text(value, f"--jinja-data {key.strip()}")[0] if value else ""
            )
            continue
        if not Path(item).is_file():
            raise OptionError(  # an option, not a file: no "<input>:" before it
                f"--jinja-data is neither NAME=VALUE nor a file (found {item!r}); expected"
                " NAME=VALUE (e.g. M=64) or a YAML file of NAME: value"
            )
        data.update(load_yaml_file(item, {}))
    return data


def load_yaml_file(path: str | Path, jinja_data: MappingABC[str, Any]) -> LineDict:
    """Read one AccelForge YAML file (rendered with Jinja if it is a template) into a dict.

    Raise SpecError if the file is missing, is not valid YAML, or is not a mapping at the top.
    """
    file = str(path)
    source = read_text(path)
    text = render_jinja(source, file, jinja_data)
    loaded, _, _ = parse_yaml_text(text, file, tags=_tagged, mappings=_line_dict)
    if not isinstance(loaded, dict):
        raise SpecError(
            "the file is empty" if loaded is None else "the top level is not a mapping",
            file=file,
            found=None if loaded is None else type(loaded).__name__,
            expected="keys such as arch:, workload:, mapping:",
        )
    if isinstance(loaded, LineDict) and text != source:  # a template: name the lines as written
        loaded.key_lines = _source_key_lines(source, loaded)
    return loaded


def _source_key_lines(source: str, document: dict) -> dict[str, int]:
    """Each top-level key's line in the unrendered file, else the line of the first
    include_text() call (where a template brought it in)."""
    lines = source.splitlines()
    include = next((i + 1 for i, line in enumerate(lines) if "include_text(" in line), None)
    out: dict[str, int] = {}
    for key in document:
        pattern = re.compile(rf"^{re.escape(str(key))}\s*:")
        found = next((i + 1 for i, line in enumerate(lines) if pattern.match(line)), include)
        if found is not None:
            out[str(key)] = found
    return out


def merge_top_level(
    documents: list[tuple[str, LineDict]],
) -> tuple[dict[str, Any], dict[str, str]]:
    """Merge the top-level keys of several files as Spec.from_yaml does: the first file wins.

    Return the merged mapping and, for each top-level key, the file it came from.
    """
    merged: dict[str, Any] = {}
    key_to_file: dict[str, str] = {}
    for file, document in documents:
        for key, value in document.items():
            if key not in merged:
                merged[key] = value
                key_to_file[key] = file
    return merged, key_to_file


def evaluate_tensor_set(
    expression: Any,
    names: MappingABC[str, frozenset[str]],
    universe: frozenset[str],
    *,
    file: str | None,
    field: str,
    line: int | None,
) -> frozenset[str]:
    """Evaluate an AccelForge set expression (`~Intermediates | AO`) to a set of tensor names.

    Operators and precedence are Python's: `~` (complement within `universe`), `-`, `&`, `|`.
    Raise SpecError naming the unknown name or the unsupported construct.
    """
    if isinstance(expression, list | tuple):
        expression = " | ".join(str(item) for item in expression) or "Nothing"
    if not isinstance(expression, str):
        raise SpecError(
            "expected a set expression", file=file, field=field, line=line, found=expression
        )

    def walk(node: ast.AST) -> frozenset[str]:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if (
            isinstance(node, ast.Attribute)
            and node.attr == "tensors"
            and isinstance(node.value, ast.Name)
        ):
            # `MainMemory.tensors` is `MainMemory`: the tensors that component keeps (AccelForge
            # binds a component's name to its kept set "so users can do MainMemory.tensors")
            return walk(node.value)
        if isinstance(node, ast.Name):
            if node.id in names:
                return names[node.id]
            raise SpecError(
                f"unknown name '{node.id}' in a set expression",
                file=file,
                field=field,
                line=line,
                found=expression,
                expected="tensor names, component names, renames or "
                + ", ".join(SET_EXPRESSION_KEYWORDS),
            )
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
            return universe - walk(node.operand)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr | ast.BitAnd | ast.Sub):
            left, right = walk(node.left), walk(node.right)
            if isinstance(node.op, ast.BitOr):
                return left | right
            if isinstance(node.op, ast.BitAnd):
                return left & right
            return left - right
        raise SpecError(
            "unsupported set expression",
            file=file,
            field=field,
            line=line,
            found=expression,
            expected="names combined with ~ | & - and parentheses",
        )

    if len(expression) > MAX_CHARS:
        raise SpecError(
            f"set expression longer than {MAX_CHARS} characters", file=file, field=field, line=line
        )
    try:
        return walk(ast.parse(expression.strip(), mode="eval"))
    except SyntaxError:
        raise SpecError(
            "not a valid set expression", file=file, field=field, line=line, found=expression
        ) from None
    except (RecursionError, MemoryError):
        raise SpecError(
            "set expression nested too deeply", file=file, field=field, line=line
        ) from None
