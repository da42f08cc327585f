"""A sweep file: base inputs, axes (fields by path, lists or ranges, whole inputs), how axes
combine (product or zip), plots and an optional extra-columns hook. Read with the project's
YAML loader, so a wrong file gets the same file/field/line message as the three inputs.

    architecture: ../../hw_models/eyeriss_like.yaml      # paths are relative to this file
    workload: workload.yaml
    mapping: mapping_large.yaml
    reuse: retain                                         # or strict
    combine: product                                      # or zip
    axes:
      - field: architecture.memories.sram_64KB.size_bits  # any architecture / mapping field
        values: [16384, 65536]
      - field: mapping                                    # or workload / architecture / reuse
        values: [mapping_large.yaml, mapping_small.yaml]
      - name: rf_width                                    # several fields moving together
        fields: [architecture.memories.rf_16B.ports.r_port_1.width_bits,
                 architecture.memories.rf_16B.ports.w_port_1.width_bits]
        range: {start: 8, stop: 32, step: 8}              # or geometric: {start, stop, points}
    plots:
      - {x: sram_64KB.size_bits, series: mapping, y: cycles}     # y: [cycles, other] for two
    columns: extra_columns.py:zigzag_latency             # fn(result, point) -> {column: value}
"""

from __future__ import annotations

import itertools
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from cyclesim.analysis.sweep_axes import (
    MAX_POINTS,
    WHOLE_INPUTS,
    Axis,
    AxisEntry,
    Scalar,
    read_axis,
)
from cyclesim.errors import SpecError
from cyclesim.spec.yamlio import StrictModel, format_path, line_of, read_yaml, validate


class _Plot(StrictModel):
    x: str = Field(description="an axis column, or any column of the table (e.g. a hook's)")
    series: str | None = Field(None, description="an axis column: one line per value")
    y: str | list[str] = Field("cycles", description="one column or several on the same axes")


class _Sweep(StrictModel):
    name: str | None = None
    architecture: str
    workload: str
    mapping: str
    reuse: Literal["retain", "strict"] = "retain"
    isolate_einsums: bool = False
    combine: Literal["product", "zip"] = "product"
    axes: list[AxisEntry] = Field(min_length=1)
    plots: list[_Plot] = []
    columns: str | None = Field(None, description="FILE.py:FUNCTION, fn(result, point) -> dict")


@dataclass(frozen=True, slots=True)
class Point:
    """One sweep point: the index, each axis column's value, and the settings to apply."""

    index: int
    values: tuple[tuple[str, Scalar], ...]  # (column, value) in axis order
    settings: tuple[tuple[str, Scalar], ...]  # (field path, value)


@dataclass(frozen=True, slots=True)
class SweepSpec:
    """A validated sweep file; input paths resolved against the file's folder."""

    name: str
    source: str
    folder: Path
    architecture: Path
    workload: Path
    mapping: Path
    reuse: str
    isolate_einsums: bool
    combine: str
    axes: tuple[Axis, ...]
    plots: tuple[tuple[str, str | None, tuple[str, ...]], ...]  # (x, series, y columns)
    columns_hook: tuple[Path, str] | None
    # plot columns neither an axis nor the replay fills: the hook's, or the error to raise
    # (file, field, line) when the hook's first row has no such column
    hook_plot_columns: tuple[tuple[str, SpecError], ...] = ()

    def check_hook_columns(self, row: dict) -> None:
        """Raise the plot's SpecError for a column the columns hook's first row lacks."""
        for column, error in self.hook_plot_columns:
            if column not in row:
                raise error

    def points(self) -> list[Point]:
        """Every point: the product of the axes' steps, or their zip."""
        steps = [range(len(a.values)) for a in self.axes]
        combos = (
            itertools.product(*steps) if self.combine == "product" else zip(*steps, strict=True)
        )
        out = []
        for index, combo in enumerate(combos):
            values: list[tuple[str, Scalar]] = []
            settings: list[tuple[str, Scalar]] = []
            for axis, step in zip(self.axes, combo, strict=True):
                if len(axis.fields) > 1:
                    values.append((axis.name, step))
                for field, column, value in zip(
                    axis.fields, axis.columns, axis.values[step], strict=True
                ):
                    values.append((column, value))
                    settings.append((field, value))
            out.append(Point(index, tuple(values), tuple(settings)))
        return out

    @property
    def axis_columns(self) -> list[str]:
        """The table columns the axes fill, in order."""
        cols: list[str] = []
        for axis in self.axes:
            if len(axis.fields) > 1:
                cols.append(axis.name)
            cols.extend(axis.columns)
        return cols

    def resolve(self, value: str) -> Path:
        """A path named in the sweep file, relative to its folder."""
        return Path(os.path.abspath(self.folder / value))  # a symlink loop: the loader says so


