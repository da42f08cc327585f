"""Convert an AccelForge spec into cyclesim's Architecture, Workload and Mapping, and back.

AccelForge leaves things a cycle replay must know unbounded (sizes, throughputs); where it does,
an explicit choice is made and written into `notes`. What cannot be converted is refused by name.

Over 400 lines: both directions of the conversion (an AccelForge spec into cyclesim's inputs,
and a loop tree back) in one module: each is the other's inverse and they share the choices
written into notes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from cyclesim.checks.accelforge.spec import (
    ENERGY_UNIT,
    AfContainer,
    AfLoopNode,
    AfMappingNode,
    AfMemory,
    AfSpec,
    AfSplitNode,
    AfStorageNode,
    LoopKind,
    SplitKind,
)
from cyclesim.errors import SpecError
from cyclesim.spec import (
    Architecture,
    Compute,
    Mapping,
    Sequential,
    Spatial,
    Storage,
    Temporal,
    Workload,
    architecture_from_dict,
    mapping_from_dict,
    workload_from_dict,
)

COMPUTE_COMPONENT = "MAC"
CONTAINER_COMPONENT = "PE"


@dataclass(frozen=True, slots=True)
class ImportedSpec:
    """cyclesim's three inputs built from an AccelForge spec, with the choices that were made."""

    architecture: Architecture
    workload: Workload
    mapping: Mapping
    notes: tuple[str, ...]


def import_accelforge(spec: AfSpec) -> ImportedSpec:
    """Build cyclesim inputs from an AfSpec. Raise SpecError naming what cannot be converted."""
    source = spec.files[0]
    notes: list[str] = []
    workload = workload_from_dict(_workload_dict(spec), name=source)
    architecture = architecture_from_dict(_arch_dict(spec, notes), name=source)
    mapping = mapping_from_dict(
        {"name": Path(source).stem, "loop_tree": _tree(spec.mapping, _iterations(spec), source)},
        architecture,
        workload,
        name=source,
    )
    return ImportedSpec(architecture, workload, mapping, tuple(notes))


def _refuse(spec: AfSpec, message: str) -> SpecError:
    return SpecError(message + " (cannot be converted to cyclesim's inputs)", file=spec.files[0])


def _workload_dict(spec: AfSpec) -> dict:
    tensors: dict[str, dict] = {}
    einsums = []
    for einsum in spec.workload.einsums:
        if len(einsum.output_tensor_names) != 1:
            raise _refuse(
                spec, f"Einsum '{einsum.name}' has {len(einsum.output_tensor_names)} outputs"
            )
        accesses = {"inputs": [], "outputs": []}
        for access in einsum.tensor_accesses:
            projection = []
            for rank in access.ranks:
                if rank.constant:
                    raise _refuse(
                        spec,
                        f"projection '{rank.expression}' of {access.tensor} has a constant term",
                    )
                projection.append(
                    " + ".join(
                        f"{t.coefficient}*{t.rank_variable}"
                        if t.coefficient != 1
                        else t.rank_variable
                        for t in rank.terms
                    )
                )
            accesses["outputs" if access.is_output else "inputs"].append(
                {"tensor": access.tensor, "projection": projection}
            )
            tensors.setdefault(access.tensor, {"bits_per_value": access.bits_per_value})
        einsums.append(
            {
                "name": einsum.name,
                "ranks": dict(einsum.rank_variable_sizes),
                **accesses,
                "is_copy": einsum.is_copy_operation,
            }
        )
    return {"name": Path(spec.files[0]).stem, "tensors": tensors, "einsums": einsums}


def _widest_tensor_bits(spec: AfSpec) -> int:
    return max(
        math.prod(
            size for name, size in einsum.rank_variable_sizes if name in access.rank_variables
        )
        * access.bits_per_value
        for einsum in spec.workload.einsums
        for access in einsum.tensor_accesses
    )


