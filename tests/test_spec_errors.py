"""Bad input is refused before any simulation, with one message naming file, field and expectation."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cyclesim.cli import main
from cyclesim.errors import SpecError
from cyclesim.schedule import build_plan
from cyclesim.spec import load_architecture, load_mapping, load_workload

ROOT = Path(__file__).resolve().parents[1]
WORKED = Path(__file__).parent / "cases" / "worked" / "03_single_buffer"


def write(tmp_path: Path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def good(name: str) -> str:
    return (WORKED / name).read_text()


def run_with_arch(arch: Path) -> int:
    """`cyclesim run` on this architecture with the worked case's workload and mapping."""
    return main(["run", str(arch), str(WORKED / "workload.yaml"), str(WORKED / "mapping.yaml")])


def load_all(tmp_path, arch=None, workload=None, mapping=None):
    """Load the three files and compile them: everything that happens before a simulation."""
    a = load_architecture(write(tmp_path, "arch.yaml", arch or good("arch.yaml")))
    w = load_workload(write(tmp_path, "workload.yaml", workload or good("workload.yaml")))
    m = load_mapping(write(tmp_path, "mapping.yaml", mapping or good("mapping.yaml")), a, w)
    return build_plan(a, w, m)


# (what is broken, which file, edit (old -> new), expected fragments of the message)
BAD = [
    (
        "missing field",
        "workload",
        ("  ranks: {m: 4, k: 4}\n", ""),
        ["einsums[0].ranks", "Field required"],
    ),
    (
        "missing field",
        "arch",
        (
            "  - {name: dram_rd, kind: read, width_bits: 4, latency_cycles: 0, burst_bits: 8}\n",
            "  - {name: dram_rd, kind: read, latency_cycles: 0, burst_bits: 8}\n",
        ),
        ["arch.yaml:", "memories[0].ports[0].width_bits", "Field required"],
    ),
    (
        "wrong type",
        "arch",
        ("width_bits: 4,", "width_bits: four,"),
        ["memories[0].ports[0].width_bits", "found 'four'"],
    ),
    (
        "unknown field",
        "arch",
        (
            "  double_buffered: false\n  ports:\n  - {name: dram_rd",
            "  double_bufered: false\n  ports:\n  - {name: dram_rd",
        ),
        ["memories[0].double_bufered", "unknown field", "allowed:", "double_buffered"],
    ),
    (
        "unknown port kind",
        "arch",
        ("kind: read, width_bits: 4", "kind: reed, width_bits: 4"),
        ["memories[0].ports[0].kind"],
    ),
    (
        "unknown memory",
        "mapping",
        ("memory: abuf", "memory: abuff"),
        ["mapping.yaml:", "loop_tree[4].memory", "unknown memory", "abuff"],
    ),
    (
        "unknown rank",
        "mapping",
        ("rank: k, bound: 4", "rank: j, bound: 4"),
        ["loop_tree[5].rank", "'j'"],
    ),
    (
        "bounds do not multiply",
        "mapping",
        ("rank: k, bound: 4", "rank: k, bound: 2"),
        # the k loop's own line (loop_tree[5]), not the compute node's below it
        ["loop_tree[5]", "multiply to 2", "4 (the rank's size)"],
    ),
    (
        "unknown tensor",
        "mapping",
        ("tensors: [B]", "tensors: [Q]"),
        ["loop_tree[1].tensors[0]", "unknown tensor"],
    ),
    (
        "tensor not allowed in memory",
        "mapping",
        ("memory: wbuf\n  tensors: [B]", "memory: abuf\n  tensors: [B]"),
        ["loop_tree[1].tensors[0]", "may not hold tensor B"],
    ),
    (
        "projection uses an unknown rank",
        "workload",
        ("projection: [m, k]", "projection: [m, q]"),
        ["workload.yaml:", "einsums[0].inputs[0].projection[1]", "'q'"],
    ),
    (
        "not affine",
        "workload",
        ("projection: [m, k]", "projection: [m, k*k]"),
        ["einsums[0].inputs[0].projection[1]", "affine"],
    ),
    (
        "tile does not fit",
        "arch",
        ("- name: abuf\n  size_bits: 32", "- name: abuf\n  size_bits: 16"),
        ["mapping.yaml:", "loop_tree[4]", "'abuf' need 32 bits", "has 16"],
    ),
    (
        "ambiguous ports",
        "arch",
        (
            "  - {name: acc_rd, kind: read, width_bits: 64, latency_cycles: 0, burst_bits: 8}\n",
            "  - {name: acc_rd, kind: read, width_bits: 64, latency_cycles: 0, burst_bits: 8}\n"
            "  - {name: acc_rd2, kind: read, width_bits: 64, latency_cycles: 0, burst_bits: 8}\n",
        ),
        ["memories[2].ports", "several ports", "serves"],
    ),
    (
        "yaml syntax",
        "workload",
        ("ranks: {m: 4, k: 4}", "ranks: {m: 4, k: 4"),
        ["workload.yaml:", "not valid YAML"],
    ),
]


