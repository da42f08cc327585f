"""Random small schedules for the differential test: architecture, workload and mapping as the
spec's YAML dicts (what a user writes), loaded through cyclesim.spec.

Scope (grown feature by feature as each one agreed or had its difference recorded):
GEMM Z[m,n] += A[m,k] * B[k,n] (a quarter with the affine A[m, n + k]) with ranks of 1-4; DRAM above one on-chip buffer (two levels), or with per-PE registers below it (three levels);
1-3 PEs along X and optionally 1-2 along Y, a spatial loop per dimension over distinct ranks
(multicast of the tensors it does not index, a spatial reduction when it is k, instances per
PE for the registers); ports toward the parent shared (one read-write port) or separate, of
4-64 b; bursts of 4-32 b; latencies 0-2; one or two slots per tensor; partial sums wider than
final values; reduction loops above the buffer; retain and strict; PE pipeline depth 0-2.
fused_schedules: two Einsums under a `sequential` split sharing an intermediate kept on chip,
with and without loops above the split, in a roomy or a tight buffer (its docstring says
the rest).
"""

from __future__ import annotations

import math

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
    # an affine index in a quarter of them: A[m, n + k], anywhere A may sit: its register can
    # keep its value while n and k move (D16), its tile in buf or a register can be the
    # previous one again (D17)
    affine = draw(st.integers(0, 3)) == 0
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
    proj_a = ["m", "n + k"] if affine else PROJ["A"]
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
                    {"tensor": "A", "projection": proj_a},
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


# ---------------------------------------------------------------- two fused Einsums
FUSED_TENSORS = ("I", "W0", "AO", "W1", "O")
FUSED_PROJ = {
    "I": ["m", "k"],
    "W0": ["k", "n"],
    "AO": ["m", "n"],
    "W1": ["n", "p"],
    "O": ["m", "p"],
}
BRANCH = {"producer": ("I", "W0", "AO"), "consumer": ("AO", "W1", "O")}
BRANCH_RANKS = {"producer": ("m", "n", "k"), "consumer": ("m", "n", "p")}
OUTPUTS = ("AO", "O")


def _footprint(tensor: str, loops_below: list[dict]) -> int:
    """Values of a tile: per rank of the tensor, the product of the loops below over it."""
    n = 1
    for loop in loops_below:
        if loop["rank"] in FUSED_PROJ[tensor]:
            n *= loop["bound"]
    return n