def _arch_dict(spec: AfSpec, notes: list[str]) -> dict:
    """The cyclesim architecture, as a dictionary, of an AccelForge spec; notes on what it
    approximates are appended to `notes`.

    Over 80 lines: one field of the architecture after another, each with the note or refusal
    that names AccelForge's field when cyclesim cannot express it.
    """
    containers = _pe_array(spec, notes)
    dims = {d.name: d.fanout for d in containers[0].dimensions} if containers else {"pe": 1}
    container_index = spec.arch.index(containers[0].name) if containers else len(spec.arch.nodes)
    wide = _widest_tensor_bits(spec)
    memories = []
    for memory in spec.arch.memories:
        widths = {}
        for action in memory.actions:
            bits = action.throughput_actions_per_cycle * action.bits_per_action
            if math.isinf(bits):
                notes.append(
                    f"{memory.name} {action.name}: unbounded throughput in AccelForge; the replay uses "
                    f"{wide} bits/cycle (the largest tensor moves in one cycle)"
                )
                bits = wide
            if spec.arch.clock_hz is not None and bits != int(bits) and bits > 1:
                notes.append(
                    f"{memory.name} {action.name}: {bits:.6g} bits/cycle in AccelForge (its "
                    f"throughput per second at a {spec.arch.clock_hz:.6g} Hz clock, the compute's "
                    f"rate); the replay's port moves {math.floor(bits)} whole bits a cycle"
                )
                bits = math.floor(bits)
            if bits != int(bits) or bits < 1:
                raise _refuse(
                    spec,
                    f"{memory.name} {action.name} moves {bits} bits per cycle, not a whole number",
                )
            widths[action.name] = int(bits)
        if widths["read"] == widths["write"] and not memory.separate_ports:
            ports = [{"name": "port", "kind": "read_write", "width_bits": widths["read"]}]
        else:
            ports = [
                {"name": "read", "kind": "read", "width_bits": widths["read"]},
                {"name": "write", "kind": "write", "width_bits": widths["write"]},
            ]
            notes.append(
                f"{memory.name}: separate read and write ports"
                + (
                    " (its total_latency takes the max over actions)"
                    if memory.separate_ports
                    else " (AccelForge adds their latencies)"
                )
            )
        if math.isinf(memory.size_bits):
            notes.append(
                f"{memory.name}: unbounded size; double-buffered, so its fills overlap the use of "
                "the previous tile as AccelForge assumes (no landing zones to account for)"
            )
        below_array = spec.arch.index(memory.name) > container_index
        entry = {
            "name": memory.name,
            "size_bits": None if math.isinf(memory.size_bits) else int(memory.size_bits),
            "shared_across": [] if below_array else list(dims),
            "ports": ports,
            "double_buffered": math.isinf(memory.size_bits),
        }
        energy = _memory_energy(memory, notes)
        if energy is not None:
            entry["energy"] = energy
        memories.append(entry)
    throughput = spec.arch.compute.throughput_computes_per_cycle
    if math.isinf(throughput):
        notes.append(
            "MAC: unbounded throughput in AccelForge; the replay uses 1 MAC per PE per cycle"
        )
        throughput = 1
    if throughput != int(throughput) or throughput < 1:
        raise _refuse(
            spec, f"compute throughput {throughput} is not a whole number of MACs per cycle"
        )
    pe_array = {"dims": dims, "macs_per_pe_per_cycle": int(throughput)}
    mac_energy = spec.arch.compute.energy_per_compute
    if math.isnan(mac_energy):
        notes.append(
            f"{spec.arch.compute.name}: no compute energy given; the replay has no MAC energy"
        )
    else:
        pe_array["energy"] = {"mac": mac_energy}
    no_multicast = _no_multicast(spec, containers[0]) if containers else {}
    if no_multicast:
        pe_array["no_multicast"] = no_multicast
    return {
        "name": f"accelforge:{Path(spec.files[0]).stem}",
        "energy_unit": ENERGY_UNIT,
        "pe_array": pe_array,
        "memories": memories,
    }


