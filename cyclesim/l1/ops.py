"""Op descriptions: circular buffers, intermediates, outputs and calls, validated whole.

File shape (YAML)::

    ops:
      softmax:
        circular_buffers: [{name: cb_in, page_size_bytes: 2048, num_pages: 8}]
        intermediates:    [{name: exp, size_bytes: 442368, page_size_bytes: 2048}]
        outputs:          [{name: out, size_bytes: 442368, allocated_by: caller}]
        steps: [{alloc: exp}, run, {free: exp}, {call: other_op, outputs: {out: exp}}]
    model:
      tensors: [{name: x, size_bytes: 4718592}]
      steps: [{alloc: x}, {call: softmax, outputs: {out: x}}, {free: x}]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from cyclesim.errors import SpecError
from cyclesim.l1.config import pydantic_to_spec_error
from cyclesim.l1.opcheck import check_body, check_cycles
from cyclesim.l1.opspec import (
    CircularBufferSpec,
    OpsFile,
    OpSpec,
    OutputOwner,
    Step,
    StepKind,
    TensorSpec,
)
from cyclesim.spec.limits import MAX_BYTES, MAX_COUNT
from cyclesim.spec.yamlio import (
    Lines,
    StrictModel,
    format_path,
    line_of,
    parse_yaml_text,
    read_yaml,
    require_mapping,
)


# ---------------------------------------------------------------- validation models (YAML edge)
class _CB(StrictModel):
    name: str
    page_size_bytes: int = Field(gt=0, le=MAX_BYTES)
    num_pages: int = Field(gt=0, le=MAX_COUNT)


class _Tensor(StrictModel):
    name: str
    size_bytes: int = Field(gt=0, le=MAX_BYTES, description="whole tensor, all banks")
    page_size_bytes: int = Field(
        2048, gt=0, le=MAX_BYTES, description="default: one bf16 32x32 tile"
    )
    num_banks: int | None = Field(
        None, gt=0, le=MAX_COUNT, description="default: the L1's bank count"
    )


class _Output(_Tensor):
    allocated_by: Literal["caller", "op"] = "caller"


class _Op(StrictModel):
    description: str | None = None
    circular_buffers: list[_CB] = []
    intermediates: list[_Tensor] = []
    outputs: list[_Output] = []
    steps: list[str | dict[str, Any]] | None = None


class _Model(StrictModel):
    description: str | None = None
    tensors: list[_Tensor] = []
    steps: list[str | dict[str, Any]] = Field(min_length=1)


class _File(StrictModel):
    description: str | None = None
    definitions: Any = Field(None, description="free-form: a place to put YAML anchors")
    include: list[str] = Field([], description="op-library files, relative to this one")
    ops: dict[str, _Op] = {}
    model: _Model | None = None


def load_ops(path: str | Path) -> OpsFile:
    """Read and validate an op-description file (and what it includes); one SpecError per fault."""
    data, lines, name = read_yaml(path)
    return ops_from_dict(data, name, lines, base_dir=Path(path).parent)


def load_ops_text(text: str, name: str = "<ops>", base_dir: str | Path = ".") -> OpsFile:
    """Validate op descriptions given as YAML text (tests, notebooks)."""
    data, lines, name = parse_yaml_text(text, name)
    return ops_from_dict(data, name, lines, base_dir=Path(base_dir))


def ops_from_dict(
    data: Any, name: str = "<ops>", lines: Lines | None = None, base_dir: Path = Path(".")
) -> OpsFile:
    """Validate parsed op descriptions: schema, names, lifetimes, calls, cycles."""
    raw, err = _validate_file(data, name, lines or {})
    if raw.model is None:
        raise err("the file has no `model:` (the top-level sequence of calls to replay)", ())
    sources: dict[str, tuple[_Op, Any]] = {}
    _collect_ops(raw, err, base_dir, sources, [name])
    ops = tuple(_build_op(n, r, ("ops", n), e) for n, (r, e) in sources.items())
    model_raw = _Op(intermediates=raw.model.tensors, steps=raw.model.steps)
    model = _build_op("model", model_raw, ("model",), err, tensors_key="tensors")
    library = {op.name: op for op in ops}
    errs = {n: e for n, (_, e) in sources.items()}
    for op in ops:
        check_body(op, library, ("ops", op.name), errs[op.name], is_model=False)
    check_cycles(ops, library, errs)
    check_body(model, library, ("model",), err, is_model=True)
    return OpsFile(ops, model, name)


def _validate_file(data: Any, name: str, lines: Lines) -> tuple[_File, Any]:
    require_mapping(
        data,
        name,
        "ops",
        expected="a mapping with `model:` (and `ops:` / `include:`; examples/l1_placement/)",
    )
    try:
        raw = _File.model_validate(data)
    except ValidationError as exc:
        raise pydantic_to_spec_error(exc, _File, name, lines) from None

    def err(msg: str, loc: tuple, **kw: Any) -> SpecError:
        field = format_path(loc) or None
        return SpecError(msg, file=name, field=field, line=line_of(lines, loc), **kw)

    return raw, err


def _collect_ops(raw: _File, err: Any, base_dir: Path, out: dict, chain: list[str]) -> None:
    """Gather the ops of a file and of the files it includes (depth first, no duplicates)."""
    for index, include in enumerate(raw.include):
        path = base_dir / include
        if str(path) in chain:
            raise err(
                "include cycle",
                ("include", index),
                found=include,
                expected="no file including itself",
            )
        if not path.is_file():
            raise err("included file not found", ("include", index), found=str(path))
        data, lines, name = read_yaml(path)
        inner, inner_err = _validate_file(data, name, lines)
        if inner.model is not None:
            raise inner_err(
                "an included file holds ops only; its `model:` would be ignored", ("model",)
            )
        _collect_ops(inner, inner_err, path.parent, out, chain + [str(path)])
    for op_name, raw_op in raw.ops.items():
        if op_name in out:
            raise err(
                f"op '{op_name}' is defined twice (also in an included file)",
                ("ops", op_name),
                found=op_name,
                expected="unique op names across included files",
            )
        out[op_name] = (raw_op, err)


def _build_op(
    name: str, raw: _Op, loc: tuple, err: Any, tensors_key: str = "intermediates"
) -> OpSpec:
    seen: dict[str, tuple] = {}
    groups = (
        ("circular_buffers", raw.circular_buffers),
        (tensors_key, raw.intermediates),
        ("outputs", raw.outputs),
    )
    for key, items in groups:
        for index, item in enumerate(items):
            where = loc + (key, index, "name")
            if item.name in seen:
                raise err(
                    f"duplicate name in op '{name}' (also {format_path(seen[item.name])})",
                    where,
                    found=item.name,
                    expected="names unique across circular_buffers, intermediates and outputs",
                )
            seen[item.name] = where
            if key != "circular_buffers" and item.size_bytes % item.page_size_bytes:
                raise err(
                    "size_bytes must be a whole number of pages",
                    loc + (key, index, "size_bytes"),
                    found=item.size_bytes,
                    expected=f"a multiple of page_size_bytes={item.page_size_bytes}",
                )
    cbs = tuple(
        CircularBufferSpec(c.name, c.page_size_bytes, c.num_pages) for c in raw.circular_buffers
    )
    inter = tuple(
        TensorSpec(t.name, t.size_bytes, t.page_size_bytes, t.num_banks) for t in raw.intermediates
    )
    outs = tuple(
        TensorSpec(
            t.name, t.size_bytes, t.page_size_bytes, t.num_banks, OutputOwner(t.allocated_by)
        )
        for t in raw.outputs
    )
    if raw.steps is None:
        steps = _default_steps(inter, outs)
    else:
        steps = tuple(
            _parse_step(item, loc + ("steps", i), err) for i, item in enumerate(raw.steps)
        )
    return OpSpec(name, cbs, inter, outs, steps)


def _default_steps(inter: tuple[TensorSpec, ...], outs: tuple[TensorSpec, ...]) -> tuple[Step, ...]:
    """A leaf op without `steps`: allocate what it owns, run its program, free its intermediates."""
    allocs = [Step(StepKind.ALLOC, t.name) for t in outs if t.allocated_by is OutputOwner.OP]
    allocs += [Step(StepKind.ALLOC, t.name) for t in inter]
    frees = [Step(StepKind.FREE, t.name) for t in reversed(inter)]
    return tuple(allocs + [Step(StepKind.RUN, "")] + frees)


_STEP_FORMS = "'run', {alloc: NAME}, {free: NAME} or {call: OP, outputs: {CALLEE_OUTPUT: TENSOR}}"


def _parse_step(item: Any, loc: tuple, err: Any) -> Step:
    if item == "run":
        return Step(StepKind.RUN, "")
    if not isinstance(item, dict):
        raise err("unknown step", loc, found=item, expected=_STEP_FORMS)
    verbs = [k for k in ("alloc", "free", "call") if k in item]
    extra = sorted(set(item) - {"alloc", "free", "call", "outputs"})
    if len(verbs) != 1 or extra or ("outputs" in item and verbs != ["call"]):
        raise err(
            "a step has exactly one of alloc, free, call", loc, found=item, expected=_STEP_FORMS
        )
    verb = verbs[0]
    target = item[verb]
    if not isinstance(target, str):
        raise err(f"'{verb}' takes a name", loc + (verb,), found=target, expected="a string")
    bindings = item.get("outputs", {}) or {}
    if not isinstance(bindings, dict) or not all(isinstance(v, str) for v in bindings.values()):
        raise err(
            "outputs must map callee output names to tensor names",
            loc + ("outputs",),
            found=bindings,
        )
    return Step(StepKind(verb), target, tuple((str(k), v) for k, v in bindings.items()))


__all__ = [
    "CircularBufferSpec",
    "OpSpec",
    "OpsFile",
    "OutputOwner",
    "Step",
    "StepKind",
    "TensorSpec",
    "load_ops",
    "load_ops_text",
    "ops_from_dict",
]
