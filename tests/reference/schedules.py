"""Random small schedules for the differential test: architecture, workload and mapping as the
spec's YAML dicts (what a user writes), loaded through cyclesim.spec.

Scope (grown feature by feature as each one agreed or had its difference recorded):
GEMM Z[m,n] += A[m,k] * B[k,n] with ranks of 1-4; DRAM above one on-chip buffer (two levels);
1-3 PEs in a row with a spatial loop over any rank (multicast of the tensors it does not index,
a spatial reduction when it is k); DRAM ports shared (one read-write port) or separate, of
4-64 b; bursts of 4-32 b; latencies 0-2; one or two slots per tensor; partial sums wider than
final values; reduction loops above the buffer; retain and strict; PE pipeline depth 0-2.
"""

from __future__ import annotations

from hypothesis import strategies as st

from cyclesim.spec import architecture_from_dict, mapping_from_dict, workload_from_dict

RANKS = ("m", "n", "k")
TENSORS = ("A", "B", "Z")
PROJ = {"A": ["m", "k"], "B": ["k", "n"], "Z": ["m", "n"]}

widths = st.sampled_from([4, 8, 16, 32, 64])
bursts = st.sampled_from([4, 8, 16, 32])
latencies = st.integers(0, 2)


def _port(draw, name: str, kind: str, serves: list[tuple[str, str]] | None = None) -> dict:
    p = {
        "name": name,
        "kind": kind,
        "width_bits": draw(widths),
        "latency_cycles": draw(latencies),
        "burst_bits": draw(bursts),
    }
    if serves is not None:
        p["serves"] = [{"tensor": t, "direction": d} for t, d in serves]
    return p


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


@st.composite
def schedules(draw) -> dict:
    """One random schedule: {'arch', 'workload', 'mapping' (dicts), 'reuse'}."""
    sizes = {r: draw(st.integers(1, 4)) for r in RANKS}
    pes = draw(st.integers(1, 3))
    spatial_rank = draw(st.sampled_from(RANKS))
    s = draw(st.sampled_from([d for d in _divisors(sizes[spatial_rank]) if d <= pes]))
    rest = {r: sizes[r] // (s if r == spatial_rank else 1) for r in RANKS}
    inner = {r: draw(st.sampled_from(_divisors(rest[r]))) for r in RANKS}
    outer = {r: rest[r] // inner[r] for r in RANKS}
    outer_order = draw(st.permutations(RANKS))
    inner_order = draw(st.permutations(RANKS))
    buf_at = {t: draw(st.integers(0, 3)) for t in TENSORS}  # how many outer loops above it

    tree: list[dict] = [{"type": "storage", "memory": "DRAM", "tensors": list(TENSORS)}]
    for i in range(4):
        kept = [t for t in TENSORS if buf_at[t] == i]
        if kept:
            tree.append({"type": "storage", "memory": "buf", "tensors": kept})
        if i < 3 and outer[outer_order[i]] > 1:
            tree.append(
                {"type": "temporal", "rank": outer_order[i], "bound": outer[outer_order[i]]}
            )
    if s > 1:
        tree.append({"type": "spatial", "rank": spatial_rank, "bound": s, "dim": "X"})
    for r in inner_order:
        if inner[r] > 1:
            tree.append({"type": "temporal", "rank": r, "bound": inner[r]})
    tree.append({"type": "compute", "einsum": "gemm"})

    bits = {t: draw(st.sampled_from([4, 8, 16])) for t in TENSORS}
    psum = bits["Z"] * draw(st.sampled_from([1, 1, 2, 4]))
    if draw(st.booleans()):
        dram_ports = [_port(draw, "dram_rw", "read_write")]
    else:
        dram_ports = [_port(draw, "dram_rd", "read"), _port(draw, "dram_wr", "write")]
    up = [(t, "read_to_above") for t in ("Z",)]
    down = [(t, "write_from_above") for t in TENSORS]
    if draw(st.booleans()):
        xfer = [_port(draw, "buf_x", "read_write", up + down)]
    else:
        xfer = [_port(draw, "buf_xr", "read", up), _port(draw, "buf_xw", "write", down)]
    pe_ports = [
        _port(draw, "buf_pr", "read", [(t, "read_to_below") for t in TENSORS]),
        _port(draw, "buf_pw", "write", [("Z", "write_from_below")]),
    ]
    double = [t for t in TENSORS if draw(st.booleans())]
    arch = {
        "name": "random",
        "pe_array": {"dims": {"X": pes}, "pipeline_depth_cycles": draw(st.integers(0, 2))},
        "memories": [
            {"name": "DRAM", "size_bits": None, "tensors": list(TENSORS), "ports": dram_ports},
            {
                "name": "buf",
                "size_bits": 1 << 20,
                "tensors": list(TENSORS),
                "double_buffered": double,
                "ports": xfer + pe_ports,
            },
        ],
    }
    workload = {
        "tensors": {
            "A": {"bits_per_value": bits["A"]},
            "B": {"bits_per_value": bits["B"]},
            "Z": {"bits_per_value": bits["Z"], "partial_sum_bits": psum},
        },
        "einsums": [
            {
                "name": "gemm",
                "ranks": sizes,
                "inputs": [
                    {"tensor": "A", "projection": PROJ["A"]},
                    {"tensor": "B", "projection": PROJ["B"]},
                ],
                "outputs": [{"tensor": "Z", "projection": PROJ["Z"]}],
            }
        ],
    }
    mapping = {"loop_tree": tree}
    return {
        "arch": arch,
        "workload": workload,
        "mapping": mapping,
        "reuse": draw(st.sampled_from(["retain", "strict"])),
    }


def load(case: dict):
    """The case's three inputs as spec objects, through the one loader."""
    a = architecture_from_dict(case["arch"], "arch.yaml")
    w = workload_from_dict(case["workload"], "workload.yaml")
    m = mapping_from_dict(case["mapping"], a, w, "mapping.yaml")
    return a, w, m
