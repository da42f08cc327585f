"""Walk an op tree and replay its allocation sequence on an L1 under one policy."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

from cyclesim.l1.config import AllocKind, L1Config, Policy, Region
from cyclesim.l1.errors import L1AllocationError
from cyclesim.l1.events import Action, L1Event, Placement
from cyclesim.l1.model import L1
from cyclesim.l1.ops import OpsFile, OpSpec, StepKind


@dataclass(frozen=True, slots=True)
class OpInstance:
    """One call of an op in the tree: where it starts and ends in the allocation sequence."""

    path: str  # e.g. "encoder/attention/softmax"; a repeated call gets "#2", "#3"
    op: str
    depth: int  # 1 for the ops the model calls
    enter_seq: int
    exit_seq: int | None  # None when the replay failed inside it
    entry_local_top: int  # where its stack frame starts
    pool_bytes: int  # policy pool: its preallocated pool (top-level ops only), else 0


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """The allocation sequence of one policy, the op instances, and the failure if any."""

    policy: Policy
    config: L1Config
    source: str
    events: tuple[L1Event, ...]
    instances: tuple[OpInstance, ...]
    failure: L1AllocationError | None
    final_live: tuple[Placement, ...]
    empty_at_end: bool
    unbounded: ReplayResult | None = None  # after a failure: the same replay on an unbounded L1


class _Ref(NamedTuple):
    buffer: str  # the buffer's name in L1 (owner path ":" tensor)
    owner_depth: int  # depth of the op that declares the tensor (0: the model)


def replay(ops: OpsFile, config: L1Config, policy: Policy | str) -> ReplayResult:
    """Replay the model's steps on a fresh L1; a clash or out-of-memory ends it early."""
    policy = Policy(policy)
    pool_sizes = _pool_sizes(ops, config) if policy is Policy.POOL else {}
    l1 = L1(config, policy)
    instances: list[list] = []
    failure = None
    refs = {t.name: _Ref(t.name, 0) for t in ops.model.intermediates}
    try:
        _walk(l1, ops, ops.model, "", 0, refs, instances, pool_sizes)
    except L1AllocationError as exc:
        failure = exc
    frozen = tuple(OpInstance(*row) for row in instances)
    unbounded = None
    # what each op would need, read where nothing can clash (once: requests beyond even the
    # unbounded L1 fail there too, and that replay has no unbounded twin of its own)
    if failure is not None and config != _unbounded(config):
        unbounded = replay(ops, _unbounded(config), policy)
    return ReplayResult(
        policy,
        config,
        ops.source,
        tuple(l1.events),
        frozen,
        failure,
        l1.live(),
        l1.is_empty(),
        unbounded,
    )


def _unbounded(config: L1Config) -> L1Config:
    """The same L1 with a practically endless heap (requirements do not depend on capacity)."""
    return replace(
        config, l1_size_bytes=(1 << 40) + config.unreserved_base_bytes, l1_small_size_bytes=0
    )


def _walk(
    l1: L1,
    ops: OpsFile,
    op: OpSpec,
    path: str,
    depth: int,
    refs: dict[str, _Ref],
    instances: list[list],
    pool_sizes: dict[str, int],
) -> None:
    """Execute one op's body: allocations, frees, its program and nested calls."""
    calls: dict[str, int] = {}
    for step in op.steps:
        if step.kind is StepKind.RUN:
            for cb in op.circular_buffers:
                l1.allocate(
                    f"{path}:{cb.name}",
                    AllocKind.CB,
                    cb.size_bytes,
                    page_size_bytes=cb.page_size_bytes,
                )
            l1.launch(path)
            l1.end_program()
        elif step.kind is StepKind.ALLOC:
            ref = refs[step.target]
            spec = op.tensor(step.target)
            kind, region = _placement_for(ref, depth, l1.policy)
            l1.allocate(
                ref.buffer,
                kind,
                spec.size_bytes,
                page_size_bytes=spec.page_size_bytes,
                num_banks=spec.num_banks,
                region=region,
            )
        elif step.kind is StepKind.FREE:
            l1.free(refs[step.target].buffer)
        else:
            callee = ops.op(step.target)
            calls[callee.name] = calls.get(callee.name, 0) + 1
            count = calls[callee.name]
            child = (f"{path}/" if path else "") + callee.name + (f"#{count}" if count > 1 else "")
            child_refs = {
                t.name: _Ref(f"{child}:{t.name}", depth + 1) for t in callee.intermediates
            }
            bindings = dict(step.bindings)
            for out in callee.outputs:
                child_refs[out.name] = refs[bindings.get(out.name, out.name)]
            row = [child, callee.name, depth + 1, len(l1.events), None, l1.local_top, 0]
            instances.append(row)
            row[6] = pool_sizes.get(child, 0) if depth == 0 else 0
            l1.push_frame(child, pool_bytes=row[6])
            _walk(l1, ops, callee, child, depth + 1, child_refs, instances, pool_sizes)
            l1.pop_frame()
            row[4] = len(l1.events) - 1


def _placement_for(ref: _Ref, depth: int, policy: Policy) -> tuple[AllocKind, Region | None]:
    """Kind and region of a tensor allocated at `depth` for an owner at `ref.owner_depth`."""
    if ref.owner_depth == 0:  # a tensor of the model: long-lived, on the heap in every policy
        return (AllocKind.TENSOR if depth == 0 else AllocKind.OUTPUT), Region.HEAP
    if ref.owner_depth == depth or policy is not Policy.STACK:
        return AllocKind.INTERMEDIATE, None  # the policy decides
    # A callee allocates a tensor its caller owns: the callee's frame is popped on return, so
    # under `stack` it cannot live there; it goes on the heap, as tt-metal does today.
    return AllocKind.INTERMEDIATE, Region.HEAP


def _pool_sizes(ops: OpsFile, config: L1Config) -> dict[str, int]:
    """Pool size per top-level call: a replay with unbounded pools measures each one's span."""
    big = 1 << 40
    sizing = replace(
        config, l1_size_bytes=big + config.unreserved_base_bytes, l1_small_size_bytes=0
    )
    l1 = L1(sizing, Policy.POOL)
    refs = {t.name: _Ref(t.name, 0) for t in ops.model.intermediates}
    instances: list[list] = []
    unbounded = {}
    probe = _Probe(1 << 38)
    _walk(l1, ops, ops.model, "", 0, refs, instances, probe)
    for row in instances:
        if row[2] != 1:
            continue
        top, low = None, None
        for event in l1.events[row[3] : row[4] + 1]:
            if event.action is Action.ALLOC and event.kind is AllocKind.POOL and top is None:
                top = event.address + event.size_bytes
            elif event.action is Action.ALLOC and event.region is Region.POOL:
                low = event.address if low is None else min(low, event.address)
        unbounded[row[0]] = 0 if top is None or low is None else top - low
    return unbounded


class _Probe(dict):
    """A pool-size table that gives every top-level call the same large pool (sizing pass)."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def get(self, key: str, default: int = 0) -> int:  # type: ignore[override]
        return self.size
