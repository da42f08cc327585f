"""Every cycle the PE array does not complete a step, charged to one root cause (docs/design.md,
"Cause of a waiting cycle"), by walking the per-cycle states the machine wrote down."""

from __future__ import annotations

from collections import Counter

from .machine import Machine, Transfer


def _root(m: Machine, t: Transfer, c: int) -> tuple:
    """(cause, memory, tensor, port, competitor) of what transfer t does in cycle c."""
    for _ in range(1000):
        state = t.states.get(c)
        assert state is not None, f"{t.label} has no state at {c}"
        kind = state[0]
        if kind in ("parent", "drain", "pred") or (kind == "uses" and state[1] is not None):
            t = state[1]
            continue
        node = t.node
        if kind == "slot":
            return (
                "buffer_full",
                node.memory,
                node.tensor,
                None,
                f"an earlier tile of {node.label}",
            )
        if kind == "turn":  # room kept for the running branch (O5)
            return ("buffer_full", node.memory, node.tensor, None, "the running branch")
        if kind == "room":
            return (
                "buffer_full",
                node.memory,
                node.tensor,
                None,
                f"a tile of {state[1].node.label}",
            )
        if kind == "pipe":
            return ("latency", node.memory, node.tensor, None, None)
        if kind == "uses":
            return ("dependency", node.memory, node.tensor, None, "PE array")
        if kind == "burst":
            return ("bandwidth", node.memory, node.tensor, state[1].port.name, None)
        if kind == "wait":
            return ("contention", node.memory, node.tensor, state[2].port.name, state[1].label)
        if kind == "dma":
            return (
                "contention",
                node.memory,
                node.tensor,
                state[1],
                f"DMA {state[1]} channels busy",
            )
        if kind == "setup":
            return ("latency", node.memory, node.tensor, state[1], None)
        if kind == "latency":
            return ("latency", node.memory, node.tensor, t.latency_port.port.name, None)
        raise AssertionError(state)
    raise AssertionError("blame chain too deep")


def stall_table(m: Machine) -> Counter:
    """Cycles by (phase, cause, memory, tensor, port, competitor)."""
    out: Counter = Counter()
    first = m.steps[0].start if m.steps else m.cycles
    for c, s in m.waits:
        phase = "onload" if c < first else "compute"
        awaited = []
        leaf = m.nest.leaves[m.nest.leaf_of[s]]
        for x in leaf.tensors:
            chain = leaf.chains[x]
            if len(chain) < 2:
                continue
            f = m.fills[id(chain[-1])][m._run_at(chain[-1], s).index]
            if f.done_at is None or f.done_at > c:
                awaited.append(f)
        # the binding tile: the one resident last; ties to operand order
        binding = max(awaited, key=lambda f: (f.done_at, -awaited.index(f)))
        out[(phase,) + _root(m, binding, c)] += 1
    for step in m.steps:
        if step.end - step.start > 1:
            mem, tensor, port = step.spatial
            out[("compute", "spatial", mem, tensor, port, None)] += step.end - step.start - 1
    last = m.steps[-1].end if m.steps else 0
    if m.cycles > last:
        wbs = [t for t in m.transfers if t.kind == "write-back"]
        final = max(wbs, key=lambda t: t.done_at)  # the write-back that lands last
        for c in range(last, m.cycles):
            out[("offload",) + _root(m, final, c)] += 1
    return out
