"""Read AccelForge spec files (arch + workload + LoopTree mapping) into `spec` objects.

Files are merged as `accelforge.Spec.from_yaml(*files)` merges them (the first file holding a
top-level key wins) and rendered with Jinja when they are templates. Set expressions (`keep`,
`may_keep`, `back`, `bits_per_value` keys) are evaluated per Einsum.
"""

from __future__ import annotations

from collections.abc import Mapping as MappingABC
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cyclesim.checks.accelforge.looptree import read_mapping
from cyclesim.checks.accelforge.read_arch import read_arch
from cyclesim.checks.accelforge.read_costs import CostLookup, CostProvider
from cyclesim.checks.accelforge.read_fields import Where, key_lines_of
from cyclesim.checks.accelforge.read_sizes import resolve_sizes
from cyclesim.checks.accelforge.read_workload import read_workload, tensor_set_names
from cyclesim.checks.accelforge.read_yaml import (
    evaluate_tensor_set,
    load_yaml_file,
    merge_top_level,
)
from cyclesim.checks.accelforge.spec import (
    AfArch,
    AfSpec,
    AfStorageNode,
    AfTensorPlacement,
    AfWorkload,
)

_TOP_LEVEL_KEYS = ("arch", "workload", "mapping", "variables")
_TOP_LEVEL_IGNORED = ("mapper", "config", "model")  # mapper knobs: no effect on a fixed mapping


def load_accelforge_spec(
    files: Sequence[str | Path],
    jinja_data: MappingABC[str, Any] | None = None,
    component_costs: CostProvider | None = None,
) -> AfSpec:
    """Read, merge and validate AccelForge spec files into an AfSpec.

    `component_costs` is called (once, only if needed) for the per-action energies and
    throughputs the spec leaves to its components' hwcomponents models. Raise SpecError (file,
    field, line, found, expected) for every fault, including features this reader does not
    support, which are named.
    """
    if not files:
        raise Where(None, "", None).error("no spec file given", expected="one or more YAML files")
    documents = [(str(f), load_yaml_file(f, jinja_data or {})) for f in files]
    merged, key_to_file = merge_top_level(documents)
    key_lines = {file: document.key_lines or {} for file, document in documents}

    def section(key: str) -> Where:
        """The place of a top-level section: its file, its key's line, its fields' lines."""
        file = key_to_file[key]
        return Where(file, key, key_lines[file].get(key), key_lines_of(merged[key]))

    for key in merged:
        if key not in _TOP_LEVEL_KEYS + _TOP_LEVEL_IGNORED:
            where = section(key)
            if key == "renames":
                raise where.error("top-level renames are not supported; use per-Einsum renames")
            raise where.error(
                f"unknown top-level key '{key}' (accelforge's Spec.from_yaml refuses it too; "
                "files with YAML-anchor keys such as AccelForge's compute-in-memory examples are "
                "loaded by a Python helper, _load_spec.py, which cyclesim does not run)",
                expected="arch, workload, mapping, variables (mapper, config, model are ignored)",
            )
    for key in ("arch", "workload", "mapping"):
        if key not in merged:
            raise Where(", ".join(str(f) for f in files), key, None).error(
                f"no '{key}:' section in the spec files", expected="arch:, workload: and mapping:"
            )
    variables = dict(merged.get("variables") or {})
    workload = read_workload(merged["workload"], section("workload"), variables)
    arch = read_arch(
        merged["arch"], section("arch"), variables, CostLookup(component_costs), workload
    )
    arch = resolve_sizes(arch, workload, variables, key_to_file["arch"])
    mapping, paths = read_mapping(merged["mapping"], section("mapping"), arch, workload)
    placements = _evaluate_placements(arch, workload, paths, key_to_file["arch"])
    return AfSpec(
        files=tuple(str(f) for f in files),
        arch=arch,
        workload=workload,
        mapping=mapping,
        einsum_paths=paths,
        placements=placements,
    )


def _evaluate_placements(
    arch: AfArch, workload: AfWorkload, paths: tuple, arch_file: str
) -> tuple[AfTensorPlacement, ...]:
    placements = []
    for path in paths:
        einsum = workload.einsum(path.einsum)
        kept_by_component = {
            memory.name: frozenset(
                t
                for node in path.nodes
                if isinstance(node, AfStorageNode) and node.component == memory.name
                for t in node.tensors
            )
            for memory in arch.memories
        }
        names = {**tensor_set_names(workload, einsum), **kept_by_component}
        universe = frozenset(einsum.tensor_names)
        for memory in arch.memories:

            def evaluate(
                expression: str, key: str, names=names, universe=universe, memory=memory
            ) -> frozenset[str]:
                return evaluate_tensor_set(
                    expression,
                    names,
                    universe,
                    file=arch_file,
                    field=f"arch.nodes({memory.name}).{key}",
                    line=memory.line_of(key),
                )

            back = evaluate(memory.back_expression, "tensors.back")
            keep = evaluate(memory.keep_expression or "Nothing", "tensors.keep") | back
            default_may_keep = "All" if memory.keep_expression is None else "Nothing"
            may_keep = evaluate(memory.may_keep_expression or default_may_keep, "tensors.may_keep")
            if memory.no_refetch_from_above_expression is not None:
                evaluate(memory.no_refetch_from_above_expression, "tensors.no_refetch_from_above")
            for tensor_set, bits in memory.bits_per_value_overrides:
                stored = evaluate(tensor_set, "bits_per_value") & kept_by_component[memory.name]
                if stored:
                    raise Where(
                        arch_file,
                        f"arch.nodes({memory.name}).bits_per_value",
                        memory.line_of("bits_per_value"),
                    ).error(
                        f"{memory.name} stores {', '.join(sorted(stored))} at its own bits per "
                        f"value ({bits}) in Einsum {einsum.name}; the replay has one width per "
                        "tensor, so a per-memory bits_per_value is not supported where the "
                        "mapping keeps those tensors",
                        found={tensor_set: bits},
                        expected="a mapping that keeps no tensor of the set in this memory",
                    )
            placements.append(
                AfTensorPlacement(
                    einsum=einsum.name, memory=memory.name, keep=keep, may_keep=may_keep, back=back
                )
            )
    return tuple(placements)
