"""AccelForge's YAML edge: Jinja rendering, node tags, merged files, numeric and set expressions."""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Mapping as MappingABC
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from cyclesim.errors import SpecError

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
    """A YAML mapping that remembers the (1-based) line it starts on."""

    line: int | None = None
    # top level only: each key's line in the file as written (before Jinja); a key that an
    # include_text() brought in gets the line of that call
    key_lines: dict[str, int] | None = None


@dataclass(frozen=True, slots=True)
class TaggedNode:
    """A YAML value written with an AccelForge tag such as `!Memory` or `!Temporal`."""

    tag: str
    value: Any
    line: int


class _TagLoader(yaml.SafeLoader):
    """SafeLoader that accepts every `!Tag` and records the line of every mapping."""


def _construct_line_dict(loader: _TagLoader, node: yaml.MappingNode):
    data = LineDict()
    data.line = node.start_mark.line + 1
    yield data
    data.update(loader.construct_mapping(node, deep=True))


def _construct_tagged(loader: _TagLoader, tag_suffix: str, node: yaml.Node) -> TaggedNode:
    if isinstance(node, yaml.MappingNode):
        value: Any = LineDict(loader.construct_mapping(node, deep=True))
        value.line = node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_scalar(node)
    return TaggedNode(tag=tag_suffix, value=value, line=node.start_mark.line + 1)


_TagLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_line_dict)
_TagLoader.add_multi_constructor("!", _construct_tagged)


# AccelForge's own Jinja helpers (accelforge/util/_yaml.py) that this reader does not provide.
_UNSUPPORTED_JINJA_FUNCTIONS = (
    "include",
    "include_all",
    "find_paths",
    "path_exists",
    "setenv",
    "cwd",
)


class _Refused(Exception):
    """Raised inside a template by a helper this reader refuses; becomes a SpecError."""


class _HelperFailed(Exception):
    """Raised inside a template by a helper that cannot do what it is asked; a SpecError."""


def render_jinja(
    text: str,
    file: str,
    jinja_data: MappingABC[str, Any],
    search_folders: list[Path] | None = None,
) -> str:
    """Render `text` as a Jinja2 template when it uses `{{`, `{%` or `{#`; else return it.

    Rendering is sandboxed (ImmutableSandboxedEnvironment): a template can read the data it is
    given, `include_text('other.yaml')` (a file next to it, rendered with the same data),
    `add_to_path('folder')` and `find_path('file')` (AccelForge's file search: the template's
    own folder, then the folders added, in order; they only name files, never run them), as
    AccelForge's templates do, and nothing else. Variables without a value and without a
    `| default(...)` in the template are errors, as in AccelForge. Raise SpecError naming the
    undefined variable, the refused helper or the template line if rendering fails.
    """
    if "{{" not in text and "{%" not in text and "{#" not in text:
        return text
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    environment = ImmutableSandboxedEnvironment(
        undefined=jinja2.StrictUndefined, keep_trailing_newline=True
    )
    data = dict(jinja_data)
    folders = search_folders if search_folders is not None else []

    def include_text(path: str, **overrides: Any) -> str:
        target = Path(file).parent / str(path)
        try:
            included = target.read_text()
        except OSError as error:
            raise SpecError(
                f"include_text('{path}'): cannot read {target}: {error.strerror}", file=file
            ) from None
        return render_jinja(included, str(target), {**data, **overrides}, folders)

    def add_to_path(folder: str) -> str:
        folders.append((Path(file).parent / str(folder)).resolve())
        return ""

    def find_path(name: str) -> str:
        candidates = [Path(str(name))] if Path(str(name)).is_absolute() else []
        candidates += [(folder / str(name)).resolve() for folder in [Path(file).parent, *folders]]
        for candidate in candidates:
            if candidate.exists():
                return str(candidate)
        raise _HelperFailed(
            f"find_path('{name}'): no such file in " + ", ".join(str(c.parent) for c in candidates)
        )

    def refuse(name: str):
        def helper(*_args: Any, **_kwargs: Any) -> str:
            raise _Refused(name)

        return helper

    environment.globals["include_text"] = include_text
    environment.globals["add_to_path"] = add_to_path
    environment.globals["find_path"] = find_path
    for name in _UNSUPPORTED_JINJA_FUNCTIONS:
        environment.globals[name] = refuse(name)
    try:
        return environment.from_string(text).render(**data)
    except _HelperFailed as failed:
        raise SpecError(str(failed), file=file, line=_template_line()) from None
    except _Refused as refused:
        raise SpecError(
            f"the Jinja helper {refused.args[0]}() of AccelForge is not supported",
            file=file,
            line=_template_line(),
            expected="plain values, | default(...) and include_text('file')",
        ) from None
    except jinja2.UndefinedError as error:
        raise SpecError(
            f"Jinja template uses an undefined variable: {error.message}",
            file=file,
            line=_template_line(),
            expected="a value for it: --jinja-data NAME=VALUE or --jinja-data FILE.yaml",
        ) from None
    except jinja2.TemplateSyntaxError as error:
        raise SpecError(
            f"Jinja template syntax error: {error.message}", file=file, line=error.lineno
        ) from None
    except jinja2.TemplateError as error:
        raise SpecError(f"Jinja template failed: {error}", file=file) from None


