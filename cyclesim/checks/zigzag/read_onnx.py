"""Read an ONNX network with ZigZag's own ONNX parser and write its layers as a ZigZag workload YAML.

ZigZag turns Conv/Gemm/MatMul nodes into layers (equation, loop sizes, relations, padding,
precisions) and every other node into a dummy; the YAML form keeps exactly those fields, so the
rest of the adapter reads ONNX and YAML workloads the same way. zigzag-dse (and its `onnx`
dependency) is imported lazily: without it an ONNX workload is refused with the reason.
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path
from typing import Any

import yaml

from cyclesim.errors import PeerUnavailable, SpecError


def onnx_layers(onnx_path: str, mapping_path: str) -> list[dict[str, Any]]:
    """The network's layers in ZigZag's workload-YAML form, in ZigZag's order and with its names.

    Raise PeerUnavailable without zigzag-dse, SpecError if ZigZag cannot read the file.
    """
    import logging

    try:
        from zigzag.parser.onnx.onnx_model_parser import ONNXModelParser
    except ImportError as exc:
        raise PeerUnavailable(
            f"reading an ONNX workload needs zigzag-dse's ONNX parser: {exc}"
        ) from None
    if not Path(onnx_path).is_file():
        raise SpecError("no such file", file=onnx_path, expected="an ONNX model")
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        workload = ONNXModelParser(onnx_path, mapping_path).run()
    except Exception as exc:  # ZigZag and onnx signal bad files with many exception types
        raise SpecError(
            f"ZigZag's ONNX parser cannot read it: {type(exc).__name__}: {exc}",
            file=onnx_path,
            expected="an ONNX model with Conv/Gemm/MatMul layers",
        ) from None
    finally:
        logging.disable(previous)
    return [_layer_entry(node) for node in workload.topological_sort() if hasattr(node, "equation")]


def _layer_entry(node: Any) -> dict[str, Any]:
    """One ZigZag LayerNode as a workload-YAML entry (the fields WorkloadValidator accepts)."""
    sizes = node.layer_dim_sizes
    entry: dict[str, Any] = {
        "id": int(node.id),
        "name": str(node.name),
        "operator_type": str(node.type),
        "equation": str(node.equation).replace(" = ", "+=", 1),
        "dimension_relations": [str(rel).replace(" ", "") for rel in node.dimension_relations],
        "loop_dims": [str(dim) for dim in sizes.layer_dims],
        "loop_sizes": [int(sizes[dim]) for dim in sizes.layer_dims],
        "operand_precision": {
            str(op): int(bits) for op, bits in node.operand_precision.data.items()
        },
        "operand_source": {str(op): int(src) for op, src in node.input_operand_source.items()},
    }
    pr_dims = [str(dim) for dim in node.pr_loop]
    if pr_dims:
        entry["pr_loop_dims"] = pr_dims
        entry["pr_loop_sizes"] = [int(node.pr_layer_dim_sizes[dim]) for dim in node.pr_loop]
        entry["padding"] = [[int(p) for p in node.padding[dim]] for dim in node.pr_loop]
    return entry


def workload_yaml(onnx_path: str, mapping_path: str, folder: str | None = None) -> str:
    """Write the ONNX network's layers as a ZigZag workload YAML and return its path.

    The file is named after a hash of both inputs, so repeated checks (and worker processes)
    reuse it.
    """
    digest = hashlib.sha256()
    for path in (onnx_path, mapping_path):
        digest.update(Path(path).read_bytes() if Path(path).is_file() else path.encode())
    out = Path(folder or tempfile.gettempdir()) / f"cyclesim-zigzag-{digest.hexdigest()[:16]}.yaml"
    if not out.is_file():
        layers = onnx_layers(onnx_path, mapping_path)
        header = f"# ZigZag workload read from {onnx_path} by ZigZag's ONNX parser\n"
        partial = out.with_suffix(f".{id(layers)}.part")
        partial.write_text(header + yaml.safe_dump(layers, sort_keys=False))
        partial.replace(out)
    return str(out)
