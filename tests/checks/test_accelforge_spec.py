"""Reading AccelForge's own spec files: what is accepted, and one clear message for every fault.

A bad spec gives a SpecError naming the file, the field, the line, what was found and what was
expected (never a traceback); unsupported AccelForge features are refused by name.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from cyclesim.checks.accelforge.looptree import looptree_yaml
from cyclesim.checks.accelforge.model import evaluate_model
from cyclesim.checks.accelforge.read import load_accelforge_spec
from cyclesim.checks.accelforge.read_yaml import load_yaml_file, parse_jinja_data
from cyclesim.checks.accelforge.spec import AfContainer, LoopKind, SplitKind
from cyclesim.errors import SpecError

SPECS = Path(__file__).with_name("accelforge_specs")
SEEDS = (
    Path(__file__).resolve().parents[2] / "examples" / "accelforge_persist"
)  # = examples/accelforge_persist
BASE = (SPECS / "matmul_3level.yaml").read_text()


def _write(tmp_path: Path, text: str, name: str = "spec.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _replace(old: str, new: str, *more: str) -> str:
    text = BASE
    pairs = [(old, new), *zip(more[::2], more[1::2], strict=True)]
    for before, after in pairs:
        assert before in text, before
        text = text.replace(before, after, 1)
    return text


BAD_SPECS = [
    (
        "unknown component",
        _replace(
            "!Storage {tensors: [Z], component: GLB}", "!Storage {tensors: [Z], component: L2}"
        ),
        r"unknown component 'L2'.*expected a !Memory: DRAM, GLB, Reg",
    ),
    (
        "rank variable not in the Einsum",
        _replace(
            "!Temporal {rank_variable: k, tile_shape: 16}",
            "!Temporal {rank_variable: q, tile_shape: 16}",
        ),
        r"rank variable 'q' is not a rank variable of Einsum 'matmul'.*expected m, k, n",
    ),
    (
        "storage of an unknown tensor",
        _replace(
            "!Storage {tensors: [B], component: GLB}", "!Storage {tensors: [C], component: GLB}"
        ),
        r"!Storage of unknown tensor 'C'.*expected a workload tensor: A, B, Z",
    ),
    (
        "tile shapes that do not divide",
        _replace(
            "!Temporal {rank_variable: k, tile_shape: 16}",
            "!Temporal {rank_variable: k, tile_shape: 24}",
        ),
        r"tile shape 24 of rank variable 'k' does not divide its enclosing extent 64",
    ),
    (
        "unsupported arch node kind, named",
        _replace(
            "  - !Compute\n    name: MAC", "  - !Toll\n    name: T\n  - !Compute\n    name: MAC"
        ),
        r"arch node kind !Toll is not supported",
    ),
    (
        "a !Network node, named",
        _replace(
            "  - !Compute\n    name: MAC", "  - !Network\n    name: N\n  - !Compute\n    name: MAC"
        ),
        r"arch node kind !Network is not supported",
    ),
    (
        "an !Array node, named",
        _replace(
            "  - !Compute\n    name: MAC", "  - !Array\n    name: A\n  - !Compute\n    name: MAC"
        ),
        r"arch node kind !Array is not supported",
    ),
    (
        "a spatial loop naming a memory that has no spatial: fan-out",
        _replace(
            "  - !Storage {tensors: [Z], component: Reg}",
            "  - !Spatial {rank_variable: n, tile_shape: 2, name: X, component: GLB}\n"
            "  - !Storage {tensors: [Z], component: Reg}",
        ),
        r"component 'GLB' is not a !Container",
    ),
    (
        "unsupported mapping node kind, named",
        _replace(
            "  - !Storage {tensors: [A], component: Reg}",
            "  - !Toll {tensors: [A], component: Reg}",
        ),
        r"mapping node kind !Toll is not supported",
    ),
    (
        "unknown field, listing the supported ones",
        _replace("    size: 64\n", "    size: 64\n    sise: 32\n"),
        r"field 'arch.nodes\[2\]\(Reg\).sise': unknown or unsupported field 'sise' of !Memory; expected one of",
    ),
    (
        "unsupported feature with a value, named",
        _replace(
            "    size: 64\n", "    size: 64\n    total_latency: max(a.n_calls for a in actions)\n"
        ),
        r"a custom total_latency is not supported",
    ),
    (
        "no innermost loop stepping by one",
        _replace("  - !Temporal {rank_variable: n, tile_shape: 1}\n", ""),
        r"no loop with tile_shape 1 over rank variable 'n'",
    ),
    (
        "unknown name in a set expression",
        _replace(
            "tensors: {keep: All, may_keep: All}", "tensors: {keep: All - Weights, may_keep: All}"
        ),
        r"unknown name 'Weights' in a set expression",
    ),
    (
        "a spatial loop on a container that does not exist",
        _replace(
            "  - !Storage {tensors: [Z], component: Reg}",
            "  - !Spatial {rank_variable: n, tile_shape: 2, name: X, component: PE}\n"
            "  - !Storage {tensors: [Z], component: Reg}",
        ),
        r"unknown component 'PE'",
    ),
    (
        "a tensor that no storage node keeps",
        _replace(
            "  - !Storage {tensors: [Z, B, A], component: DRAM}",
            "  - !Storage {tensors: [Z, B], component: DRAM}",
            "  - !Storage {tensors: [A], component: GLB}\n",
            "",
            "  - !Storage {tensors: [A], component: Reg}\n",
            "",
        ),
        r"tensor 'A' of Einsum 'matmul' is not kept by any !Storage node",
    ),
    (
        "a throughput that is missing",
        _replace(
            "    - {name: compute, energy: 1, throughput: 1}", "    - {name: compute, energy: 1}"
        ),
        r"action 'compute' has no throughput",
    ),
]


@pytest.mark.parametrize(("case", "text", "message"), BAD_SPECS, ids=[c[0] for c in BAD_SPECS])
def test_bad_spec_gives_one_clear_message(tmp_path, case, text, message):
    path = _write(tmp_path, text)
    with pytest.raises(SpecError, match=message) as raised:
        load_accelforge_spec([path])
    assert raised.value.file == str(path)
    assert str(raised.value).startswith(str(path))


def test_bad_mapping_error_names_the_line(tmp_path):
    text = _replace(
        "!Storage {tensors: [B], component: GLB}", "!Storage {tensors: [C], component: GLB}"
    )
    path = _write(tmp_path, text)
    line = next(i for i, s in enumerate(text.splitlines(), 1) if "tensors: [C]" in s)
    with pytest.raises(SpecError) as raised:
        load_accelforge_spec([path])
    assert raised.value.line == line


def test_jinja_variable_left_undefined_is_named(tmp_path):
    path = _write(
        tmp_path, _replace("    size: 16384                 # bits", "    size: {{ GLB_BITS }}")
    )
    with pytest.raises(SpecError, match="'GLB_BITS' is undefined.*--jinja-data"):
        load_accelforge_spec([path])
    spec = load_accelforge_spec([path], {"GLB_BITS": "1024*16"})
    assert spec.arch.node("GLB").size_bits == 16384  # `1024*16` evaluated as AccelForge does


def test_files_merge_like_spec_from_yaml_and_the_first_file_wins(tmp_path):
    # arch+workload from one file, mapping from another; a later duplicate key is ignored.
    arch_and_workload = BASE[: BASE.index("mapping:")]
    mapping = BASE[BASE.index("mapping:") :]
    first = _write(tmp_path, arch_and_workload, "arch.yaml")
    second = _write(tmp_path, mapping + "workload: {einsums: []}\n", "mapping.yaml")
    spec = load_accelforge_spec([first, second])
    assert [e.name for e in spec.workload.einsums] == ["matmul"]
    assert spec.files == (str(first), str(second))


def test_sizes_and_throughputs_accept_expressions_and_inf():
    spec = load_accelforge_spec([SPECS / "matmul_3level.yaml"])
    assert spec.arch.node("DRAM").size_bits == math.inf
    assert spec.arch.node("Reg").action("read").throughput_actions_per_cycle == math.inf
    assert spec.arch.node("GLB").action("write").throughput_actions_per_cycle == 256


def test_set_expressions_are_evaluated_per_einsum():
    # dram keeps `~Intermediates | AO`, sram keeps `~dram | AO`, where `dram` means the tensors
    # the mapping keeps in dram for that Einsum.
    spec = load_accelforge_spec([SEEDS / "seed_repro.yaml"])
    placements = {(p.einsum, p.memory): p for p in spec.placements}
    assert placements["producer", "dram"].keep == {"I", "W0", "AO"}
    assert placements["consumer", "dram"].keep == {"AO", "W1", "O"}
    assert placements["producer", "sram"].keep == {"AO"}
    assert placements["consumer", "sram"].may_keep == {"AO", "W1", "O"}


def test_partial_mappings_follow_accelforges_split_at_sequential():
    # seed_repro: AO's DRAM node above the split belongs to both Einsums; each branch keeps only
    # its own tensors; the loop counts are m(16), n1(16), n0 or n2 (16).
    spec = load_accelforge_spec([SEEDS / "seed_repro.yaml"])
    producer = spec.path("producer")
    assert [type(n).__name__ for n in producer.nodes] == [
        "AfStorageNode", "AfStorageNode", "AfLoopNode", "AfLoopNode", "AfStorageNode", "AfLoopNode",
        "AfComputeNode",
    ]  # fmt: skip
    assert producer.loop_iterations == (16, 16, 16)
    assert spec.mapping[-1].kind is SplitKind.SEQUENTIAL


def test_spatial_container_and_loops_are_read():
    spec = load_accelforge_spec([SPECS / "matmul_spatial_4x4.yaml"])
    container = spec.arch.node("PE")
    assert isinstance(container, AfContainer)
    assert [(d.name, d.fanout) for d in container.dimensions] == [("X", 4), ("Y", 4)]
    spatial = [n for n in spec.path("matmul").nodes if getattr(n, "kind", None) is LoopKind.SPATIAL]
    assert [(n.rank_variable, n.tile_shape, n.dimension) for n in spatial] == [
        ("n", 1, "Y"),
        ("m", 16, "Y"),
        ("m", 4, "X"),
    ]


@pytest.mark.parametrize(
    "spec_file",
    [
        SEEDS / "seed_copy_workaround.yaml",
        SEEDS / "seed_fused_n1.yaml",
        SPECS / "matmul_spatial_4x4.yaml",
    ],
    ids=lambda p: p.stem,
)
def test_looptree_yaml_round_trips_to_the_same_counts(tmp_path, spec_file):
    spec = load_accelforge_spec([spec_file])
    text = spec_file.read_text()
    rewritten = text[: text.index("mapping:")] + looptree_yaml(spec.mapping)
    again = load_accelforge_spec([_write(tmp_path, rewritten)])
    assert again.mapping == spec.mapping
    assert evaluate_model(again).accesses.equals(evaluate_model(spec).accesses)


def test_include_text_renders_a_file_next_to_the_template_with_the_same_data(tmp_path):
    (tmp_path / "sizes.yaml").write_text("size: {{ SIZE * 8 }}\n")
    (tmp_path / "main.yaml").write_text("{{ include_text('sizes.yaml') }}\nname: x\n")
    assert load_yaml_file(tmp_path / "main.yaml", {"SIZE": 4}) == {"size": 32, "name": "x"}


def test_add_to_path_then_find_path_names_a_file_in_the_added_folder(tmp_path):
    # AccelForge's documented search: the template's folder first, then folders added in order
    (tmp_path / "cells").mkdir()
    (tmp_path / "cells" / "rram.yaml").write_text("x: 1\n")
    (tmp_path / "main.yaml").write_text(
        "{{ add_to_path('./cells') }}\ncell: \"{{ find_path('rram.yaml') }}\"\n"
    )
    loaded = load_yaml_file(tmp_path / "main.yaml", {})
    assert loaded == {"cell": str((tmp_path / "cells" / "rram.yaml").resolve())}


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("{{ ''.__class__.__mro__[1].__subclasses__() }}", "tried to reach Python internals"),
        ("a: 1\n{{ include_all('./cells') }}", "t.yaml:2: the Jinja helper include_all()"),
        ("a: 1\nb: '{{ find_path('none.yaml') }}'", "t.yaml:2: find_path('none.yaml'): no such"),
        ("a: 1\nb: {{ M }}", "t.yaml:2: Jinja template uses an undefined variable: 'M'"),
    ],
)
def test_templates_render_sandboxed_and_refuse_by_name_with_the_line(tmp_path, template, message):
    path = tmp_path / "t.yaml"
    path.write_text(template)
    with pytest.raises(SpecError, match=re.escape(message)) as error:
        load_yaml_file(path, {})
    assert error.value.file == str(path)


def test_jinja_data_items_are_files_or_name_value_pairs_later_winning(tmp_path):
    data = tmp_path / "d.yaml"
    data.write_text("M: 64\nKN: 8\n")
    assert parse_jinja_data([str(data), "M=16", "X=inf"]) == {"M": 16, "KN": 8, "X": "inf"}