def _template_line() -> int | None:
    """The template line being rendered when an exception was raised (Jinja keeps it)."""
    import sys
    import traceback

    line = None
    for frame, lineno in traceback.walk_tb(sys.exc_info()[2]):
        if frame.f_code.co_filename == "<template>":
            line = lineno
    return line


def parse_jinja_data(items: list[str] | None) -> dict[str, Any]:
    """`--jinja-data` values, in order: `FILE` (a YAML mapping) or `KEY=VALUE` (a YAML scalar).

    Later items override earlier ones. Raise SpecError for a missing file, a file that is not a
    mapping, or an item that is neither.
    """
    data: dict[str, Any] = {}
    for item in items or ():
        key, equals, value = item.partition("=")
        if equals and key.strip().isidentifier():
            data[key.strip()] = yaml.load(value, Loader=_TagLoader) if value else ""  # noqa: S506
            continue
        if not Path(item).is_file():
            raise SpecError(
                "--jinja-data is neither NAME=VALUE nor a file",
                found=item,
                expected="NAME=VALUE (e.g. M=64) or a YAML file of NAME: value",
            )
        data.update(load_yaml_file(item, {}))
    return data


def load_yaml_file(path: str | Path, jinja_data: MappingABC[str, Any]) -> LineDict:
    """Read one AccelForge YAML file (rendered with Jinja if it is a template) into a dict.

    Raise SpecError if the file is missing, is not valid YAML, or is not a mapping at the top.
    """
    file = str(path)
    try:
        text = Path(path).read_text()
    except OSError as error:
        raise SpecError(f"cannot read the file: {error.strerror}", file=file) from None
    source = text
    text = render_jinja(text, file, jinja_data)
    try:
        loaded = yaml.load(text, Loader=_TagLoader)  # noqa: S506 - SafeLoader subclass
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        raise SpecError(
            f"not valid YAML: {getattr(error, 'problem', error)}",
            file=file,
            line=mark.line + 1 if mark else None,
        ) from None
    if not isinstance(loaded, dict):
        raise SpecError(
            "the top level is not a mapping",
            file=file,
            found=type(loaded).__name__,
            expected="keys such as arch:, workload:, mapping:",
        )
    if isinstance(loaded, LineDict):
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


_NUMERIC_FUNCTIONS = {
    "min": min,
    "max": max,
    "ceil": math.ceil,
    "floor": math.floor,
    "log2": math.log2,
    "sqrt": math.sqrt,
    "abs": abs,
    "int": int,
    "float": float,
}
_BINARY_OPERATORS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b,
}


def evaluate_number(
    value: Any,
    variables: MappingABC[str, Any],
    *,
    file: str | None,
    field: str,
    line: int | None,
) -> int | float:
    """Evaluate a number or an arithmetic expression such as `1024*8`, `inf` or `2**14`.

    Whole floats become ints. Raise SpecError naming the field if it is not a number.
    """
    if isinstance(value, bool):
        raise SpecError("expected a number", file=file, field=field, line=line, found=value)
    if isinstance(value, int | float):
        return _normalise(value)
    if not isinstance(value, str):
        raise SpecError("expected a number", file=file, field=field, line=line, found=value)

    def walk(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float | str):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in ("inf", "infinity", "Infinity"):
                return math.inf
            if node.id in variables:
                return evaluate_number(
                    variables[node.id], variables, file=file, field=node.id, line=line
                )
            raise SpecError(
                f"unknown name '{node.id}' in a numeric expression",
                file=file,
                field=field,
                line=line,
                found=value,
                expected="numbers, inf, arithmetic, or names defined under variables:",
            )
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY_OPERATORS:
            return _BINARY_OPERATORS[type(node.op)](walk(node.left), walk(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            operand = walk(node.operand)
            return -operand if isinstance(node.op, ast.USub) else operand
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _NUMERIC_FUNCTIONS
            and not node.keywords
        ):
            return _NUMERIC_FUNCTIONS[node.func.id](*(walk(arg) for arg in node.args))
        raise SpecError(
            "unsupported numeric expression",
            file=file,
            field=field,
            line=line,
            found=value,
            expected="numbers, inf, + - * / // % **, min/max/ceil/floor/log2/sqrt",
        )

    try:
        result = walk(ast.parse(value.strip(), mode="eval"))
    except SyntaxError:
        raise SpecError(
            "not a number or arithmetic expression", file=file, field=field, line=line, found=value
        ) from None
    except (ArithmeticError, ValueError, TypeError) as error:
        raise SpecError(
            f"numeric expression failed: {error}", file=file, field=field, line=line, found=value
        ) from None
    if isinstance(result, str):
        try:
            result = float(result)
        except ValueError:
            raise SpecError(
                "expected a number", file=file, field=field, line=line, found=value
            ) from None
    if isinstance(result, bool) or not isinstance(result, int | float):
        raise SpecError("expected a number", file=file, field=field, line=line, found=value)
    return _normalise(result)


def _normalise(number: int | float) -> int | float:
    if isinstance(number, float) and math.isfinite(number) and number.is_integer():
        return int(number)
    return number


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

    try:
        return walk(ast.parse(expression.strip(), mode="eval"))
    except SyntaxError:
        raise SpecError(
            "not a valid set expression", file=file, field=field, line=line, found=expression
        ) from None