def load_sweep(path: str | Path) -> SweepSpec:
    """Read and validate a sweep file; raise SpecError naming file, field and line."""
    data, lines, name = read_yaml(path)
    raw: _Sweep = validate(_Sweep, data, lines, name, "sweep")  # type: ignore[assignment]
    folder = Path(path).resolve().parent

    def err(message: str, loc: tuple, **kw: Any) -> SpecError:
        return SpecError(message, file=name, field=format_path(loc), line=line_of(lines, loc), **kw)

    axes = tuple(read_axis(a, i, err) for i, a in enumerate(raw.axes))
    columns = [c for a in axes for c in ((a.name,) if len(a.fields) > 1 else ()) + a.columns]
    for i, col in enumerate(columns):
        if col in columns[:i]:
            raise err(
                "two axes fill the same column; give them distinct names", ("axes",), found=col
            )
    count = (
        math.prod(len(a.values) for a in axes)
        if raw.combine == "product"
        else min(len(a.values) for a in axes)
    )
    if count > MAX_POINTS:  # counted from the axes' lengths, before any point is built
        raise err(
            "the sweep has too many points",
            ("axes",),
            found=count,
            expected=f"at most {MAX_POINTS:,} (the product of the axes' lengths)",
        )
    if raw.combine == "zip":
        lengths = {a.name: len(a.values) for a in axes}
        if len(set(lengths.values())) > 1:
            raise err(
                "zipped axes must have the same number of values",
                ("combine",),
                found=lengths,
                expected="equal lengths, or combine: product",
            )
    hook = _columns_hook(raw, folder, err)

    def base(key: str) -> Path:
        """A base input's path, resolved; a missing file, a folder or a symlink loop is refused
        at the line naming it, not later as every point's failure."""
        given = getattr(raw, key)
        target = folder / given
        try:
            resolved = target.resolve(strict=True)
        except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (Python < 3.13)
            reason = getattr(exc, "strerror", None) or "a symlink loop"
            raise err(f"cannot read the {key} file: {reason}", (key,), found=given) from None
        if not resolved.is_file():
            raise err(f"the {key} file is not a file", (key,), found=given)
        return resolved

    spec = SweepSpec(
        raw.name or Path(path).stem,
        name,
        folder,
        base("architecture"),
        base("workload"),
        base("mapping"),
        raw.reuse,
        raw.isolate_einsums,
        raw.combine,
        axes,
        tuple((p.x, p.series, (p.y,) if isinstance(p.y, str) else tuple(p.y)) for p in raw.plots),
        hook,
    )
    _check_paths(spec, raw, err)  # first: a misspelt axis field also misnames its plot column
    return _check_plots(spec, raw, err)


def _columns_hook(raw: _Sweep, folder: Path, err: Any) -> tuple[Path, str] | None:
    """The columns hook's file and function, refused at its line when the file is missing or
    defines no such function (read, not run)."""
    if raw.columns is None:
        return None
    file, sep, function = raw.columns.rpartition(":")
    if not sep or not file.endswith(".py") or not function.isidentifier():
        raise err("expected FILE.py:FUNCTION", ("columns",), found=raw.columns)
    hook_path = Path(os.path.abspath(folder / file))
    if not hook_path.is_file():
        raise err("the columns hook file does not exist", ("columns",), found=str(hook_path))
    if not _may_define(hook_path, function):
        raise err(
            f"the columns hook file defines no function {function}", ("columns",), found=raw.columns
        )
    return hook_path, function


