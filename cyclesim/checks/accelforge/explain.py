"""One sentence per differing row of an AccelForge comparison, naming the mechanism.

A row's difference is taken apart with the schedule's closed form under other policies (pure,
no replay): what changes when the Einsums are isolated is cross-Einsum residency; what then
changes under `strict` is reuse across loops that do not index the tensor; what remains is a
counting convention of AccelForge's (first-read skipping, spatial multicast) or a copy's
bookkeeping under its source tensor (docs/reference/accelforge.md §3.3, §4, §6).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cyclesim.checks.accelforge.model import AfModelResult, may_reuse
from cyclesim.checks.accelforge.rows import AccelForgeCheck, AccessRow, Key, convention_bits
from cyclesim.checks.accelforge.spec import (
    AfComputeNode,
    AfLoopNode,
    AfSpec,
    AfSplitNode,
    AfStorageNode,
    LoopKind,
)
from cyclesim.errors import CyclesimError

if TYPE_CHECKING:
    from cyclesim.checks.accelforge.importer import ImportedSpec


def explain(
    spec: AfSpec, imported: ImportedSpec, model: AfModelResult, check: AccelForgeCheck
) -> list[str]:
    """Sentences for every row where the replay, the closed form, the model or accelforge differ."""
    counterfactual = _Counterfactual(spec, imported)
    out: list[str] = []
    differing_copies: set[str] = set()
    for row in check.accesses:
        where = f"{row.einsum} {row.memory} {row.tensor} {row.action}"
        if row.accelforge_bits is not None and row.accelforge_bits != row.model_bits:
            out.append(
                f"{where}: cyclesim's model of AccelForge gives {_n(row.model_bits)} bits, "
                f"accelforge {check.accelforge_version} {_n(row.accelforge_bits)}: a bug in "
                "cyclesim's model, please report it"
            )
        if row.replay_bits != row.closed_form_bits:
            differing_copies.add(row.einsum)
            out.append(f"{where}: {_copy_direction(spec, row)}")
        if row.closed_form_bits != row.reference_bits:
            out.append(f"{where}: {_mechanisms(spec, check, counterfactual, row)}")
    out += _copy_names(spec, differing_copies)
    latency = _latency(spec, check, model)
    return out + ([latency] if latency else [])


class _Counterfactual:
    """The schedule's closed form (AccelForge's conventions) under other policies, cached."""

    def __init__(self, spec: AfSpec, imported: ImportedSpec) -> None:
        self.spec, self.imported = spec, imported
        self.cache: dict[tuple[str, bool], dict[Key, int] | None] = {}

    def bits(self, reuse: str, isolate: bool, key: Key) -> int | None:
        """Bits of `key` under (reuse, isolate); None if that policy cannot be scheduled."""
        if (reuse, isolate) not in self.cache:
            from cyclesim.schedule import ReusePolicy, build_plan, closed_form

            try:
                plan = build_plan(
                    self.imported.architecture,
                    self.imported.workload,
                    self.imported.mapping,
                    ReusePolicy(reuse),
                    isolate,
                )
                table = convention_bits(self.spec, closed_form(plan))
            except CyclesimError:
                table = None
            self.cache[reuse, isolate] = table
        table = self.cache[reuse, isolate]
        return None if table is None else table.get(key, 0)


def _mechanisms(spec: AfSpec, check: AccelForgeCheck, cf: _Counterfactual, row: AccessRow) -> str:
    """The mechanisms that take the closed form of this row to AccelForge's number, in one sentence."""
    now = row.closed_form_bits
    isolated = now if check.isolate_einsums else cf.bits(check.reuse, True, row.key)
    strict = isolated if check.reuse == "strict" else cf.bits("strict", True, row.key)
    parts = []
    if isolated is not None and isolated != now:
        parts.append(_residency(spec, row))
    if strict is not None and isolated is not None and strict != isolated:
        parts.append(_reuse(spec, row))
    if strict is None or strict != row.reference_bits or not parts:
        parts.append(_convention(spec, row))
    reference = "accelforge" if row.accelforge_bits is not None else "our model of AccelForge"
    return (
        f"replay {_n(now)} bits, {reference} {_n(row.reference_bits)}: "
        + "; and ".join(parts)
        + "."
    )


def _residency(spec: AfSpec, row: AccessRow) -> str:
    backing = _backing_memory(spec, row.tensor)
    resident = sorted(_above_split(spec.mapping, row.tensor) - {backing})
    where = f" in {', '.join(resident)} above the split" if resident else " on chip"
    return (
        f"cross-Einsum residency: the replay keeps {row.tensor}{where} from one Einsum to the "
        f"next, while AccelForge evaluates each Einsum alone and exchanges {row.tensor} only "
        f"through its backing store ({backing}); --isolate-einsums reproduces that"
    )


