"""AccelForge's counting rules (accelforge 1.0.467), reimplemented over `spec` objects.

Independent of the replay: used to cross-check the replay's closed form and the real accelforge.
Each Einsum is evaluated alone on its partial mapping (reference §3.3, §4):

* a storage node is refilled on every iteration of every loop above it (fills = tile x P);
* an output's first read of each element is skipped; every exit writes the tile back;
* a spatial loop that does not index a tensor multicasts (inputs) or reduces for free
  (outputs) the parent-side accesses of the tensor's outermost node below it;
* a copy Einsum books its moves under its source tensor and performs no computes;
* latency = max over components of (per-unit actions / throughput), summed over Einsums.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from cyclesim.checks.accelforge.read_fields import Where
from cyclesim.checks.accelforge.read_workload import tensor_set_names
from cyclesim.checks.accelforge.read_yaml import evaluate_tensor_set
from cyclesim.checks.accelforge.spec import (
    AfArch,
    AfComputeNode,
    AfEinsum,
    AfEinsumPath,
    AfLoopNode,
    AfSpec,
    AfStorageNode,
    LoopKind,
)

ACCESS_COLUMNS = ["einsum", "memory", "tensor", "action", "bits", "actions", "energy"]
COMPUTE_ACTION = "compute"


@dataclass(frozen=True, slots=True)
class AfModelResult:
    """AccelForge-convention counts and latency bound of one spec, as long tables."""

    accesses: (
        pd.DataFrame
    )  # einsum, memory, tensor, action (read/write/compute), bits, actions, energy
    component_latency: pd.DataFrame  # einsum, component, latency_cycles
    einsum_latency_cycles: tuple[tuple[str, float], ...]
    total_latency_cycles: float
    dynamic_energy: float


@dataclass(frozen=True, slots=True)
class _Item:
    """One node of a per-tensor partial mapping: a loop, a holder (memory) or the compute."""

    loop: AfLoopNode | None
    iterations: int
    memory: str | None
    is_compute: bool
    original_index: int


def evaluate_model(spec: AfSpec) -> AfModelResult:
    """Counts (bits and actions), per-component latency and dynamic energy, per Einsum."""
    check_capacity(spec)
    rows: list[dict] = []
    latency_rows: list[dict] = []
    einsum_latency = []
    energy = 0.0
    for path in spec.einsum_paths:
        einsum = spec.workload.einsum(path.einsum)
        per_unit_actions: dict[tuple[str, str], float] = {}
        for tensor in _analysed_tensors(einsum):
            items = _tensor_items(path, tensor, einsum, spec.arch)
            for memory, action, values, per_unit in _count_tensor(items, tensor, einsum, spec):
                node = spec.arch.node(memory)
                bits = values * einsum.access(tensor).bits_per_value
                bits_per_action = node.action(action).bits_per_action
                row_energy = bits / bits_per_action * node.action(action).energy_per_action
                rows.append(
                    dict(
                        einsum=einsum.name,
                        memory=memory,
                        tensor=tensor,
                        action=action,
                        bits=bits,
                        actions=bits / bits_per_action,
                        energy=row_energy,
                    )
                )
                per_unit_actions[memory, action] = per_unit_actions.get((memory, action), 0) + (
                    per_unit * einsum.access(tensor).bits_per_value / bits_per_action
                )
                energy += row_energy
        compute = spec.arch.compute
        macs = 0 if einsum.is_copy_operation else math.prod(path.loop_iterations)
        rows.append(
            dict(
                einsum=einsum.name,
                memory=compute.name,
                tensor="",
                action=COMPUTE_ACTION,
                bits=0,
                actions=macs,
                energy=macs * compute.energy_per_compute,
            )
        )
        energy += macs * compute.energy_per_compute
        latencies = {}
        for memory in spec.arch.memories:
            combine = max if memory.separate_ports else sum  # its total_latency expression
            latencies[memory.name] = combine(
                _divide(
                    per_unit_actions.get((memory.name, a.name), 0), a.throughput_actions_per_cycle
                )
                for a in memory.actions
            )
        temporal_steps = (
            0
            if einsum.is_copy_operation
            else math.prod(
                n
                for node, n in zip(_loops(path), path.loop_iterations, strict=True)
                if node.kind is LoopKind.TEMPORAL
            )
        )
        latencies[compute.name] = _divide(temporal_steps, compute.throughput_computes_per_cycle)
        for component, cycles in latencies.items():
            latency_rows.append(
                dict(einsum=einsum.name, component=component, latency_cycles=cycles)
            )
        einsum_latency.append((einsum.name, max(latencies.values(), default=0)))
    accesses = pd.DataFrame(rows, columns=ACCESS_COLUMNS)
    return AfModelResult(
        accesses=accesses,
        component_latency=pd.DataFrame(
            latency_rows, columns=["einsum", "component", "latency_cycles"]
        ),
        einsum_latency_cycles=tuple(einsum_latency),
        total_latency_cycles=sum(cycles for _, cycles in einsum_latency),
        dynamic_energy=energy,
    )


def _divide(actions: float, throughput: float) -> float:
    return 0 if actions == 0 or math.isinf(throughput) else actions / throughput


def _loops(path: AfEinsumPath) -> list[AfLoopNode]:
    return [node for node in path.nodes if isinstance(node, AfLoopNode)]


def _analysed_tensors(einsum: AfEinsum) -> tuple[str, ...]:
    """A copy Einsum is analysed under its source tensor only (AccelForge's convert_to_copy)."""
    return (einsum.copy_source,) if einsum.is_copy_operation else einsum.tensor_names


def _tensor_items(path: AfEinsumPath, tensor: str, einsum: AfEinsum, arch: AfArch) -> list[_Item]:
    """The per-tensor partial mapping, ordered as AccelForge's _get_single_tensor_mapping does.

    Spatial loops sit just above the first holder (or the compute) at or below their container
    in the arch; each run of consecutive loops keeps its original order. In a copy Einsum every
    holder is renamed to the source tensor and holders of the same memory are merged.
    """
    iterations = dict(zip(map(id, _loops(path)), path.loop_iterations, strict=True))
    spatials: list[_Item] = []
    others: list[_Item] = []
    seen_memories: set[str] = set()
    for index, node in enumerate(path.nodes):
        if isinstance(node, AfLoopNode):
            item = _Item(node, iterations[id(node)], None, False, index)
            (spatials if node.kind is LoopKind.SPATIAL else others).append(item)
        elif isinstance(node, AfStorageNode):
            holds = bool(node.tensors) if einsum.is_copy_operation else tensor in node.tensors
            if holds and node.component not in seen_memories:
                seen_memories.add(node.component)
                others.append(_Item(None, 1, node.component, False, index))
        elif isinstance(node, AfComputeNode):
            others.append(_Item(None, 1, node.component, True, index))
    ordered: list[_Item] = []
    for item in others:
        if item.memory is not None:
            position = arch.index(item.memory)
            above = [s for s in spatials if arch.index(s.loop.component) <= position]
            spatials = [s for s in spatials if s not in above]
            ordered.extend(above)
        ordered.append(item)
    ordered.extend(spatials)
    result: list[_Item] = []
    run: list[_Item] = []
    for item in ordered + [None]:
        if item is not None and item.loop is not None:
            run.append(item)
            continue
        result.extend(sorted(run, key=lambda i: i.original_index))
        run = []
        if item is not None:
            result.append(item)
    return result


def may_reuse(spec: AfSpec, einsum: AfEinsum, loop: AfLoopNode, tensor: str) -> bool:
    """True if the fan-out dimension of spatial `loop` may multicast / reduce `tensor` (may_reuse)."""
    dimension = spec.arch.node(loop.component).dimension(loop.dimension)
    names = tensor_set_names(spec.workload, einsum)
    reuse = evaluate_tensor_set(
        dimension.may_reuse_expression,
        names,
        frozenset(einsum.tensor_names),
        file=spec.files[0],
        field=f"arch.nodes({loop.component}).spatial.may_reuse",
        line=None,
    )
    return tensor in reuse


def _count_tensor(items: list[_Item], tensor: str, einsum: AfEinsum, spec: AfSpec):
    """Yield (memory, action, values total, values per unit) for every holder of `tensor`.

    Over 80 lines: AccelForge's counting rules for one tensor, as small closures over the same
    loop nest and holders, then applied holder by holder.
    """
    access = einsum.access(tensor)
    is_copy = einsum.is_copy_operation
    is_output = tensor in einsum.output_tensor_names
    holders = [i for i, item in enumerate(items) if item.memory is not None and not item.is_compute]
    requesters = holders[1:] + ([] if is_copy else [len(items) - 1])
    extents = dict(einsum.rank_variable_sizes)
    tiles: dict[int, int] = {}
    for i, item in enumerate(items):
        if item.loop is not None:
            extents[item.loop.rank_variable] = item.loop.tile_shape
        elif item.is_compute:
            tiles[i] = 1
        else:
            tiles[i] = access.tile_values(extents)

    def relevant(loop: AfLoopNode) -> bool:
        return access.is_fully_relevant(loop.rank_variable)

    def irrelevant(loop: AfLoopNode) -> bool:
        return loop.rank_variable not in access.rank_variables

    def factor(j: int, x: int, skip: bool) -> int:
        """Multiplier of loop j (between x and its parent) for a parent-side quantity of x."""
        loop, n = items[j].loop, items[j].iterations
        if loop.kind is LoopKind.TEMPORAL:
            return n if not skip or relevant(loop) else 1
        outermost = not any(j < h < x for h in holders)
        if irrelevant(loop) and outermost and may_reuse(spec, einsum, loop, tensor):
            return 1
        return n

    def parent_side(x: int, booked_at: int, skip: bool, per_unit: bool) -> int:
        """Values of requester x's exchange with its parent, counted at holder `booked_at`."""
        total = tiles[x]
        for j in range(x):
            if items[j].loop is None:
                continue
            if j < booked_at:
                loop = items[j].loop
                if per_unit and loop.kind is LoopKind.SPATIAL:
                    continue
                total *= (
                    items[j].iterations
                    if not (skip and loop.kind is LoopKind.TEMPORAL and not relevant(loop))
                    else 1
                )
            else:
                total *= factor(j, x, skip)
        return total

    def own_side(h: int, skip: bool, per_unit: bool) -> int:
        """Values of holder h's own fill / write-back, counted at h (all loops above, no reuse)."""
        total = tiles[h]
        for j in range(h):
            loop = items[j].loop
            if loop is None or (per_unit and loop.kind is LoopKind.SPATIAL):
                continue
            if skip and loop.kind is LoopKind.TEMPORAL and not relevant(loop):
                continue
            total *= items[j].iterations
        return total

    def skips(memory_or_compute: _Item) -> bool:
        if is_copy:
            return False
        node = spec.arch.node(memory_or_compute.memory)
        return node.skip_initial_output_write

    for position, h in enumerate(holders):
        reads = [0, 0]  # total, per unit
        writes = [0, 0]
        for view, per_unit in ((0, False), (1, True)):
            if position > 0:  # own exchange with the parent holder
                if is_copy or is_output:
                    reads[view] += own_side(h, False, per_unit)  # write-back
                if not is_copy:
                    writes[view] += own_side(h, False, per_unit)  # fill (partial-sum reload)
                    if is_output and skips(items[h]):
                        writes[view] -= own_side(h, True, per_unit)
            child = next((x for x in requesters if x > h), None)
            if child is None:
                continue
            if not is_copy:
                reads[view] += parent_side(child, h, False, per_unit)  # the child's fill
                if is_output and skips(items[child]) and skips(items[h]):
                    reads[view] -= parent_side(child, h, True, per_unit)
            if is_copy or is_output:
                writes[view] += parent_side(child, h, False, per_unit)  # the child's write-back
        memory = items[h].memory
        yield memory, "read", reads[0], reads[1]
        yield memory, "write", writes[0], writes[1]


def check_capacity(spec: AfSpec) -> None:
    """Raise SpecError if some memory's tiles in some Einsum exceed its size.

    A holder's occupancy is its tile after the run of fully relevant temporal loops directly
    below it (AccelForge places the reservation there), times bits per value.
    """
    for path in spec.einsum_paths:
        einsum = spec.workload.einsum(path.einsum)
        used: dict[str, int] = {}
        nodes = list(path.nodes)
        for index, node in enumerate(nodes):
            if not isinstance(node, AfStorageNode):
                continue
            for tensor in node.tensors:
                access = einsum.access(tensor)
                extents = dict(einsum.rank_variable_sizes)
                for above in nodes[:index]:
                    if isinstance(above, AfLoopNode):
                        extents[above.rank_variable] = above.tile_shape
                for below in nodes[index + 1 :]:
                    if not isinstance(below, AfLoopNode) or below.kind is LoopKind.SPATIAL:
                        break
                    if below.rank_variable not in access.rank_variables:
                        break
                    extents[below.rank_variable] = below.tile_shape
                    if not access.is_fully_relevant(below.rank_variable):
                        break
                used[node.component] = (
                    used.get(node.component, 0)
                    + access.tile_values(extents) * access.bits_per_value
                )
        for memory, bits in used.items():
            size = spec.arch.node(memory).size_bits
            if bits > size:
                raise Where(
                    spec.files[0], f"mapping (Einsum {einsum.name})", spec.arch.node(memory).line
                ).error(
                    f"the tiles kept in {memory} need {bits} bits but its size is {size} bits",
                    expected="smaller tiles below the !Storage nodes of " + memory,
                )