@pytest.mark.parametrize(
    "what,which,edit,fragments", BAD, ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD)]
)
def test_bad_input_names_file_and_field(tmp_path, what, which, edit, fragments):
    text = good(f"{which}.yaml")
    old, new = edit
    assert old in text, f"test edit does not apply: {old!r}"
    files = {which: text.replace(old, new, 1)}
    with pytest.raises(SpecError) as info:
        load_all(tmp_path, **files)
    message = str(info.value)
    assert f"{which}.yaml" in message
    for fragment in fragments or []:
        assert fragment in message, message


def test_line_numbers_point_at_the_field(tmp_path):
    text = good("mapping.yaml").replace("memory: abuf", "memory: abuff")
    with pytest.raises(SpecError) as info:
        load_all(tmp_path, mapping=text)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "abuff" in t)
    assert info.value.line == line


def test_cli_prints_one_message_and_no_traceback(tmp_path):
    bad = write(
        tmp_path,
        "mapping.yaml",
        good("mapping.yaml").replace("bound: 4}\n- type: storage", "bound: 3}\n- type: storage"),
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "cyclesim.cli",
            "run",
            str(WORKED / "arch.yaml"),
            str(WORKED / "workload.yaml"),
            bad,
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("cyclesim: ") and "mapping.yaml" in proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize(
    "old, new, marker, fragment",
    [
        # a wrong bound: the line of the loop over that rank nearest the compute node
        ("rank: m, bound: 4", "rank: m, bound: 5", "rank: m, bound: 5", "multiply to 5 (found"),
        # two loops over k (2 x 3 = 6): the inner one's line, and both bounds in the message
        ("- {type: temporal, rank: k, bound: 4}",
         "- {type: temporal, rank: k, bound: 2}\n- {type: temporal, rank: k, bound: 3}",
         "rank: k, bound: 3", "multiply to 6 (2 x 3)"),
        # no loop over k at all: the compute node's line
        ("- {type: temporal, rank: k, bound: 4}\n", "", "type: compute", "multiply to 1 (found"),
    ],
)  # fmt: skip
def test_bounds_that_do_not_cover_a_rank_name_the_loops_line(tmp_path, old, new, marker, fragment):
    text = good("mapping.yaml")
    assert text.count(old) == 1, old
    text = text.replace(old, new)
    with pytest.raises(SpecError) as info:
        load_all(tmp_path, mapping=text)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if marker in t)
    assert info.value.line == line, str(info.value)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "architecture file is empty; expected a mapping of the architecture's fields"),
        ("# only a comment\n", "architecture file is empty"),
        ("- a\n- b\n", "must be a YAML mapping at the top level, not a list"),
        ("just words\n", "must be a YAML mapping at the top level, not a string"),
    ],
)
def test_an_empty_or_shapeless_file_says_what_it_is(tmp_path, capsys, text, says):
    # an empty file read "must be a YAML mapping at the top level (found 'NoneType')"
    (tmp_path / "arch.yaml").write_text(text)
    code = run_with_arch(tmp_path / "arch.yaml")
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert err.startswith("cyclesim: ") and str(tmp_path / "arch.yaml") in err and says in err


def test_a_misspelt_field_is_named_with_the_one_it_is_closest_to(tmp_path, capsys):
    # `widht_bits` in a port: pydantic reports width_bits missing first, and the message was
    # "field 'memories[0].ports[0].width_bits': Field required", not naming the typo at all
    text = good("arch.yaml").replace("width_bits: 4,", "widht_bits: 4,", 1)
    (tmp_path / "arch.yaml").write_text(text)
    code = run_with_arch(tmp_path / "arch.yaml")
    err = capsys.readouterr().err
    assert code == 2
    line = 1 + text.splitlines().index(next(ln for ln in text.splitlines() if "widht_bits" in ln))
    assert err.startswith(
        f"cyclesim: {tmp_path / 'arch.yaml'}:{line}: field 'memories[0].ports[0].widht_bits': "
        "architecture: unknown field 'widht_bits': did you mean 'width_bits'? (allowed: name, kind, "
        "width_bits, latency_cycles, burst_bits, serves)"
    )