def _pe_array(spec: AfSpec, notes: list[str]) -> list[AfContainer]:
    """The one fan-out the replay models as its PE array: the one the mapping's !Spatial loops
    use (else the innermost). A fan-out no loop uses has one instance at work, as AccelForge
    counts it, so it is left out; two fan-outs in use are refused, naming the second."""
    containers = [node for node in spec.arch.nodes if isinstance(node, AfContainer)]
    if len(containers) <= 1:
        return containers
    used: list[AfContainer] = []
    for path in spec.einsum_paths:
        for node in path.nodes:
            if isinstance(node, AfLoopNode) and node.kind is LoopKind.SPATIAL:
                container = spec.arch.spatial_container(str(node.component))
                if container is not None and container not in used:
                    used.append(container)
    if len(used) > 1:
        second = used[1]
        raise SpecError(
            f"the mapping spreads work over two fan-outs ({used[0].name} and {second.name}); "
            "cyclesim has one PE array (cannot be converted to cyclesim's inputs)",
            file=spec.files[0],
            field=f"arch.nodes({second.name}).spatial",
            line=second.line,
        )
    chosen = used[0] if used else containers[-1]
    for container in containers:
        if container is not chosen:
            notes.append(
                f"{container.name}: a fan-out no !Spatial loop uses; one instance at work, as "
                "AccelForge counts it"
            )
    return [chosen]


def _memory_energy(memory: AfMemory, notes: list[str]) -> dict | None:
    """AccelForge's per-action energies of a memory in cyclesim's `energy:` fields.

    AccelForge has no update action: a write from below costs a write (update is left to its
    default). When read and write move different bits per action, energies become per bit.
    """
    read, write = memory.action("read"), memory.action("write")
    if math.isnan(read.energy_per_action) or math.isnan(write.energy_per_action):
        notes.append(f"{memory.name}: no read/write energy given; the replay has no energy for it")
        return None
    if read.bits_per_action == write.bits_per_action:
        return {
            "bits_per_action": read.bits_per_action,
            "read": read.energy_per_action,
            "write": write.energy_per_action,
        }
    return {
        "bits_per_action": 1,
        "read": read.energy_per_action / read.bits_per_action,
        "write": write.energy_per_action / write.bits_per_action,
    }


def _no_multicast(spec: AfSpec, container: AfContainer) -> dict[str, list[str]]:
    """AccelForge's `may_reuse` per fan-out dimension, as the tensors each position moves alone."""
    from cyclesim.checks.accelforge.read_workload import tensor_set_names
    from cyclesim.checks.accelforge.read_yaml import evaluate_tensor_set

    out: dict[str, list[str]] = {}
    for dim in container.dimensions:
        if dim.may_reuse_expression in ("All", None):
            continue
        excluded: list[str] = []
        for einsum in spec.workload.einsums:
            reuse = evaluate_tensor_set(
                dim.may_reuse_expression,
                tensor_set_names(spec.workload, einsum),
                frozenset(einsum.tensor_names),
                file=spec.files[0],
                field=f"arch.nodes({container.name}).spatial.may_reuse",
                line=container.line,
            )
            excluded += [t for t in einsum.tensor_names if t not in reuse and t not in excluded]
        if excluded:
            out[dim.name] = excluded
    return out


def _iterations(spec: AfSpec) -> dict[int, int]:
    """Loop object id -> iteration count; a loop shared by Einsums must agree across them."""
    counts: dict[int, int] = {}
    for path in spec.einsum_paths:
        loops = [node for node in path.nodes if isinstance(node, AfLoopNode)]
        for loop, count in zip(loops, path.loop_iterations, strict=True):
            if counts.setdefault(id(loop), count) != count:
                raise SpecError(
                    f"the loop over '{loop.rank_variable}' above a split runs {counts[id(loop)]} times for one "
                    f"Einsum and {count} for another",
                    file=spec.files[0],
                    line=loop.line,
                )
    return counts


