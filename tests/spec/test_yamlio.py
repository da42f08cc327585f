"""The one loader: bounded, line-tracking, refusing what YAML would silently accept."""

from __future__ import annotations

import time

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from cyclesim.errors import SpecError
from cyclesim.spec.yamlio import MAX_DEPTH, parse_yaml_text, read_json, read_yaml

# nine levels of ten aliases each: 10**9 values when expanded
BILLION_LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{name}: &{name} [{', '.join([f'*{previous}'] * 10)}]\n"
    for previous, name in zip("abcdefgh", "bcdefghi", strict=True)
)
ONNX_BYTES = b"\x08\x07\x12\x07pytorch\x1a\x032.1:\xff\xfe\x00\x01"  # an ONNX file's first bytes


def test_every_field_path_has_its_line():
    data, lines, _ = parse_yaml_text("a: 1\nb:\n  - {c: 2}\n  - d\n")
    assert data == {"a": 1, "b": [{"c": 2}, "d"]}
    assert lines[("a",)] == 1 and lines[("b",)] == 2
    assert lines[("b", 0, "c")] == 3 and lines[("b", 1)] == 4


def test_a_billion_laughs_is_refused_in_milliseconds():
    start = time.process_time()
    with pytest.raises(SpecError, match="alias bomb"):
        parse_yaml_text(BILLION_LAUGHS, "bomb.yaml")
    assert time.process_time() - start < 0.5  # 10**9 values if expanded


def test_small_aliases_and_merge_keys_still_work():
    data, _, _ = parse_yaml_text("base: &b {x: 1, y: 2}\nuse: {<<: *b, y: 3}\nlist: [*b, *b]\n")
    assert data["use"] == {"x": 1, "y": 3}  # explicit keys win over merged ones
    assert data["list"] == [{"x": 1, "y": 2}] * 2


def test_the_mapping_hook_is_given_each_keys_line():
    # `base` spans lines 1-2 (x on 1, y on 2); `use` (key on line 3, its mapping from line 4)
    # has its own y on line 4, which wins over the anchor's y for its value and its line, and
    # merges x, which keeps its line in the anchor (1)
    text = "base: &b {x: 1,\n  y: 2}\nuse:\n  y: 3\n  <<: *b\n"
    seen = []

    def remember(mapping: dict, line: int, key_lines: dict) -> dict:
        seen.append((dict(mapping), line, dict(key_lines)))
        return mapping

    data, lines, _ = parse_yaml_text(text, mappings=remember)
    assert data["use"] == {"y": 3, "x": 1}
    use = next(entry for entry in seen if entry[0] == {"y": 3, "x": 1})
    assert use[1] == 4 and use[2] == {"y": 4, "x": 1}
    assert seen[-1][2] == {"base": 1, "use": 3}
    assert lines[("use", "y")] == 4 and lines[("use", "x")] == 1


def test_a_recursive_alias_is_refused():
    with pytest.raises(SpecError, match="recursive"):
        parse_yaml_text("a: &x [1, *x]\n")


@pytest.mark.parametrize("depth, refused", [(MAX_DEPTH - 1, False), (MAX_DEPTH + 1, True), (5000, True)])  # fmt: skip
def test_nesting_depth_is_bounded(depth, refused):
    text = "[" * depth + "]" * depth
    if refused:
        with pytest.raises(SpecError, match=f"nested more than {MAX_DEPTH}"):
            parse_yaml_text(text)
    else:
        parse_yaml_text(text)


def test_a_duplicate_key_is_refused_with_both_places():
    with pytest.raises(SpecError) as info:
        parse_yaml_text("a: 1\nb: 2\na: 3\n", "f.yaml")
    assert str(info.value).startswith("f.yaml:3: duplicate key 'a' (first at line 1 column 1")


