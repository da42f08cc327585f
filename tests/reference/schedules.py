"""Random small schedules for the differential test: architecture, workload and mapping as the
spec's YAML dicts (what a user writes), loaded through cyclesim.spec.

Scope (grown feature by feature as each one agreed or had its difference recorded):
GEMM Z[m,n] += A[m,k] * B[k,n] with ranks of 1-4; DRAM above one on-chip buffer (two levels),
or with per-PE registers below it (three levels); 1-3 PEs along X and optionally 1-2 along Y,
a spatial loop per dimension over distinct ranks (multicast of the tensors it does not index,
a spatial reduction when it is k, instances per PE for the registers); ports toward the parent
shared (one read-write port) or separate, of 4-64 b; bursts of 4-32 b; latencies 0-2; one or
two slots per tensor; partial sums wider than final values; reduction loops above the buffer;
retain and strict; PE pipeline depth 0-2.
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


def _split(draw, n: int, parts: int) -> list[int]:
    """n as a product of `parts` factors, outermost first."""
    out = []
    for _ in range(parts - 1):
        f = draw(st.sampled_from(_divisors(n)))
        out.append(f)
        n //= f
    return out + [n]


def _serving(draw, name: str, kind: str, serves: list[tuple[str, str]]) -> list[dict]:
    return [_port(draw, name, kind, serves)] if serves else []


@st.composite
def schedules(draw, three_levels: bool | None = None) -> dict:
    """One random schedule: {'arch', 'workload', 'mapping' (dicts), 'reuse'}."""
    levels = draw(st.sampled_from([2, 3])) if three_levels is None else (3 if three_levels else 2)
    sizes = {r: draw(st.integers(1, 4)) for r in RANKS}
    dims = {"X": draw(st.integers(1, 3))}
    if draw(st.booleans()):
        dims["Y"] = draw(st.integers(1, 2))
    # spatial loops: one per array dimension, over distinct ranks
    fan = {}
    ranks_left = list(RANKS)
    for d, size in dims.items():
        r = draw(st.sampled_from(ranks_left))
        ranks_left.remove(r)
        fan[d] = (r, draw(st.sampled_from([x for x in _divisors(sizes[r]) if x <= size])))
    rest = dict(sizes)
    for r, b in fan.values():
        rest[r] //= b
    cuts = {r: _split(draw, rest[r], levels) for r in RANKS}  # outer, (middle,) inner
    orders = [draw(st.permutations(RANKS)) for _ in range(levels)]
    buf_at = {t: draw(st.integers(0, 3)) for t in TENSORS}
    spatial_ranks = {r for r, b in fan.values() if b > 1}
    # per-PE registers (three levels) for some tensors; an output only where no spatial loop
    # reduces it (per-PE partial sums of one element would need a reduction DESIGN leaves open)
    in_reg = []
    if levels == 3:
        in_reg = [t for t in ("A", "B") if draw(st.booleans())]
        if "k" not in spatial_ranks and draw(st.booleans()):
            in_reg.append("Z")
    reg_at = {t: draw(st.integers(0, 3)) for t in in_reg}

    def loops(level: int) -> list[dict]:
        return [
            {"type": "temporal", "rank": r, "bound": cuts[r][level]}
            for r in orders[level]
            if cuts[r][level] > 1
        ]

    tree: list[dict] = [{"type": "storage", "memory": "DRAM", "tensors": list(TENSORS)}]
    outer = loops(0)
    for i in range(4):
        kept = [t for t in TENSORS if buf_at[t] == i]
        if kept:
            tree.append({"type": "storage", "memory": "buf", "tensors": kept})
        if i < len(outer):
            tree.append(outer[i])
    tree += outer[3:]
    for d, (r, b) in fan.items():
        if b > 1:
            tree.append({"type": "spatial", "rank": r, "bound": b, "dim": d})
    if levels == 3:
        middle = loops(1)
        for i in range(4):
            kept = [t for t in in_reg if reg_at[t] == i]
            if kept:
                tree.append({"type": "storage", "memory": "reg", "tensors": kept})
            if i < len(middle):
                tree.append(middle[i])
        tree += middle[3:]
    tree += loops(levels - 1)
    tree.append({"type": "compute", "einsum": "gemm"})

    bits = {t: draw(st.sampled_from([4, 8, 16])) for t in TENSORS}
    psum = bits["Z"] * draw(st.sampled_from([1, 1, 2, 4]))
    if draw(st.booleans()):
        dram_ports = [_port(draw, "dram_rw", "read_write")]
    else:
        dram_ports = [_port(draw, "dram_rd", "read"), _port(draw, "dram_wr", "write")]

    def transfer_ports(mem: str, held: list[str]) -> list[dict]:
        """A memory's ports toward its parent: one read-write port or a read and a write."""
        up = [("Z", "read_to_above")] if "Z" in held else []
        down = [(t, "write_from_above") for t in held]
        if draw(st.booleans()):
            return _serving(draw, f"{mem}_x", "read_write", up + down)
        return _serving(draw, f"{mem}_xr", "read", up) + _serving(draw, f"{mem}_xw", "write", down)

    def pe_ports(mem: str, to_pe: list[str], to_child: list[str]) -> list[dict]:
        """Ports toward the PE array (and, on a separate pair, toward a child level)."""
        ports = _serving(draw, f"{mem}_pr", "read", [(t, "read_to_below") for t in to_pe])
        if "Z" in to_pe:
            ports += _serving(draw, f"{mem}_pw", "write", [("Z", "write_from_below")])
        ports += _serving(draw, f"{mem}_dr", "read", [(t, "read_to_below") for t in to_child])
        if "Z" in to_child:
            ports += _serving(draw, f"{mem}_dw", "write", [("Z", "write_from_below")])
        return ports

    memories = [
        {"name": "DRAM", "size_bits": None, "tensors": list(TENSORS), "ports": dram_ports},
        {
            "name": "buf",
            "size_bits": 1 << 20,
            "tensors": list(TENSORS),
            "double_buffered": [t for t in TENSORS if draw(st.booleans())],
            "ports": transfer_ports("buf", list(TENSORS))
            + pe_ports("buf", [t for t in TENSORS if t not in in_reg], in_reg),
        },
    ]
    if in_reg:
        memories.append(
            {
                "name": "reg",
                "size_bits": 1 << 16,
                "shared_across": [],
                "tensors": in_reg,
                "double_buffered": [t for t in in_reg if draw(st.booleans())],
                "ports": transfer_ports("reg", in_reg) + pe_ports("reg", in_reg, []),
            }
        )
    arch = {
        "name": "random",
        "pe_array": {"dims": dims, "pipeline_depth_cycles": draw(st.integers(0, 2))},
        "memories": memories,
    }
    links = [("DRAM", "buf")] + ([("buf", "reg")] if in_reg else [])
    served = [link for link in links if draw(st.booleans())]
    if served:
        arch["dma_engines"] = [
            {
                "name": "dma",
                "links": [{"parent": p, "child": c} for p, c in served],
                "channels": draw(st.integers(1, 2)),
                "setup_cycles": draw(st.integers(0, 2)),
            }
        ]
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
    return {
        "arch": arch,
        "workload": workload,
        "mapping": {"loop_tree": tree},
        "reuse": draw(st.sampled_from(["retain", "strict"])),
    }


def load(case: dict):
    """The case's three inputs as spec objects, through the one loader."""
    a = architecture_from_dict(case["arch"], "arch.yaml")
    w = workload_from_dict(case["workload"], "workload.yaml")
    m = mapping_from_dict(case["mapping"], a, w, "mapping.yaml")
    return a, w, m