def _check_paths(spec: SweepSpec, raw: _Sweep, err: Any) -> None:
    """Every swept architecture./mapping. path must exist in its base file (unless an axis swaps
    that whole file): a misspelt memory is one error at its line, not a failed row per point."""
    from cyclesim.spec import load_architecture, load_workload
    from cyclesim.spec.override import set_field

    swapped = {f for a in spec.axes for f in a.fields if f in WHOLE_INPUTS}
    base = {"architecture": spec.architecture, "mapping": spec.mapping}
    heads = {f.partition(".")[0] for a in spec.axes for f in a.fields if "." in f}
    if heads - swapped:  # a wrong base file is its own error, not the swept field's
        if "architecture" not in swapped:
            load_architecture(str(spec.architecture))
        if "mapping" in heads - swapped and not {"architecture", "workload"} & swapped:
            from cyclesim.spec import load_mapping

            load_mapping(
                str(spec.mapping),
                load_architecture(str(spec.architecture)),
                load_workload(str(spec.workload)),
            )
    data: dict[str, Any] = {}
    for index, (axis, raw_axis) in enumerate(zip(spec.axes, raw.axes, strict=True)):
        for position, field in enumerate(axis.fields):
            head, _, rest = field.partition(".")
            if head not in base or not rest or head in swapped:
                continue
            if head not in data:
                data[head] = read_yaml(base[head])[0]
            where = ("fields", position) if raw_axis.fields else ("field",)
            try:
                changed = set_field(
                    data[head], rest, axis.values[0][position], source=str(base[head])
                )
            except SpecError as exc:
                raise err(
                    f"no such field in {base[head].name}: {exc.detail}",
                    ("axes", index, *where),
                    found=field,
                    expected=exc.expected and f"at {exc.field}, {exc.expected}",
                ) from None
            unknown = _unknown_leaf(head, changed, spec)
            if unknown:  # set_field adds a missing last key: every point would fail the same way
                raise err(
                    f"no such field in {base[head].name}: {unknown}",
                    ("axes", index, *where),
                    found=field,
                )


def _unknown_leaf(head: str, changed: dict, spec: SweepSpec) -> str | None:
    """The 'unknown field' message of a base file with a swept field set, or None: a misspelt
    last key (width_bits as widht_bits) is refused here, not as one failed row per point."""
    from cyclesim.spec import architecture_from_dict, load_architecture, load_workload
    from cyclesim.spec.mapping import mapping_from_dict

    try:
        if head == "architecture":
            architecture_from_dict(changed, str(spec.architecture))
        else:
            arch = load_architecture(str(spec.architecture))
            mapping_from_dict(changed, arch, load_workload(str(spec.workload)), str(spec.mapping))
    except SpecError as exc:  # a value the loader refuses is that point's own failure
        return exc.detail if "unknown field" in exc.detail else None
    return None


def _check_plots(spec: SweepSpec, raw: _Sweep, err: Any) -> SweepSpec:
    """A plot's series must be an axis column; x and y an axis or a result column, refused at
    their line before any point runs. With a columns hook, a name neither fills may be the
    hook's: the spec returned carries its error, raised if the hook's first row lacks it."""
    from dataclasses import replace

    from cyclesim.analysis.sweep_point import result_columns

    axes, results = spec.axis_columns, result_columns()
    expected = f"an axis column {axes} or a result column {results}"
    if spec.columns_hook is not None:
        expected += f", or a column the columns hook {spec.columns_hook[1]} returns"
    pending: list[tuple[str, SpecError]] = []
    for i, plot in enumerate(raw.plots):
        if plot.series is not None and plot.series not in axes:
            raise err(
                "a plot names a column no axis fills",
                ("plots", i, "series"),
                found=plot.series,
                expected=f"one of {axes}",
            )
        named = [(("plots", i, "x"), plot.x)]
        if isinstance(plot.y, str):
            named.append((("plots", i, "y"), plot.y))
        else:
            named += [(("plots", i, "y", j), y) for j, y in enumerate(plot.y)]
        for loc, column in named:
            if column in axes or column in results or column == "point":
                continue
            error = err(
                "a plot names a column the sweep table does not have",
                loc,
                found=column,
                expected=expected,
            )
            if spec.columns_hook is None:
                raise error
            pending.append((column, error))
    return replace(spec, hook_plot_columns=tuple(pending))


def _may_define(path: Path, function: str) -> bool:
    """Whether a hook file may define `function` at its top level (read, not run: the hook
    runs in the workers). A star import or a module __getattr__ may define any name."""
    import ast

    try:
        tree = ast.parse(path.read_text(), filename=str(path))
    except (SyntaxError, ValueError, OSError):
        return True  # its own error, each point's row says it
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).partition(".")[0] for a in node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return function in names or "*" in names or "__getattr__" in names