def _tree(nodes: tuple[AfMappingNode, ...], counts: dict[int, int], source: str) -> list[dict]:
    tree: list[dict] = []
    for node in nodes:
        if isinstance(node, AfStorageNode):
            tree.append(
                {"type": "storage", "memory": node.component, "tensors": list(node.tensors)}
            )
        elif isinstance(node, AfLoopNode) and node.kind is LoopKind.TEMPORAL:
            tree.append(
                {"type": "temporal", "rank": node.rank_variable, "bound": counts.get(id(node), 1)}
            )
        elif isinstance(node, AfLoopNode):
            tree.append(
                {
                    "type": "spatial",
                    "rank": node.rank_variable,
                    "bound": counts.get(id(node), 1),
                    "dim": node.dimension,
                }
            )
        elif isinstance(node, AfSplitNode):
            if node.kind is SplitKind.PIPELINE:
                raise SpecError(
                    "!Pipeline splits are not supported by the replay; use !Sequential",
                    file=source,
                    line=node.line,
                )
            tree.append(
                {
                    "type": "sequential",
                    "branches": [_tree(branch, counts, source) for branch in node.branches],
                }
            )
        else:
            tree.append({"type": "compute", "einsum": node.einsum})
    return tree


def export_looptree(mapping: Mapping, workload: Workload) -> str:
    """Write cyclesim's mapping as AccelForge LoopTree YAML (`mapping: nodes: ...`).

    Bounds become tile shapes (enclosing extent / bound); spatial loops use Container `PE` and
    the compute node `MAC`. Raise SpecError if a bound does not divide its rank's extent.
    """
    lines = ["mapping:", "  nodes:"]
    _emit(mapping.loop_tree, workload, {}, 2, lines, mapping)
    return "\n".join(lines) + "\n"


def _einsums_below(nodes: tuple) -> list[str]:
    found = []
    for node in nodes:
        if isinstance(node, Compute):
            found.append(node.einsum)
        elif isinstance(node, Sequential):
            for branch in node.branches:
                found += _einsums_below(branch)
    return found


def _emit(
    nodes: tuple,
    workload: Workload,
    extents: dict[str, int],
    depth: int,
    lines: list[str],
    mapping: Mapping,
) -> None:
    pad = "  " * depth
    extents = dict(extents)
    below = _einsums_below(nodes)
    for node in nodes:
        if isinstance(node, Storage):
            lines.append(
                f"{pad}- !Storage {{tensors: [{', '.join(node.tensors)}], component: {node.memory}}}"
            )
        elif isinstance(node, Temporal | Spatial):
            if node.rank not in extents:
                extents[node.rank] = next(
                    workload.einsum(e).rank_sizes[node.rank]
                    for e in below
                    if node.rank in workload.einsum(e).rank_sizes
                )
            extent = extents[node.rank]
            if extent % node.bound:
                raise mapping.error(
                    f"bound {node.bound} does not divide the extent {extent} of rank '{node.rank}'",
                    node.path,
                )
            extents[node.rank] = extent // node.bound
            shape = f"rank_variable: {node.rank}, tile_shape: {extents[node.rank]}"
            if isinstance(node, Spatial):
                lines.append(
                    f"{pad}- !Spatial {{{shape}, name: {node.dim}, component: {CONTAINER_COMPONENT}}}"
                )
            else:
                lines.append(f"{pad}- !Temporal {{{shape}}}")
        elif isinstance(node, Compute):
            lines.append(
                f"{pad}- !Compute {{einsum: {node.einsum}, component: {COMPUTE_COMPONENT}}}"
            )
        else:
            lines.append(f"{pad}- !Sequential")
            lines.append(f"{pad}  nodes:")
            for branch in node.branches:
                lines.append(f"{pad}  - !Nested")
                lines.append(f"{pad}    nodes:")
                _emit(branch, workload, extents, depth + 2, lines, mapping)