def test_a_field_of_several_types_is_named_without_pydantic_s_member_tag(tmp_path, capsys):
    # found by a new user: `double_buffered: maybe` was reported as field
    # 'memories[0].double_buffered.bool' (the union member pydantic tried), not the file's path
    text = good("arch.yaml").replace("double_buffered: false", "double_buffered: maybe", 1)
    (tmp_path / "arch.yaml").write_text(text)
    assert run_with_arch(tmp_path / "arch.yaml") == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'arch.yaml'}:13: field 'memories[0].double_buffered': " in err, err


def test_a_misspelt_field_in_a_loop_tree_node_is_named_with_the_closest(tmp_path, capsys):
    # found by a new user: `memroy: UB` in a storage node was "field
    # 'loop_tree[1].storage.memroy': ... unknown field 'memroy' (allowed: )": pydantic's tag of
    # the node type in the path, and no allowed field. The same in a chip mapping's layers.
    tpu = ROOT / "examples" / "tpu_gemm"
    text = (tpu / "mapping.yaml").read_text().replace("memory: UB, tensors", "memroy: UB, tensors")
    (tmp_path / "m.yaml").write_text(text)
    code = main(["run", str(ROOT / "hw_models/tpu_like.yaml"), str(tpu / "workload.yaml"), str(tmp_path / "m.yaml")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(
        f"cyclesim: {tmp_path / 'm.yaml'}:7: field 'loop_tree[1].memroy': mapping: unknown field "
        "'memroy': did you mean 'memory'? (allowed: type, memory, tensors)"
    ), err
    multicore = ROOT / "examples" / "multicore"
    text = (multicore / "fused_rows_2core.yaml").read_text()
    text = text.replace("type: temporal, rank: k, bound: 2", "type: temporal, rnak: k, bound: 2", 1)
    (tmp_path / "c.yaml").write_text(text)
    code = main(["chip", str(multicore / "chip_bus_2core.yaml"), str(multicore / "workload.yaml"), str(tmp_path / "c.yaml")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2
    assert "field 'layers[0].loop_tree[1].rnak': chip mapping: unknown field 'rnak': did you mean 'rank'? (allowed: type, rank, bound)" in err, err  # fmt: skip


@pytest.mark.parametrize(
    "edit, message",
    [
        # B kept only in the per-PE weight registers, below n and k (which index B): each
        # register holds one of 32 x 32 = 1,024 tiles of B in turn; the rest exist nowhere.
        # Replayed, this ran 1,163,464 cycles, fewer than the real mapping's 1,179,854.
        (
            lambda t: t.replace("tensors: [A, B, Z]}", "tensors: [A, Z]}").replace(
                "memory: UB, tensors: [A, B]}", "memory: UB, tensors: [A]}"
            ),
            ":13: field 'loop_tree[7]': the workload's input B is first kept in memory 'wreg', "
            "below loops that index it: that node holds one of its 1,024 tiles at a time",
        ),
        # Z kept only in the accumulators, below n (which indexes Z): 32 tiles, none written out
        (
            lambda t: t.replace("tensors: [A, B, Z]}", "tensors: [A, B]}"),
            ":11: field 'loop_tree[5]': the workload's output Z is first kept in memory 'acc', "
            "below loops that index it: that node holds one of its 32 tiles at a time",
        ),
    ],
)
def test_a_workload_tensor_must_be_whole_in_its_backing_store(tmp_path, capsys, edit, message):
    # found by a new user: both mappings replayed with exit 0 (the second wrote nothing back)
    tpu = ROOT / "examples" / "tpu_gemm"
    (tmp_path / "m.yaml").write_text(edit((tpu / "mapping.yaml").read_text()))
    code = main(["run", str(ROOT / "hw_models/tpu_like.yaml"), str(tpu / "workload.yaml"), str(tmp_path / "m.yaml")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and f"cyclesim: {tmp_path / 'm.yaml'}{message}" in err, err
