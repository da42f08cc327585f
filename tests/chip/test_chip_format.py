"""The chip architecture and multi-core mapping formats: what loads, and every refusal naming
file, field and line (docs/multicore.md)."""

from __future__ import annotations

import copy

import pytest
import yaml

from cyclesim.chip import (
    MediumKind,
    Via,
    chip_from_dict,
    chip_mapping_from_dict,
    load_chip,
    load_chip_mapping,
)
from cyclesim.errors import SpecError
from cyclesim.spec import load_workload
from cyclesim.spec.yamlio import parse_yaml_text

EX = "examples/multicore"


def core() -> dict:
    return yaml.safe_load(open(f"{EX}/core.yaml"))


def chip_dict(**interconnect) -> dict:
    return {
        "name": "t",
        "cores": [{"name": n, "architecture": core()} for n in ("c0", "c1", "c2")],
        "offchip": {"ports": [{"name": "rw", "kind": "read_write", "width_bits": 64}]},
        "interconnect": interconnect,
    }


def load_text(text: str):
    data, lines, name = parse_yaml_text(text, "chip.yaml")
    return chip_from_dict(data, name, lines)


def test_example_chip_loads():
    chip = load_chip(f"{EX}/chip_bus_2core.yaml")
    assert chip.core_names == ("c0", "c1")
    assert chip.media[0].kind is MediumKind.BUS and chip.media[0].ends == ("c0", "c1", "dram")
    assert chip.core("c0").top_memory == "sram"


def test_bidirectional_link_is_two_links():
    chip = chip_from_dict(chip_dict(links=[
        {"name": "l", "cores": ["c0", "c1"], "width_bits": 32, "bidirectional": True}]))  # fmt: skip
    assert [(m.name, m.ends, m.burst_bits) for m in chip.media] == [
        ("l[c0>c1]", ("c0", "c1"), 32),
        ("l[c1>c0]", ("c1", "c0"), 32),
    ]


def test_link_to_unknown_core_names_field_and_line():
    text = yaml.safe_dump(chip_dict(links=[{"name": "l", "cores": ["c0", "c9"], "width_bits": 8}]))
    with pytest.raises(SpecError) as e:
        load_text(text)
    assert e.value.field == "interconnect.links[0].cores[1]"
    assert e.value.found == "c9" and e.value.line is not None
    assert "unknown core" in str(e.value)


def test_link_and_bus_on_one_pair_need_a_rule():
    d = chip_dict(
        links=[{"name": "l", "cores": ["c0", "c1"], "width_bits": 8}],
        buses=[{"name": "b", "cores": ["c0", "c1", "c2"], "width_bits": 8}],
    )
    with pytest.raises(SpecError, match="both a link .l. and a bus .b.") as e:
        chip_from_dict(d)
    assert e.value.field == "interconnect.prefer"
    d["interconnect"]["prefer"] = "link"
    assert chip_from_dict(d).prefer is MediumKind.LINK


def test_two_links_on_one_pair_are_refused():
    d = chip_dict(links=[{"name": "a", "cores": ["c0", "c1"], "width_bits": 8},
                         {"name": "b", "cores": ["c0", "c1"], "width_bits": 8}])  # fmt: skip
    with pytest.raises(SpecError, match="two links join c0 -> c1") as e:
        chip_from_dict(d)
    assert e.value.field == "interconnect.links[1]"


def test_bad_inline_core_names_its_field():
    d = chip_dict()
    d["cores"][1]["architecture"]["memories"][0]["ports"][0]["width_bits"] = -1
    with pytest.raises(SpecError) as e:
        chip_from_dict(d)
    assert e.value.field.startswith("cores[1].architecture.memories[0].ports[0]")


def test_missing_core_file():
    d = chip_dict()
    d["cores"][0]["architecture"] = "nowhere.yaml"
    with pytest.raises(SpecError, match="no such core architecture file"):
        chip_from_dict(d, "x/chip.yaml")


# --- the mapping ---------------------------------------------------------------------------


