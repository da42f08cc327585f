"""Bad op descriptions: one clear SpecError naming file, field path, line, found, expected."""

from __future__ import annotations

import pytest

from cyclesim.errors import SpecError
from cyclesim.l1 import load_ops, load_ops_text

GOOD_LEAF = """
ops:
  leaf:
    circular_buffers: [{name: cb, page_size_bytes: 2048, num_pages: 2}]
    outputs: [{name: out, size_bytes: 4096}]
"""
MODEL = """
model:
  tensors: [{name: x, size_bytes: 4096}]
  steps: [{alloc: x}, {call: leaf, outputs: {out: x}}, {free: x}]
"""


def _error(text: str) -> SpecError:
    with pytest.raises(SpecError) as info:
        load_ops_text(text, "bad.yaml")
    return info.value


def test_the_good_file_loads():
    ops = load_ops_text(GOOD_LEAF + MODEL)
    assert [op.name for op in ops.ops] == ["leaf"]
    assert [s.kind.value for s in ops.op("leaf").steps] == ["run"]  # a leaf's default body


BAD = [
    pytest.param(
        """
ops:
  soft:
    circular_buffers: [{name: cb, page_size_bytes: 2048, num_pages: 2}]
    intermediates:
      - {name: t, size_bytes: -4096}
    outputs: [{name: out, size_bytes: 4096}]
""",
        "ops.soft.intermediates[0].size_bytes",
        6,
        "greater than 0",
        id="negative-size",
    ),
    pytest.param(
        GOOD_LEAF.replace(
            "outputs: [{name: out, size_bytes: 4096}]",
            "outputs: [{name: out, size_bytes: 4096}]\n    steps: [run, {free: ghost}]",
        ),
        "ops.leaf.steps[1].free",
        6,
        "free of an unknown tensor in op 'leaf'",
        id="free-unknown-tensor",
    ),
    pytest.param(
        """
ops:
  a:
    steps: [{call: b}]
  b:
    steps: [{call: a}]
""",
        "ops.",
        None,
        "call cycle: ",
        id="call-cycle",
    ),
    pytest.param(
        GOOD_LEAF.replace("num_pages: 2}", "num_pages: 2, colour: red}"),
        "ops.leaf.circular_buffers[0].colour",
        4,
        "unknown field 'colour'",
        id="unknown-field",
    ),
    pytest.param(
        GOOD_LEAF.replace("size_bytes: 4096}", "size_bytes: 3000}"),
        "ops.leaf.outputs[0].size_bytes",
        5,
        "whole number of pages",
        id="partial-page",
    ),
    pytest.param(
        """
ops:
  c:
    intermediates: [{name: t, size_bytes: 2048}]
    steps: [{alloc: t}]
""",
        "ops.c.steps",
        5,
        "never freed",
        id="intermediate-leaked",
    ),
    pytest.param(
        """
ops:
  c:
    steps: [{call: nowhere}]
""",
        "ops.c.steps[0].call",
        4,
        "call of an unknown op",
        id="unknown-op",
    ),
    pytest.param(
        """
ops:
  c:
    intermediates: [{name: t, size_bytes: 2048}]
    steps: [{alloc: t}, {free: t}, {free: t}]
""",
        "ops.c.steps[2].free",
        5,
        "not allocated here",
        id="double-free",
    ),
    pytest.param(
        """
ops:
  c:
    steps: [{run: yes}]
""",
        "ops.c.steps[0]",
        4,
        "exactly one of alloc, free, call",
        id="bad-step",
    ),
    pytest.param(
        """
ops:
  c:
    circular_buffers: [{name: cb, page_size_bytes: 2048, num_pages: 1}]
    intermediates: [{name: cb, size_bytes: 2048}]
""",
        "ops.c.intermediates[0].name",
        5,
        "duplicate name",
        id="duplicate-name",
    ),
]


@pytest.mark.parametrize(("text", "field", "line", "message"), BAD)
def test_bad_descriptions_name_the_field_and_line(text, field, line, message):
    err = _error(text + MODEL)
    assert message in str(err)
    assert err.file == "bad.yaml"
    assert err.field is not None and err.field.startswith(field)
    if line is not None:
        assert err.line == line


def test_a_call_cycle_names_the_cycle():
    err = _error(
        "ops:\n  a:\n    steps: [{call: b}]\n  b:\n    steps: [{call: c}]\n  c:\n    steps: [{call: a}]\n"
        "model:\n  steps: [{call: a}]\n"
    )
    assert "call cycle: a -> b -> c -> a" in str(err)
    assert err.field == "ops.c.steps[0].call" and err.line == 7


def test_preallocated_output_must_be_live_at_the_call():
    err = _error(GOOD_LEAF + MODEL.replace("{alloc: x}, ", "").replace(", {free: x}", ""))
    assert "expects its output 'out' preallocated" in str(err)
    assert err.field == "model.steps[0].outputs.out" and err.line == 9


def test_binding_a_tensor_of_the_wrong_size_is_refused():
    err = _error(
        GOOD_LEAF + MODEL.replace("name: x, size_bytes: 4096", "name: x, size_bytes: 2048")
    )
    assert "does not match output 'out' of 'leaf'" in str(err)


def test_the_model_cannot_run_a_program():
    err = _error(GOOD_LEAF + "model:\n  steps: [run]\n")
    assert "the model has no program to run" in str(err) and err.field == "model.steps[0]"


def test_a_missing_model_and_a_missing_include_are_named(tmp_path):
    assert "has no `model:`" in str(_error(GOOD_LEAF))
    path = tmp_path / "ops.yaml"
    path.write_text("include: [nope.yaml]\n" + GOOD_LEAF + MODEL)
    with pytest.raises(SpecError, match="included file not found") as info:
        load_ops(path)
    assert info.value.field == "include[0]" and info.value.line == 1


def test_an_unknown_top_level_field_lists_the_allowed_ones():
    err = _error(GOOD_LEAF + MODEL + "extras: 1\n")
    assert "unknown field 'extras'" in str(err)
    assert "description, definitions, include, ops, model" in str(err)
