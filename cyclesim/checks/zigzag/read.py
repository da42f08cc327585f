"""Read ZigZag 3.x input files into `inputs` dataclasses: `load_zigzag_inputs` is the one entry point."""

from __future__ import annotations

from cyclesim.checks.zigzag.inputs import (
    DataDirection,
    TemporalMapping,
    ZigZagAccelerator,
    ZigZagInputs,
    ZigZagLayer,
    ZigZagMapping,
)
from cyclesim.checks.zigzag.read_accelerator import parse_accelerator
from cyclesim.checks.zigzag.read_mapping import parse_mapping_entry, parse_temporal_levels
from cyclesim.checks.zigzag.read_onnx import workload_yaml
from cyclesim.checks.zigzag.read_workload import layer_names, layers_found, parse_layer
from cyclesim.checks.zigzag.reader import Reader
from cyclesim.errors import SpecError
from cyclesim.spec.yamlio import is_onnx


def load_zigzag_inputs(
    accelerator: str,
    workload: str,
    mapping: str,
    temporal_mapping: str | None = None,
    *,
    layer_name: str | None = None,
) -> ZigZagInputs:
    """Read and cross-validate ZigZag input files. Raise SpecError naming file and field on any fault."""
    acc = parse_accelerator(accelerator)
    yaml_path = workload_file(workload, mapping)
    if yaml_path != workload and layer_name is not None:
        names = layer_names(Reader(yaml_path))
        if layer_name not in names:  # name the ONNX model, not the YAML written from it
            hint, listing = layers_found(names, layer_name)
            raise SpecError(
                f"--layer: no layer named {layer_name!r}{hint}", file=workload, found=listing
            )
    layer = parse_workload(yaml_path, layer_name)
    mapping_entry = parse_mapping(mapping, layer, acc)
    check_allocations(acc, layer, mapping_entry)
    tm = None
    if temporal_mapping is not None:
        tm = parse_temporal_mapping(temporal_mapping, acc, layer, mapping_entry)
    return ZigZagInputs(acc, layer, mapping_entry, tm)


def workload_file(workload: str, mapping: str) -> str:
    """The workload as a ZigZag YAML: itself, or an ONNX model read by ZigZag's ONNX parser."""
    return workload_yaml(workload, mapping) if is_onnx(workload) else workload


def workload_layers(workload: str, mapping: str) -> list[str]:
    """The names of every layer of a workload (YAML or ONNX), in ZigZag's order."""
    return layer_names(Reader(workload_file(workload, mapping)))


def parse_workload(path: str, layer_name: str | None = None) -> ZigZagLayer:
    """Read one layer of a ZigZag 3.x workload YAML (the only one, or the one named)."""
    return parse_layer(Reader(path), layer_name)


def parse_mapping(path: str, layer: ZigZagLayer, acc: ZigZagAccelerator) -> ZigZagMapping:
    """Read the mapping entry of a layer (by name, else operator type, else 'default')."""
    return parse_mapping_entry(Reader(path), layer, acc)


def parse_temporal_mapping(
    path: str, acc: ZigZagAccelerator, layer: ZigZagLayer, mapping: ZigZagMapping
) -> TemporalMapping:
    """Read a fixed temporal mapping (tm_*_setting JSON or YAML) and check it against the layer."""
    return parse_temporal_levels(Reader(path), acc, layer, mapping)


def check_allocations(acc: ZigZagAccelerator, layer: ZigZagLayer, mapping: ZigZagMapping) -> None:
    """Every level of a linked operand needs ports for the transfers ZigZag always times."""
    for layer_op, mem_op in mapping.memory_operand_links:
        levels = acc.levels(mem_op)
        if not levels:
            raise SpecError(
                f"no memory holds memory operand {mem_op.value} (linked to {layer_op})",
                file=acc.file,
                field="memories",
            )
        is_output = layer_op == layer.output_operand
        for level, memory in enumerate(levels):
            needed = (
                [DataDirection.WRITTEN_FROM_BELOW, DataDirection.READ_TO_ABOVE]
                if is_output
                else [DataDirection.READ_TO_BELOW, DataDirection.WRITTEN_FROM_ABOVE]
            )
            if level == len(levels) - 1:
                needed = needed[:1]  # nothing moves beyond the top level
            for direction in needed:
                if memory.port_for(mem_op, direction) is None:
                    raise SpecError(
                        f"no port of memory '{memory.name}' serves '{mem_op.value}, {direction.code}' ({direction.words})",
                        file=acc.file,
                        field=f"memories.{memory.name}.ports",
                        expected=f"an allocation '{mem_op.value}, {direction.code}' on one port",
                    )