@st.composite
def fused_schedules(draw) -> dict:
    """Two fused Einsums under a `sequential` split: producer AO[m,n] += I[m,k] * W0[k,n],
    consumer O[m,p] += AO[m,n] * W1[n,p]; AO kept in buf above the split (made and consumed
    on chip, written to DRAM once), with 0-2 loops (over m, n) above the split or none. The
    other tensors each have a buf node above the split or inside their branch. buf is either
    roomy or tight: its size between the largest leaf path's need (what the check before the
    run accepts) and the sum of every tile, so fills wait for room across branches. DRAM and
    buf only, one PE; ports, bursts, latencies, slots, partial sums, pipeline depth and a DMA
    engine drawn as in `schedules`."""
    sizes = {r: draw(st.integers(1, 4 if r in "mn" else 3)) for r in ("m", "n", "k", "p")}
    outer: list[dict] = []
    if draw(st.integers(0, 2)):  # a third of the cases: no loop above the split
        for r in draw(st.permutations(["m", "n"])):
            f = draw(st.sampled_from(_divisors(sizes[r])[1:] or [1]))
            if f > 1 and draw(st.integers(0, 3)):
                outer.append({"type": "temporal", "rank": r, "bound": f})
    inner = {r: sizes[r] // math.prod(x["bound"] for x in outer if x["rank"] == r) for r in sizes}
    branch_loops = {
        e: [
            {"type": "temporal", "rank": r, "bound": inner[r]}
            for r in draw(st.permutations(list(BRANCH_RANKS[e])))
            if inner[r] > 1
        ]
        for e in BRANCH
    }
    # where buf keeps each tensor: ("above", i) after the first i loops above the split, or
    # ("branch", j) after the first j loops of its Einsum's branch; AO always above
    at = {"AO": ("above", draw(st.integers(0, len(outer))))}
    for t in ("I", "W0", "W1", "O"):
        e = "producer" if t in BRANCH["producer"] else "consumer"
        if draw(st.booleans()):
            at[t] = ("above", draw(st.integers(0, len(outer))))
        else:
            at[t] = ("branch", draw(st.integers(0, len(branch_loops[e]))))

    def place(nodes: list[dict], where: str, tensors: tuple[str, ...]) -> list[dict]:
        out = []
        for i in range(len(nodes) + 1):
            kept = [t for t in tensors if at[t] == (where, i)]
            if kept:
                out.append({"type": "storage", "memory": "buf", "tensors": kept})
            if i < len(nodes):
                out.append(nodes[i])
        return out

    branches = [
        place(branch_loops[e], "branch", BRANCH[e]) + [{"type": "compute", "einsum": e}]
        for e in BRANCH
    ]
    tree = [{"type": "storage", "memory": "DRAM", "tensors": list(FUSED_TENSORS)}]
    tree += place(outer, "above", FUSED_TENSORS)
    tree.append({"type": "sequential", "branches": branches})

    bits = {t: draw(st.sampled_from([4, 8, 16])) for t in FUSED_TENSORS}
    psum = {t: bits[t] * draw(st.sampled_from([1, 1, 2, 4])) for t in OUTPUTS}
    double = [t for t in FUSED_TENSORS if draw(st.booleans())]

    # what one leaf path keeps in buf at once (every buf node on it, slots x tile), and all
    need, total = 0, 0
    counted: set[str] = set()
    for e in BRANCH:
        path_need = 0
        for t in FUSED_TENSORS:
            where, i = at[t]
            if where == "branch" and t not in BRANCH[e]:
                continue
            below = outer[i:] + branch_loops[e] if where == "above" else branch_loops[e][i:]
            values = _footprint(t, below)
            tile = values * (psum[t] if t in OUTPUTS else bits[t]) * (2 if t in double else 1)
            path_need += tile
            if t not in counted:
                counted.add(t)
                total += tile
        need = max(need, path_need)
    if total > need and draw(st.integers(0, 2)):
        size = draw(st.integers(need, total - 1))
    else:
        size = 1 << 20

    if draw(st.booleans()):
        dram_ports = [_port(draw, "dram_rw", "read_write")]
    else:
        dram_ports = [_port(draw, "dram_rd", "read"), _port(draw, "dram_wr", "write")]
    up = [(t, "read_to_above") for t in OUTPUTS]
    down = [(t, "write_from_above") for t in FUSED_TENSORS]
    if draw(st.booleans()):
        buf_ports = _serving(draw, "buf_x", "read_write", up + down)
    else:
        buf_ports = _serving(draw, "buf_xr", "read", up) + _serving(draw, "buf_xw", "write", down)
    buf_ports += _serving(draw, "buf_pr", "read", [(t, "read_to_below") for t in FUSED_TENSORS])
    buf_ports += _serving(draw, "buf_pw", "write", [(t, "write_from_below") for t in OUTPUTS])
    arch = {
        "name": "random_fused",
        "pe_array": {"dims": {"X": 1}, "pipeline_depth_cycles": draw(st.integers(0, 2))},
        "memories": [
            {
                "name": "DRAM",
                "size_bits": None,
                "tensors": list(FUSED_TENSORS),
                "ports": dram_ports,
            },
            {
                "name": "buf",
                "size_bits": size,
                "tensors": list(FUSED_TENSORS),
                "double_buffered": double,
                "ports": buf_ports,
            },
        ],
    }
    if draw(st.booleans()):
        arch["dma_engines"] = [
            {
                "name": "dma",
                "links": [{"parent": "DRAM", "child": "buf"}],
                "channels": draw(st.integers(1, 2)),
                "setup_cycles": draw(st.integers(0, 2)),
            }
        ]
    tensors = {t: {"bits_per_value": bits[t]} for t in FUSED_TENSORS}
    for t in OUTPUTS:
        tensors[t]["partial_sum_bits"] = psum[t]
    workload = {
        "tensors": tensors,
        "einsums": [
            {
                "name": e,
                "ranks": {r: sizes[r] for r in BRANCH_RANKS[e]},
                "inputs": [{"tensor": t, "projection": FUSED_PROJ[t]} for t in BRANCH[e][:2]],
                "outputs": [{"tensor": BRANCH[e][2], "projection": FUSED_PROJ[BRANCH[e][2]]}],
            }
            for e in BRANCH
        ],
    }
    return {
        "arch": arch,
        "workload": workload,
        "mapping": {"loop_tree": tree},
        "reuse": draw(st.sampled_from(["retain", "strict"])),
    }
