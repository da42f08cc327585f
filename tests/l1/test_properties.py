"""Properties on random op trees: no overlap, in bounds, aligned, stack need, empty at the end."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cyclesim.l1 import AllocKind, L1Config, Region, replay
from cyclesim.l1.config import bank_bytes, round_up
from cyclesim.l1.events import Action
from cyclesim.l1.metrics import op_reports
from cyclesim.l1.ops import OpsFile, OpSpec, StepKind, ops_from_dict

CONFIG = L1Config(
    l1_size_bytes=1 << 30, unreserved_base_bytes=1024, alignment_bytes=32, num_banks=4
)
PAGES = st.sampled_from([64, 100, 2048])


@st.composite
def tensors(draw, name: str, size: int | None = None, page: int | None = None) -> dict:
    page = page or draw(PAGES)
    size = size or page * draw(st.integers(1, 9))
    banks = draw(st.sampled_from([None, 1, 3]))
    return {"name": name, "size_bytes": size, "page_size_bytes": page} | (
        {"num_banks": banks} if banks else {}
    )


@st.composite
def op_trees(draw) -> dict:
    """A random library: leaves with CBs, composites calling earlier ops, a model calling them."""
    ops: dict[str, dict] = {}
    for i in range(draw(st.integers(1, 3))):
        cbs = [
            {"name": f"cb{j}", "page_size_bytes": draw(PAGES), "num_pages": draw(st.integers(1, 6))}
            for j in range(draw(st.integers(1, 3)))
        ]
        ops[f"leaf{i}"] = {"circular_buffers": cbs, "outputs": [draw(tensors("out"))]}
    for i in range(draw(st.integers(1, 4))):
        has_cbs = draw(st.booleans())
        inter, steps, live = [], [], []
        for _ in range(draw(st.integers(1, 6))):
            action = draw(st.sampled_from(["call", "call", "alloc", "free", "run"]))
            if action == "call":
                callee = draw(st.sampled_from(sorted(ops)))
                out = ops[callee]["outputs"][0]
                name = f"t{len(inter)}"
                inter.append({**out, "name": name})
                steps += [{"alloc": name}, {"call": callee, "outputs": {"out": name}}]
                live.append(name)
            elif action == "alloc":
                name = f"t{len(inter)}"
                inter.append(draw(tensors(name)))
                steps.append({"alloc": name})
                live.append(name)
            elif action == "free" and live:
                steps.append({"free": live.pop(draw(st.integers(0, len(live) - 1)))})
            elif action == "run" and has_cbs:
                steps.append("run")
        steps += [{"free": name} for name in draw(st.permutations(live))]
        op = {"intermediates": inter, "outputs": [draw(tensors("out"))], "steps": steps}
        if has_cbs:
            op["circular_buffers"] = [{"name": "cb", "page_size_bytes": 2048, "num_pages": 2}]
            op["steps"] = steps + ["run"]
        ops[f"comp{i}"] = op
    model_tensors, model_steps = [], []
    for j, callee in enumerate(
        draw(st.lists(st.sampled_from(sorted(ops)), min_size=1, max_size=3))
    ):
        name = f"x{j}"
        model_tensors.append({**ops[callee]["outputs"][0], "name": name})
        model_steps += [{"alloc": name}, {"call": callee, "outputs": {"out": name}}]
    model_steps += [{"free": t["name"]} for t in draw(st.permutations(model_tensors))]
    return {"ops": ops, "model": {"tensors": model_tensors, "steps": model_steps}}


def stack_need(ops: OpsFile, op: OpSpec) -> int:
    """The deepest nested frame: own intermediates so far + the deepest callee or own CBs."""
    align = CONFIG.alignment_bytes
    frame = best = 0
    for step in op.steps:
        if step.kind is StepKind.ALLOC:
            t = op.tensor(step.target)
            frame += bank_bytes(
                t.size_bytes, t.page_size_bytes, t.num_banks or CONFIG.num_banks, align
            )
            best = max(best, frame)
        elif step.kind is StepKind.RUN:
            cbs = sum(c.num_pages * round_up(c.page_size_bytes, align) for c in op.circular_buffers)
            best = max(best, frame + cbs)
        elif step.kind is StepKind.CALL:
            best = max(best, frame + stack_need(ops, ops.op(step.target)))
    return best


def check_placements(result) -> None:
    """At every allocation: aligned, in bounds, and overlapping no live buffer (pools hold theirs)."""
    live: dict[str, tuple] = {}
    for event in result.events:
        if event.action is Action.ALLOC:
            start, end = event.address, event.address + event.size_bytes
            assert (
                start % CONFIG.alignment_bytes == 0
                and event.size_bytes % CONFIG.alignment_bytes == 0
            )
            assert start >= CONFIG.unreserved_base_bytes and end <= CONFIG.heap_top
            for name, (region, kind, s, e) in live.items():
                nested = (kind is AllocKind.POOL) != (
                    event.kind is AllocKind.POOL
                ) and Region.POOL in (
                    region,
                    event.region,
                )
                if nested:
                    continue
                assert end <= s or e <= start, f"{event.name} overlaps {name}"
            if event.region is Region.POOL:
                assert any(
                    k is AllocKind.POOL and s <= start and end <= e for _, k, s, e in live.values()
                )
            live[event.name] = (event.region, event.kind, start, end)
        elif event.action is Action.FREE:
            del live[event.name]
    assert not live


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(op_trees())
def test_random_op_trees_place_safely_and_return_l1_to_empty(tree):
    ops = ops_from_dict(tree, "random.yaml")
    for policy in ("heap", "stack", "pool"):
        result = replay(ops, CONFIG, policy)
        assert result.failure is None
        check_placements(result)
        assert result.empty_at_end
        last = result.events[-1].snapshot
        assert last.total_free_bytes == CONFIG.bank_size_bytes and last.fragmentation == 0.0
        if policy == "stack":
            for report in op_reports(result):
                assert report.contiguous
                assert report.requirement_bytes == stack_need(ops, ops.op(report.op)), report.path
