"""Stream's inputs and solved schedule as a multi-core chip (cyclesim.chip): architecture,
workload and mapping, so `replay_chip` can run the schedule dependency-driven.

Each compute core becomes its ZigZag core imported as a single-core architecture (the ZigZag
adapter's import, tensors renamed to the ONNX names); the off-chip core its DRAM port; every
connection that wins its core pairs (last listed) a link or bus with Stream's width and no
latency (Stream has none): chip_cores.py. Each layer keeps Stream's split and per-core step; a
step's loop tree is the ZigZag mapping Stream's search chose for that tile. Tensors between
layers of one fused group go over the network, between groups through DRAM, as in Stream:
chip_layers.py. Here: the build of the three inputs from one case, and ONNX tensor shapes.
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import Any

from cyclesim.checks.stream.chip_cores import chip_dict, merged, renamed_architecture, renamed_tree
from cyclesim.checks.stream.chip_layers import (
    chip_workload,
    layer_einsum,
    layer_entry,
    mapping_dict,
    rank_cuts,
    split_ranks_in_tree,
)
from cyclesim.checks.stream.model import OnnxNode, StreamAccelerator
from cyclesim.checks.stream.pernode import zigzag_core_yaml, zigzag_names
from cyclesim.checks.stream.schedule import StreamRun
from cyclesim.checks.zigzag.cases import write_case
from cyclesim.errors import SpecError


@dataclasses.dataclass(frozen=True, slots=True)
class ChipInputs:
    """The three inputs of `replay_chip`, built from one Stream case."""

    chip: Any  # cyclesim.chip.arch.Chip
    workload: Any  # cyclesim.spec.Workload
    mapping: Any  # cyclesim.chip.mapping_types.ChipMapping
    # where ZigZag double-buffers a tile two of whose largest instances do not fit: one slot
    single_slot: tuple[str, ...] = ()


def to_chip(
    accelerator: StreamAccelerator, nodes: tuple[OnnxNode, ...], shapes: dict[str, tuple[int, ...]],
    run: StreamRun,
) -> ChipInputs:  # fmt: skip
    """Build the chip inputs; raise SpecError naming what the chip cannot take."""
    from cyclesim.checks.zigzag.read import load_zigzag_inputs
    from cyclesim.checks.zigzag.to_spec import slot_flags, to_architecture, to_mapping, to_workload
    from cyclesim.chip.arch import chip_from_dict
    from cyclesim.chip.mapping import chip_mapping_from_dict
    from cyclesim.spec.override import architecture_to_dict, mapping_to_dict

    by_name = {n.name: n for n in nodes}
    architectures: dict[int, Any] = {}
    layers, einsums, tensors = [], [], {}
    single: list[str] = []
    with tempfile.TemporaryDirectory(prefix="cyclesim-stream-chip-") as folder:
        for group in run.groups:
            for node in group.nodes:
                onnx = by_name.get(node.name)
                if onnx is None or onnx.op_type != "Conv":
                    raise SpecError(
                        f"node '{node.name}' ({onnx.op_type if onnx else 'not in the ONNX graph'}) "
                        "is not imported into the chip: only Conv layers are, so far"
                    )
                names = {"I": onnx.inputs[0], "W": onnx.inputs[1], "O": onnx.outputs[0]}
                trees = {}
                for on_core in node.cores:
                    if on_core.zigzag is None:
                        raise SpecError(
                            f"node '{node.name}' has no ZigZag cost on core {on_core.core}"
                        )
                    case = zigzag_names(on_core.zigzag)
                    core_file = accelerator.core(on_core.core).file
                    key = f"{node.name}_c{on_core.core}"
                    files = write_case(
                        folder, key, zigzag_core_yaml(core_file), [case["workload"]],
                        [case["mapping"], {**case["mapping"], "name": "default"}],
                        case["temporal_mapping"],
                    )  # fmt: skip
                    inputs = load_zigzag_inputs(
                        files.accelerator, files.workload, files.mapping, files.temporal_mapping
                    )
                    flags, _ = slot_flags(inputs)
                    flags, notes = _fitting_flags(
                        inputs, flags, f"{node.name} on core {on_core.core}"
                    )
                    single += [n for n in notes if n not in single]
                    arch = renamed_architecture(to_architecture(inputs, flags), names)
                    architectures[on_core.core] = merged(architectures.get(on_core.core), arch)
                    tile = to_workload(inputs)
                    tree = mapping_to_dict(to_mapping(inputs, to_architecture(inputs, flags), tile))
                    trees[on_core.core] = renamed_tree(tree["loop_tree"], names)
                    cuts = rank_cuts(
                        inputs, onnx, shapes, len(node.cores), group.iterations, node.name
                    )
                    _refuse_padding(inputs, node.name, cuts)
                    trees[on_core.core] = split_ranks_in_tree(trees[on_core.core], cuts)
                    einsum = layer_einsum(inputs, onnx, names, shapes, cuts)
                for core in list(trees)[1:]:
                    if trees[core] != trees[next(iter(trees))]:
                        raise SpecError(
                            f"node '{node.name}': Stream's cores run different mappings"
                        )
                einsums.append(einsum)
                for op, name in names.items():
                    bits = inputs.layer.precision(op)
                    if op == "O":
                        tensors[name] = (inputs.layer.final_output_precision_bits, bits)
                    else:
                        tensors.setdefault(name, (bits, bits))
                layers.append(layer_entry(node, group.index, einsum, cuts, trees))
        workload = chip_workload(einsums, tensors)
        chip = chip_from_dict(
            chip_dict(accelerator, architectures, architecture_to_dict), "<stream chip>"
        )
        mapping = chip_mapping_from_dict(
            mapping_dict(layers, run, workload), chip, workload, "<stream mapping>"
        )
    return ChipInputs(chip, workload, mapping, tuple(single))


def _fitting_flags(
    inputs: Any, flags: dict[tuple[str, str], bool], where: str
) -> tuple[dict[tuple[str, str], bool], list[str]]:
    """ZigZag's double-buffer flags with one slot where two of the tile's largest instances do not
    fit (a memory never holds more than its size), and a sentence per tensor given one slot.

    ZigZag infers double buffering from its average tile (an uneven spatial unrolling spreads a
    rank's iterations evenly over its steps, e.g. 32 columns as 3 x 10.67), the replay sizes a
    memory's slots at the largest tile it holds (3 x 14 with 4 left over keeps 14). The single-core
    plan's capacity check names the memory; its tensor holding the most bits loses its second slot.
    """
    import re

    from cyclesim.checks.zigzag.mapping import mapping_quantities
    from cyclesim.checks.zigzag.to_spec import to_architecture, to_mapping, to_workload
    from cyclesim.schedule.plan import build_plan

    flags = dict(flags)
    notes: list[str] = []
    averages = mapping_quantities(inputs).elements_per_instance
    while True:
        arch = to_architecture(inputs, flags)
        tile = to_workload(inputs)
        try:
            build_plan(arch, tile, to_mapping(inputs, arch, tile))
            return flags, notes
        except SpecError as exc:
            found = re.search(
                r"tiles kept in memory '([^']+)' need (\d+) bits .* has (\d+)", str(exc)
            )
            doubled = [op for (op, m), db in flags.items() if found and m == found[1] and db]
            if not doubled:
                raise
            sizes = dict(re.findall(r"(\w+): (\d+) values x 2 slot", str(exc)))
            op = max(doubled, key=lambda o: int(sizes.get(o, 0)))
            flags[(op, found[1])] = False
            levels = inputs.accelerator.levels(inputs.mapping.memory_operand(op))
            level = next(i for i, m in enumerate(levels) if m.name == found[1])
            notes.append(
                f"{where}: ZigZag double-buffers {op} in {found[1]} from its average tile "
                f"({averages[op][level + 1]:,.0f} values), but two of its largest "
                f"({int(sizes.get(op, 0)):,} values) need {int(found[2]):,} bits where {found[1]} has "
                f"{int(found[3]):,}: the replay gives {op} one slot there (refills wait for its use)"
            )


def _refuse_padding(inputs: Any, node: str, cuts: dict) -> None:
    """A rank ZigZag unrolls unevenly is padded to whole spatial steps (as the ZigZag import
    does); the chip takes it only where Stream does not cut it over cores or steps."""
    layer, mapping = inputs.layer, inputs.mapping
    for dim in layer.loop_dims:
        if mapping.padded_size(layer, dim) != layer.loop_size(dim) and dim in cuts:
            raise SpecError(
                f"node '{node}': the ZigZag mapping Stream chose unrolls {dim} unevenly "
                f"({layer.loop_size(dim)} iterations padded to {mapping.padded_size(layer, dim)}) "
                "and Stream cuts that rank over cores or steps: the padded parts would not line up"
            )


def onnx_shapes(path: str | Path) -> dict[str, tuple[int, ...]]:
    """Every tensor's shape in an ONNX model (inputs, outputs, initializers, inferred values)."""
    import onnx

    model = onnx.shape_inference.infer_shapes(onnx.load(str(path), load_external_data=False))
    shapes: dict[str, tuple[int, ...]] = {}
    for init in model.graph.initializer:
        shapes[init.name] = tuple(int(d) for d in init.dims)
    for value in (*model.graph.input, *model.graph.output, *model.graph.value_info):
        dims = value.type.tensor_type.shape.dim
        shapes[value.name] = tuple(int(d.dim_value) for d in dims)
    return shapes