@pytest.fixture
def inputs():
    chip = load_chip(f"{EX}/chip_bus_2core.yaml")
    work = load_workload(f"{EX}/workload.yaml")
    data, lines, _ = parse_yaml_text(open(f"{EX}/layer_by_layer_2core.yaml").read(), "m.yaml")
    return chip, work, data


def test_example_mapping_loads(inputs):
    chip, work, _ = inputs
    m = load_chip_mapping(f"{EX}/layer_by_layer_2core.yaml", chip, work)
    conv1 = m.layer("conv1")
    assert conv1.split == (("oy", 2),) and conv1.tile == ()
    assert conv1.step_workload.einsums[0].rank_sizes["oy"] == 8  # 16 rows over 2 cores
    assert m.groups == (("conv1",), ("conv2",))
    assert m.placement("A").via is Via.DRAM and m.placement("W1").home == "dram"


@pytest.mark.parametrize(
    "change, field, message",
    [
        (lambda d: d["layers"][0].update(cores=["c0", "c7"]), "layers[0].cores[1]", "unknown core"),
        (lambda d: d["layers"][0].update(split=[{"rank": "oy", "parts": 3}]),
         "layers[0].split[0].parts", "does not split"),
        (lambda d: d["layers"][0].update(split=[{"rank": "k", "parts": 4}]),
         "layers[0].split", "makes 4 parts for 2 cores"),
        (lambda d: d["layers"][0].update(tile=[{"rank": "oy", "size": 3}]),
         "layers[0].tile[0].size", "does not divide"),
        (lambda d: d["layers"].pop(), "layers", "mapped to no core"),
        (lambda d: d["tensors"].append({"tensor": "Z"}), "tensors[1].tensor", "unknown tensor"),
        (lambda d: d["tensors"].append({"tensor": "I", "via": "dram"}), "tensors[1].via",
         "between layers"),
        (lambda d: d["layers"][0]["loop_tree"].__setitem__(2, {"type": "temporal", "rank": "oy",
         "bound": 4}), "layers[0].loop_tree[2]", "multiply to 4"),
        (lambda d: d["layers"][0]["loop_tree"].__setitem__(0, {"type": "storage", "memory": "rf",
         "tensors": ["I", "W1"]}), "layers[0].loop_tree", "top memory"),
    ],
)  # fmt: skip
def test_mapping_refusals_name_field(inputs, change, field, message):
    chip, work, data = inputs
    data = copy.deepcopy(data)
    change(data)
    with pytest.raises(SpecError, match=message) as e:
        chip_mapping_from_dict(data, chip, work, "m.yaml")
    assert e.value.field == field and e.value.file == "m.yaml"


def test_unroutable_dram_transfer_is_refused(inputs):
    """Links dram -> c0 -> c1 only: I reaches both cores (c0 relays), but A, written to DRAM
    (via: dram), cannot leave c0 for the DRAM."""
    _, work, data = inputs
    d = chip_dict(links=[{"name": "l", "cores": ["dram", "c0"], "width_bits": 8},
                         {"name": "m", "cores": ["c0", "c1"], "width_bits": 8}])  # fmt: skip
    chip = chip_from_dict(d)
    with pytest.raises(SpecError, match="tensor A has no route from c0 to dram") as e:
        load_chip_mapping(f"{EX}/layer_by_layer_2core.yaml", chip, work)
    assert e.value.field == "tensors[0]" and e.value.line is not None


def test_unroutable_transfer_between_cores_is_refused():
    """c0 -> c1 only: A made on c1 cannot reach e2 on c0 (refused when the parts are known)."""
    from chip_helpers import CHAIN, LOCAL, layer, make_chip, run

    chip = make_chip(links=[{"name": "l", "cores": ["c0", "c1"], "width_bits": 8}])
    e1, e2 = CHAIN[0](8), CHAIN[1](8)
    with pytest.raises(SpecError, match="tensor A has no route from c1 to c0"):
        run(chip, [e1, e2], [layer(e1, ["c1"]), layer(e2, ["c0"])], LOCAL)


