"""Invariants on random small GEMM schedules (hypothesis).

* counted accesses equal the closed form and stall causes add up (the run asserts both);
* cycles >= ideal compute, and >= every port's bits per instance / width;
* the same input gives the same event sequence;
* a write-back waits for the PE pipeline only until its tile's results land.
"""

from __future__ import annotations

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from replay_helpers import inputs_from_dicts, memory, port

from cyclesim.analysis.simulate import replay
from cyclesim.spec import Direction
from cyclesim.vocabulary import TransferKind, Wait

RANKS = ("m", "n", "k")
PROJ = {"A": ("m", "k"), "B": ("k", "n"), "Z": ("m", "n")}


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


@st.composite
def schedules(draw, steady: tuple[int, int] | None = None, shared_ports: bool = False):
    """A small GEMM schedule: buffer and register placement, loop orders, a spatial fan-out,
    widths, bursts, latencies, double buffering, DMA. steady=(lo, hi) adds an outermost loop
    of lo..hi iterations over the same schedule; shared_ports may give a memory one read-write
    port (fills and write-backs contend): both for fast-forward's identity tests."""
    sizes = {r: draw(st.integers(1, 4)) for r in RANKS}
    spatial_rank = draw(st.sampled_from(RANKS))
    s = draw(st.sampled_from(divisors(sizes[spatial_rank])))
    rest = {r: sizes[r] // (s if r == spatial_rank else 1) for r in RANKS}
    inner = {r: draw(st.sampled_from(divisors(rest[r]))) for r in RANKS}
    outer = {r: rest[r] // inner[r] for r in RANKS}
    outer_order = draw(st.permutations(RANKS))
    inner_order = draw(st.permutations(RANKS))
    outer_loops = [{"type": "temporal", "rank": r, "bound": outer[r]} for r in outer_order]
    inner_loops = [{"type": "temporal", "rank": r, "bound": inner[r]} for r in inner_order]
    buf_pos = {t: draw(st.one_of(st.none(), st.integers(0, 3))) for t in PROJ}
    reg_pos = {t: draw(st.one_of(st.none(), st.integers(0, 3))) for t in PROJ}
    tree = [{"type": "storage", "memory": "DRAM", "tensors": ["A", "B", "Z"]}]
    if steady is not None:
        steady_rank, steady_bound = draw(st.sampled_from(RANKS)), draw(st.integers(*steady))
        sizes[steady_rank] *= steady_bound
        tree.append({"type": "temporal", "rank": steady_rank, "bound": steady_bound})
    for i in range(4):
        kept = [t for t in PROJ if buf_pos[t] == i]
        if kept:
            tree.append({"type": "storage", "memory": "buf", "tensors": kept})
        if i < 3:
            tree.append(outer_loops[i])
    tree.append({"type": "spatial", "rank": spatial_rank, "bound": s, "dim": "X"})
    for i in range(4):
        kept = [t for t in PROJ if reg_pos[t] == i]
        if kept:
            tree.append({"type": "storage", "memory": "reg", "tensors": kept})
        if i < 3:
            tree.append(inner_loops[i])
    tree.append({"type": "compute", "einsum": "gemm"})
    widths = st.sampled_from([8, 16, 32, 64])
    bursts = st.sampled_from([None, 8, 32, 128])
    lat = st.integers(0, 2)

    def rw(prefix):
        if shared_ports and draw(st.booleans()):
            return [port(f"{prefix}_rw", "read_write", draw(widths), draw(bursts), draw(lat))]
        return [
            port(f"{prefix}_rd", "read", draw(widths), draw(bursts), draw(lat)),
            port(f"{prefix}_wr", "write", draw(widths), draw(bursts), draw(lat)),
        ]

    arch = {
        "name": "random",
        "pe_array": {"dims": {"X": 4}, "pipeline_depth_cycles": draw(st.integers(0, 3))},
        "memories": [
            memory("DRAM", None, None, rw("dram")),
            memory("buf", None, None, rw("buf"), double_buffered=draw(st.booleans())),
            memory(
                "reg", None, None, rw("reg"), double_buffered=draw(st.booleans()), shared_across=[]
            ),
        ],
    }
    if draw(st.booleans()):
        arch["dma_engines"] = [
            {
                "name": "dma",
                "links": [{"parent": "DRAM", "child": "buf"}],
                "channels": draw(st.integers(1, 2)),
                "setup_cycles": draw(st.integers(0, 3)),
            }
        ]
    bits = draw(st.sampled_from([8, 16]))
    workload = {
        "tensors": {
            "A": {"bits_per_value": bits},
            "B": {"bits_per_value": bits},
            "Z": {"bits_per_value": 8, "partial_sum_bits": draw(st.sampled_from([8, 16, 32]))},
        },
        "einsums": [
            {
                "name": "gemm",
                "ranks": sizes,
                "inputs": [
                    {"tensor": "A", "projection": list(PROJ["A"])},
                    {"tensor": "B", "projection": list(PROJ["B"])},
                ],
                "outputs": [{"tensor": "Z", "projection": list(PROJ["Z"])}],
            }
        ],
    }
    return arch, workload, {"loop_tree": tree}, draw(st.sampled_from(["retain", "strict"])), s


FAST = settings(
    max_examples=int(__import__("os").environ.get("CYCLESIM_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@FAST
@given(schedules())
def test_cycles_bound_below_by_compute_and_every_port(case):
    arch, workload, mapping, reuse, fanout = case
    a, w, m = inputs_from_dicts(arch, workload, mapping)
    res = replay(a, w, m, reuse=reuse, progress=False)  # raises if counts or causes disagree
    assert res.cycles >= res.ideal_compute_cycles
    assert (
        res.onload_cycles + res.ideal_compute_cycles + res.stall_cycles + res.offload_cycles
        == res.cycles
    )
    busy: dict[tuple[str, str], int] = {}
    for r in res.detailed_accesses.itertuples():
        mem = a.memory(r.memory)
        p = mem.port_for(r.tensor, Direction(r.direction))
        instances = fanout if r.memory == "reg" else 1
        busy[(r.memory, p.name)] = busy.get((r.memory, p.name), 0) + r.bits // instances
    for (mem, name), bits in busy.items():
        width = next(p.width_bits for p in a.memory(mem).ports if p.name == name)
        assert res.cycles >= -(-bits // width), f"{mem}.{name} moves {bits} b at {width} b/cycle"


@FAST
@given(schedules())
def test_same_input_same_event_sequence(case):
    arch, workload, mapping, reuse, _ = case
    runs = [
        replay(*inputs_from_dicts(arch, workload, mapping), reuse=reuse, progress=False)
        for _ in range(2)
    ]
    first, second = (r.raw.rec for r in runs)
    assert runs[0].cycles == runs[1].cycles
    assert first.grants == second.grants
    assert first.fill_tl == second.fill_tl and first.drain_tl == second.drain_tl
    assert first.pe_waits == second.pe_waits


@FAST
@given(schedules(), st.integers(1, 8))
def test_a_write_back_waits_for_the_pipeline_only_until_its_results_land(case, depth):
    # DESIGN: pipeline depth delays every write of a PE result by that many cycles. The results
    # of the output tile k land at used_k + depth, used_k the end of its last PE segment,
    # whatever its write-back is doing then: the write-back of k starts no earlier, and when
    # it reaches k (at max(used_k, the end of k - 1's write-back)) before they land, it waits
    # (the timeline's pipeline state) from that cycle exactly until used_k + depth.
    arch, workload, mapping, reuse, _ = case
    arch["pe_array"]["pipeline_depth_cycles"] = depth
    res = replay(
        *inputs_from_dicts(arch, workload, mapping), reuse=reuse, progress=False, trace=True
    )
    rec, plan = res.raw.rec, res.raw.plan
    (out,) = [o for o in plan.leaves[0].operands if o.is_output]
    node = plan.nodes[out.node]
    if node.parent is None:  # the PE array writes the backing store: no write-back
        return
    used: dict[int, int] = {}
    for _, end, _, g in rec.pe_segments:
        used[g // out.ratio] = max(used.get(g // out.ratio, 0), end)
    drains = sorted(
        (k, start, end)
        for start, end, n, kind, k, _ in rec.transfers
        if n == node.index and kind == TransferKind.WRITE_BACK
    )
    assert [k for k, _, _ in drains] == list(range(node.entries))
    timeline = list(rec.drain_tl[node.index])
    waits = [  # (start, end) of each wait for the pipeline
        (t, timeline[i + 1][0])
        for i, (t, state, _) in enumerate(timeline)
        if state == Wait.PIPELINE
    ]
    reached = 0  # when the write-back process reaches entry k: after k - 1's write-back
    expected = []
    for k, start, end in drains:
        lands = used[k] + depth
        assert start >= lands
        arrives = max(reached, used[k])
        if arrives < lands:
            expected.append((arrives, lands))
        reached = end
    assert waits == expected
    event(f"waits for the pipeline: {'some' if waits else 'none'}")
    event(
        f"tiles landed while the write-back was busy: {'some' if len(waits) < len(drains) else 'none'}"
    )