@pytest.mark.parametrize(
    "data, says",
    [
        (b"a: 1\nb: \xff\n", "f.yaml:2: not UTF-8 text: byte 0xff at column 4"),
        (b"a: 1\n\nb: \x07\n", "f.yaml:3: control character '\\x07'"),
        (b"a: 1\x00\n", "f.yaml:1: control character '\\x00'"),
        (b"a: \xc2\x85\xc2\x9f\n", "f.yaml:1: not valid YAML"),  # C1 control: YAML refuses it
        (b"a: 1" + b"0" * 5000 + b"\n", "f.yaml:1: cannot read the value"),
        (
            b"a: !!python/object:os.system x\n",
            "f.yaml:1: YAML tag '!!python/object:os.system' is not allowed",
        ),
        (b"a: !Memory {}\n", "unknown YAML tag '!Memory'"),
        (b"{a: [1, 2}\n", "f.yaml:1: not valid YAML"),
    ],
)
def test_bytes_yaml_would_choke_on_get_one_message_with_the_line(tmp_path, data, says):
    path = tmp_path / "f.yaml"
    path.write_bytes(data)
    with pytest.raises(SpecError) as info:
        read_yaml(path)
    assert says in str(info.value).replace(str(tmp_path) + "/", "")


def test_an_onnx_model_is_recognised_by_name_and_by_bytes(tmp_path):
    for name in ("resnet18.onnx", "model.bin"):
        path = tmp_path / name
        path.write_bytes(ONNX_BYTES)
        with pytest.raises(SpecError, match="ONNX model"):
            read_yaml(path)


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(SpecError, match="cannot read the file: No such file"):
        read_yaml(tmp_path / "nope.yaml")


@pytest.mark.parametrize(
    "text, says",
    [
        ('{"cycles": NaN}', "NaN is not a number JSON allows here"),
        ('{"cycles": -Infinity}', "-Infinity is not a number"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"a": 1,}', "not valid JSON"),
    ],
)
def test_json_is_read_with_the_same_bounds(tmp_path, text, says):
    path = tmp_path / "run.json"
    path.write_text(text)
    with pytest.raises(SpecError, match=says):
        read_json(path)


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False),
    st.text(st.characters(codec="utf-8", categories=["L", "N", "P", "Zs"]), max_size=20),
)
_DOCUMENTS = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.text("abcdefgh_", min_size=1, max_size=6), inner, max_size=4),
    ),
    max_leaves=30,
)


@given(_DOCUMENTS, st.booleans())
def test_within_the_bounds_the_loader_reads_what_pyyaml_reads(document, flow):
    text = yaml.safe_dump(document, default_flow_style=flow, allow_unicode=True)
    assert parse_yaml_text(text)[0] == yaml.safe_load(text)


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ('!!python/object/apply:os.system ["touch PWNED"]\n', 1),  # the whole document
        ('name: x\npe_array: !!python/object/apply:os.system ["touch PWNED"]\n', 2),
        ("a: !!python/name:os.system\n", 1),  # a scalar
        ("a: [1, !!python/tuple [2, 3]]\n", 1),
    ],
)
def test_a_python_tag_is_refused_by_name_and_line(text, line):
    # `!!python/...` expands to tag:yaml.org,2002:python/..., the prefix of YAML's own types:
    # the loader read the node as a plain list and the spec said "must be a mapping (found
    # 'list')" or showed the command as a value; it now names the tag and nothing is built
    with pytest.raises(SpecError) as info:
        parse_yaml_text(text, "evil.yaml")
    message = str(info.value)
    assert message.startswith(f"evil.yaml:{line}: YAML tag '!!python/")
    assert "is not allowed" in message and "never builds Python objects" in message


def test_yamls_own_explicit_tags_still_read():
    data, _, _ = parse_yaml_text(
        "a: !!int '3'\nb: !!str 4\nc: !!float 1\nd: !!map {x: !!null ''}\n"
    )
    assert data == {"a": 3, "b": "4", "c": 1.0, "d": {"x": None}}