def test_kept_tensor_read_on_another_core_is_refused():
    from chip_helpers import CHAIN, LOCAL, layer, make_chip, run

    chip = make_chip(links=[{"name": "l", "cores": ["c0", "c1"], "width_bits": 8}])
    e1, e2 = CHAIN[0](8), CHAIN[1](8)
    with pytest.raises(SpecError, match="kept on its producer's core, but e2#0@c1 reads") as e:
        run(chip, [e1, e2], [layer(e1, ["c0"]), layer(e2, ["c1"])],
            LOCAL + [{"tensor": "A", "via": "kept"}])  # fmt: skip
    assert e.value.field == "tensors[4]"


@pytest.mark.parametrize("text, what", [("", "is empty"), ("- a\n", "not a list")])
def test_chip_files_that_are_not_a_mapping_point_to_the_chip_docs(tmp_path, text, what):
    # an empty chip or chip mapping file, or one whose top level is a list, says so and points
    # to where its format is written down (docs/multicore.md), not to a README section it lacks
    path = str(tmp_path / "f.yaml")
    open(path, "w").write(text)
    chip, work = load_chip(f"{EX}/chip_bus_2core.yaml"), load_workload(f"{EX}/workload.yaml")
    for load in (lambda: load_chip(path), lambda: load_chip_mapping(path, chip, work)):
        with pytest.raises(SpecError) as e:
            load()
        message = str(e.value)
        assert what in message and "docs/multicore.md" in message, message
        assert "its section" not in message


def test_a_core_may_double_buffer_tensors_of_any_layer_on_the_chip(tmp_path):
    # a core serves several layers: `double_buffered: [I, A]` on its SRAM names conv1's input and
    # conv2's input, each a tensor of the chip's workload; each layer's step sees only its own
    # tensors, yet neither name is a typo, so the mapping loads (check stream's imports hit this)
    text = (
        open(f"{EX}/core.yaml")
        .read()
        .replace(
            "double_buffered: true\n    ports:\n      - {name: rw, kind: read_write, width_bits: 128",
            "double_buffered: [I, A]\n    ports:\n      - {name: rw, kind: read_write, width_bits: 128",
            1,
        )
    )
    assert "[I, A]" in text
    (tmp_path / "core.yaml").write_text(text)
    chip_text = open(f"{EX}/chip_bus_2core.yaml").read()
    (tmp_path / "chip.yaml").write_text(chip_text)
    chip = load_chip(str(tmp_path / "chip.yaml"))
    work = load_workload(f"{EX}/workload.yaml")
    mapping = load_chip_mapping(f"{EX}/layer_by_layer_2core.yaml", chip, work)
    assert [layer.einsum for layer in mapping.layers] == ["conv1", "conv2"]


def test_a_core_double_buffering_a_tensor_no_layer_has_is_refused(tmp_path):
    # the other side: a name no tensor of the chip's workload has is a typo, refused at the core
    # architecture's line
    text = (
        open(f"{EX}/core.yaml").read().replace("double_buffered: true", "double_buffered: [Q]", 1)
    )
    (tmp_path / "core.yaml").write_text(text)
    (tmp_path / "chip.yaml").write_text(open(f"{EX}/chip_bus_2core.yaml").read())
    chip = load_chip(str(tmp_path / "chip.yaml"))
    work = load_workload(f"{EX}/workload.yaml")
    with pytest.raises(SpecError) as e:
        load_chip_mapping(f"{EX}/layer_by_layer_2core.yaml", chip, work)
    assert e.value.found == "Q" and e.value.field == "memories[0].double_buffered[0]"
    assert e.value.file.endswith("core.yaml") and e.value.line is not None