def _reuse(spec: AfSpec, row: AccessRow) -> str:
    loops, partial = _loops_not_indexing(spec, row.einsum, row.tensor)
    named = f"the loops over {', '.join(loops)}, which do not index {row.tensor}" if loops else ""
    if partial:
        named += (", and over " if named else "the loops over ") + (
            f"{', '.join(partial)}, which index it only through a sum (a sliding window)"
        )
    einsum = spec.workload.einsum(row.einsum)
    if row.tensor in einsum.output_tensor_names:
        what = "writes the tile back and reloads its partial sums"
    elif row.action == "read" and _innermost_holder(spec, row.einsum, row.tensor) == row.memory:
        what = f"re-reads {row.tensor} at the MAC"
    else:
        what = "refills the tile"
    return (
        f"reuse across a loop that does not index the tensor: AccelForge {what} on every "
        f"iteration of {named or 'loops that leave the tile unchanged'}; the retaining replay "
        "keeps it until it "
        "changes (--reuse strict reproduces AccelForge)"
    )


def _convention(spec: AfSpec, row: AccessRow) -> str:
    einsum = spec.workload.einsum(row.einsum)
    path = spec.path(row.einsum)
    tensor = einsum.copy_source if einsum.is_copy_operation else row.tensor
    is_output = tensor in einsum.output_tensor_names
    if is_output and not _skips_everywhere(spec, row.einsum, tensor):
        return (
            f"first-read skipping: skip_initial_output_write is False on a holder of {tensor}, "
            "so AccelForge fetches each element's initial value (a read of the parent, a write "
            "into the holder, a read at the MAC); the replay starts every output at zero and "
            "moves nothing on the first visit (DESIGN: the replay is right)"
        )
    access = einsum.access(tensor)
    loops = [n for n in path.nodes if isinstance(n, AfLoopNode) and n.kind is LoopKind.SPATIAL]
    no_reuse = [
        loop
        for loop in loops
        if loop.rank_variable not in access.rank_variables
        and not may_reuse(spec, einsum, loop, tensor)
    ]
    if no_reuse:
        dims = ", ".join(f"{loop.component}.{loop.dimension}" for loop in no_reuse)
        return (
            f"spatial multicast: AccelForge may not multicast {tensor} along {dims} (its "
            "may_reuse excludes it) and counts one access per PE; the replay's architecture "
            f"must list {tensor} under pe_array.no_multicast for that dimension to do the same"
        )
    below = _spatial_below_innermost(spec, row.einsum, tensor, row.memory)
    if below and row.action == "read" and not is_output:
        return (
            f"spatial multicast at the PE array: AccelForge reads {tensor} from {row.memory} "
            f"once for the PEs of the spatial loops over {', '.join(below)}, which do not index "
            "it; the replay multicasts the same way, so this row differs for another reason "
            "(check pe_array.no_multicast)"
        )
    return "no known mechanism explains this difference: a bug in cyclesim, please report it"


def _copy_direction(spec: AfSpec, row: AccessRow) -> str:
    einsum = spec.workload.einsum(row.einsum)
    return (
        f"copy bookkeeping under the source tensor's name: copy Einsum '{einsum.name}' moves "
        f"{einsum.copy_source} into {', '.join(einsum.output_tensor_names)} down the hierarchy; "
        f"AccelForge books every copy under its source {einsum.copy_source} as a read of the "
        "lower memory and a write of the upper one, so the replay's physical "
        f"{_n(row.replay_bits)} bits here count {_n(row.closed_form_bits)} in AccelForge's convention"
    )


def _copy_names(spec: AfSpec, already: set[str]) -> list[str]:
    out = []
    for einsum in spec.workload.einsums:
        if einsum.is_copy_operation and einsum.name not in already:
            dst = ", ".join(einsum.output_tensor_names)
            out.append(
                f"copy bookkeeping under the source tensor's name: copy Einsum '{einsum.name}' "
                f"writes {dst}; AccelForge has no {dst} rows and books the copy under "
                f"{einsum.copy_source}, so every column shows it there"
            )
    return out


def _copy_steps(spec: AfSpec) -> list[tuple[str, int]]:
    """(copy Einsum, temporal steps): a copy steps the PE array once per temporal iteration."""
    out = []
    for path in spec.einsum_paths:
        if spec.workload.einsum(path.einsum).is_copy_operation:
            loops = [n for n in path.nodes if isinstance(n, AfLoopNode)]
            steps = 1
            for loop, n in zip(loops, path.loop_iterations, strict=True):
                steps *= n if loop.kind is LoopKind.TEMPORAL else 1
            out.append((path.einsum, steps))
    return out