def test_a_route_may_name_a_bidirectional_link_by_its_own_name(tmp_path):
    # docs/multicore.md's example `route: [l01]` names a bidirectional link as the chip file
    # does; it stands for both its directions, l01[c0>c1] and l01[c1>c0]. On chip_links_2core
    # A's rows go from c0 to c1 over c01 by default, so pinning A to c01 changes no cycle.
    from cyclesim.chip.api import replay_chip

    text = open(f"{EX}/fused_rows_2core.yaml").read()
    assert "  - {tensor: A, via: network}" in text
    pinned = tmp_path / "pinned.yaml"
    pinned.write_text(text.replace("{tensor: A, via: network}", "{tensor: A, route: [c01]}"))
    chip = load_chip(f"{EX}/chip_links_2core.yaml")
    work = load_workload(f"{EX}/workload.yaml")
    mapping = load_chip_mapping(str(pinned), chip, work)
    assert mapping.placement("A").route == ("c01[c0>c1]", "c01[c1>c0]")
    default = replay_chip(chip, work, f"{EX}/fused_rows_2core.yaml")
    assert replay_chip(chip, work, mapping).cycles == default.cycles == 14_994


def test_the_offchip_memory_goes_by_the_name_the_chip_gives_it(tmp_path, capsys):
    """offchip.name: hbm. A tensor's default home is the off-chip memory by that name, and
    `home: hbm` names it (both used to be refused: every default home said "no route from dram
    to c0", and `home: hbm` "expected one of ['dram', ...]"). The run is the dram-named chip's,
    renamed; `dram` is no keyword, on this chip it names nothing."""
    import json

    from cyclesim.cli import main

    text = open(f"{EX}/chip_bus_2core.yaml").read()
    renamed = text.replace("name: dram", "name: hbm").replace("c1, dram]", "c1, hbm]")
    (tmp_path / "hbm.yaml").write_text(renamed)
    (tmp_path / "core.yaml").write_text(open(f"{EX}/core.yaml").read())
    mapping = open(f"{EX}/fused_rows_2core.yaml").read()
    work = f"{EX}/workload.yaml"
    runs = {}
    for name, chip, placed in [("dram", f"{EX}/chip_bus_2core.yaml", ""),
                               ("hbm", tmp_path / "hbm.yaml", ""),
                               ("hbm, named", tmp_path / "hbm.yaml", "  - {tensor: I, home: hbm}\n")]:  # fmt: skip
        (tmp_path / "m.yaml").write_text(mapping.replace("tensors:\n", "tensors:\n" + placed))
        assert main(["chip", str(chip), work, str(tmp_path / "m.yaml"), "--json"]) == 0, name
        runs[name] = json.loads(capsys.readouterr().out)
    dram = json.dumps(runs["dram"]["cores"])
    assert json.dumps(runs["hbm"]["cores"]).replace("hbm", "dram") == dram
    assert json.dumps(runs["hbm, named"]["cores"]).replace("hbm", "dram") == dram
    (tmp_path / "m.yaml").write_text(mapping.replace("tensors:\n", "tensors:\n  - {tensor: I, home: dram}\n"))  # fmt: skip
    assert main(["chip", str(tmp_path / "hbm.yaml"), work, str(tmp_path / "m.yaml")]) == 2
    assert "expected one of ['hbm', 'local', 'c0', 'c1']" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["", "hbm.x", "a b", "c[0]", "0dram"])
@pytest.mark.parametrize("where", ["offchip", "core"])
def test_names_that_other_names_are_built_from_are_refused(name, where):
    """A core's or the off-chip memory's name starts port keys ('dram.rw'), link directions
    ('l[c0>c1]') and waveform scopes: an empty one, or one with a dot, space or bracket, is
    refused at its line (an empty off-chip name replayed, its port shown as '.rw')."""
    d = chip_dict(buses=[{"name": "b", "cores": ["c0", "c1", "c2", "dram"], "width_bits": 8}])
    if where == "offchip":
        d["offchip"]["name"] = name
        d["interconnect"]["buses"][0]["cores"][3] = name
    else:
        d["cores"][1]["name"] = name
        d["interconnect"]["buses"][0]["cores"][1] = name
    with pytest.raises(SpecError, match="not a valid name") as e:
        chip_from_dict(d)
    assert e.value.field == ("offchip.name" if where == "offchip" else "cores[1].name")
    assert "letters, digits" in str(e.value)