def _latency(spec: AfSpec, check: AccelForgeCheck, model: AfModelResult) -> str | None:
    lat = check.latency
    bound = lat.bound_cycles
    if lat.replay_cycles == bound:
        return None
    rows = model.component_latency
    busiest = []
    for einsum, cycles in lat.model_einsum_cycles:
        top = rows[(rows.einsum == einsum) & (rows.latency_cycles == cycles)]
        if len(top):
            busiest.append(
                f"{einsum}: {top.component.iloc[0]} {_n(cycles)}" if cycles else f"{einsum}: 0"
            )
    causes = ", ".join(f"{c} {n}" for c, n in lat.stall_by_cause) or "none"
    head = (
        f"latency: the replay takes {lat.replay_cycles} cycles, AccelForge's bound is {_n(bound)}"
    )
    if lat.replay_cycles > bound:
        copies = "".join(
            f"; copy Einsum {einsum} steps the PE array {steps} cycles (one move per step), "
            "AccelForge gives a copy latency 0"
            for einsum, steps in _copy_steps(spec)
            if steps
        )
        return (
            f"{head} ({'; '.join(busiest)}): AccelForge takes per Einsum the busiest "
            "component's actions / throughput and assumes perfect overlap with no fill or "
            f"drain, while the replay spends {lat.onload_cycles} cycles before the first MAC, "
            f"{lat.stall_cycles} stalled and {lat.offload_cycles} after the last (causes: {causes})"
            + copies
        )
    return (
        f"{head} ({'; '.join(busiest)}): AccelForge charges a memory all its reads and writes "
        "on one port, strict refills included, while the replay moves "
        f"{'only changed tiles' if check.reuse == 'retain' else 'the same data'} over "
        "its own read and write paths in parallel with the MACs"
    )


def _backing_memory(spec: AfSpec, tensor: str) -> str:
    for node in _walk(spec.mapping):
        if isinstance(node, AfStorageNode) and tensor in node.tensors:
            return node.component
    return "?"


def _walk(nodes):
    for node in nodes:
        yield node
        if isinstance(node, AfSplitNode):
            for branch in node.branches:
                yield from _walk(branch)


def _above_split(nodes, tensor: str) -> set[str]:
    """Memories holding `tensor` in a storage node above some split."""
    found: set[str] = set()
    seen: set[str] = set()
    for node in nodes:
        if isinstance(node, AfStorageNode) and tensor in node.tensors:
            seen.add(node.component)
        elif isinstance(node, AfSplitNode):
            found |= seen
            for branch in node.branches:
                found |= _above_split(branch, tensor)
    return found


def _loops_not_indexing(spec: AfSpec, einsum_name: str, tensor: str) -> tuple[list, list]:
    """Temporal loops (> 1 iteration) that do not index `tensor`, and those that do only partly."""
    einsum = spec.workload.einsum(einsum_name)
    access = einsum.access(einsum.copy_source if einsum.is_copy_operation else tensor)
    path = spec.path(einsum_name)
    loops = [n for n in path.nodes if isinstance(n, AfLoopNode)]
    temporal = [
        loop.rank_variable
        for loop, n in zip(loops, path.loop_iterations, strict=True)
        if n > 1 and loop.kind is LoopKind.TEMPORAL
    ]
    irrelevant = [r for r in temporal if r not in access.rank_variables]
    partial = [
        r for r in temporal if r in access.rank_variables and not access.is_fully_relevant(r)
    ]
    return list(dict.fromkeys(irrelevant)), list(dict.fromkeys(partial))


def _skips_everywhere(spec: AfSpec, einsum: str, tensor: str) -> bool:
    path = spec.path(einsum)
    for node in path.nodes:
        if isinstance(node, AfStorageNode) and tensor in node.tensors:
            if not spec.arch.node(node.component).skip_initial_output_write:
                return False
        elif isinstance(node, AfComputeNode):
            if not spec.arch.node(node.component).skip_initial_output_write:
                return False
    return True


def _spatial_below_innermost(spec: AfSpec, einsum_name: str, tensor: str, memory: str) -> list[str]:
    """Rank variables of spatial loops below `tensor`'s innermost holder (in `memory`) not indexing it."""
    einsum = spec.workload.einsum(einsum_name)
    access = einsum.access(tensor)
    path = spec.path(einsum_name)
    holders = [
        i for i, n in enumerate(path.nodes) if isinstance(n, AfStorageNode) and tensor in n.tensors
    ]
    if not holders or path.nodes[holders[-1]].component != memory:
        return []
    return [
        n.rank_variable
        for n in path.nodes[holders[-1] + 1 :]
        if isinstance(n, AfLoopNode)
        and n.kind is LoopKind.SPATIAL
        and n.rank_variable not in access.rank_variables
    ]


def _innermost_holder(spec: AfSpec, einsum: str, tensor: str) -> str | None:
    holders = [
        n.component
        for n in spec.path(einsum).nodes
        if isinstance(n, AfStorageNode) and tensor in n.tensors
    ]
    return holders[-1] if holders else None


def _n(value: float) -> str:
    """A count as an integer when it is one, else with six significant digits."""
    return f"{int(value)}" if float(value).is_integer() else f"{value:.6g}"
