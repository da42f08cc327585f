"""Small chips for hand-derived tests: cores of one PE whose top memory (1024 b/cycle) feeds
it every cycle, so a step of m iterations lasts exactly m cycles (today's replay: everything
resident in the backing store, one iteration per cycle, no onload or offload)."""

from __future__ import annotations

from hypothesis import strategies as st

from cyclesim.chip import chip_from_dict, chip_mapping_from_dict
from cyclesim.chip.api import replay_chip
from cyclesim.spec import workload_from_dict

TINY_CORE = {
    "name": "tiny",
    "pe_array": {"dims": {"X": 1}},
    "memories": [
        {"name": "sram", "size_bits": 1 << 20,
         "ports": [{"name": "rw", "kind": "read_write", "width_bits": 1024}]}
    ],
}  # fmt: skip


def make_chip(cores=("c0", "c1"), links=(), buses=(), dram=None, prefer=None, device=None):
    """A chip of TINY_CORE cores; `device` a DRAM preset behind the off-chip port (1 GHz)."""
    dram = dram or {"name": "rw", "kind": "read_write", "width_bits": 64}
    ic = {"links": list(links), "buses": list(buses)}
    if prefer:
        ic["prefer"] = prefer
    offchip = {"ports": [dram]}
    if device:
        offchip["dram"] = {"config": device}
    return chip_from_dict({
        "name": "chip", "cores": [{"name": c, "architecture": TINY_CORE} for c in cores],
        "offchip": offchip, "interconnect": ic, "clock_mhz": 1000,
    })  # fmt: skip


def einsum(name, inputs, output, ranks):
    return {"name": name, "ranks": ranks,
            "inputs": [{"tensor": t, "projection": p} for t, p in inputs],
            "outputs": [{"tensor": output[0], "projection": output[1]}]}  # fmt: skip


CHAIN = [  # A = X * Y on one layer, Z = A * V on the next, 8 bits each
    lambda m: einsum("e1", [("X", ["m"]), ("Y", ["m"])], ("A", ["m"]), {"m": m}),
    lambda m: einsum("e2", [("A", ["m"]), ("V", ["m"])], ("Z", ["m"]), {"m": m}),
]


# X, Y and V already on the cores that read them; Z stays where it is made
LOCAL = [{"tensor": t, "home": "local"} for t in ("X", "Y", "V")] + [
    {"tensor": "Z", "home": "kept"}
]
# Z = A * V over m and n: split over n, every core reads all of A
MC = einsum("e2", [("A", ["m"]), ("V", ["n"])], ("Z", ["m", "n"]), {"m": 8, "n": 2})


def make_workload(einsums):
    return workload_from_dict({"name": "w", "default_bits_per_value": 8, "einsums": einsums})


def step_tree(einsum: dict, step: dict[str, int]) -> list:
    """One step's loop tree: every tensor in the top memory, one temporal loop per rank."""
    tensors = [a["tensor"] for a in einsum["inputs"] + einsum["outputs"]]
    tree = [{"type": "storage", "memory": "sram", "tensors": tensors}]
    tree += [
        {"type": "temporal", "rank": r, "bound": step.get(r, s)} for r, s in einsum["ranks"].items()
    ]
    return tree + [{"type": "compute", "einsum": einsum["name"]}]


def layer(einsum: dict, cores, split=(), tile=()):
    step = dict(einsum["ranks"])
    for r, p in split:
        step[r] //= p
    for r, s in tile:
        step[r] = s
    return {"einsum": einsum["name"], "cores": list(cores),
            "split": [{"rank": r, "parts": p} for r, p in split],
            "tile": [{"rank": r, "size": s} for r, s in tile], "loop_tree": step_tree(einsum, step)}  # fmt: skip


def run(chip, einsums, layers, tensors, groups=()):
    work = make_workload(einsums)
    data = {"name": "m", "layers": layers, "tensors": tensors,
            "groups": [{"layers": list(g)} for g in groups]}  # fmt: skip
    mapping = chip_mapping_from_dict(data, chip, work)
    return replay_chip(chip, work, mapping)


def causes(res, core: str) -> list[tuple]:
    """(phase, cause, where, competitor core, cycles) of one core, in time-independent order."""
    return sorted((r.phase, r.cause, r.where, r.competitor_core, r.cycles)
                  for r in res.rows if r.core == core)  # fmt: skip


def assert_sums(res) -> None:
    for core in res.run.plan.chip.core_names:
        total = res.compute_cycles[core] + sum(r.cycles for r in res.rows if r.core == core)
        assert total == res.cycles, core


@st.composite
def chip_runs(draw):
    """Two layers (A = X * Y, Z = A * V) over 2-3 cores joined by a bus or links, split and
    tiled at random, A sent over the network or through DRAM, multicast or not."""
    n_cores = draw(st.integers(2, 3))
    cores = [f"c{i}" for i in range(n_cores)]
    width = draw(st.sampled_from([8, 16, 64]))
    burst = draw(st.sampled_from([None, 32, 128]))
    lat = draw(st.integers(0, 4))
    dram = {"name": "rw", "kind": "read_write", "width_bits": draw(st.sampled_from([8, 32, 64])),
            "latency_cycles": draw(st.integers(0, 6)), "burst_bits": draw(st.sampled_from([32, 64]))}  # fmt: skip
    if draw(st.booleans()):
        buses = [{"name": "b", "cores": cores + ["dram"], "width_bits": width,
                  "latency_cycles": lat, **({"burst_bits": burst} if burst else {})}]  # fmt: skip
        links = []
    else:
        buses = []
        ends = cores + ["dram"]
        links = [{"name": f"l{i}{j}", "cores": [a, b], "width_bits": width, "latency_cycles": lat,
                  "bidirectional": True, **({"burst_bits": burst} if burst else {})}
                 for i, a in enumerate(ends) for j, b in enumerate(ends) if i < j]  # fmt: skip
    device = draw(st.sampled_from([None, "DDR4_8Gb_x16_3200"]))
    chip = make_chip(cores=tuple(cores), links=links, buses=buses, dram=dram, device=device)
    m = draw(st.sampled_from([4, 8, 12]))
    e1 = CHAIN[0](m)
    # e2 reads A whole on every core when split over n (a multicast of A), else its own part
    over_n = draw(st.booleans())
    e2 = (
        einsum("e2", [("A", ["m"]), ("V", ["n"])], ("Z", ["m", "n"]), {"m": m, "n": 2})
        if over_n
        else CHAIN[1](m)
    )
    layers = []
    for e in (e1, e2):
        on = draw(st.sampled_from([cores[:1], cores[-1:], cores[:2], cores[1:3] or cores[:1]]))
        split_rank = "n" if e is e2 and over_n else "m"
        part = e["ranks"][split_rank] // len(on) if split_rank == "m" else m
        tile = draw(st.sampled_from([d for d in (1, 2, 3, 4, 6, 12) if part % d == 0]))
        split = [(split_rank, len(on))] if len(on) > 1 else []
        layers.append(layer(e, on, split=split, tile=[("m", tile)]))
    tensors = [{"tensor": "X", "home": draw(st.sampled_from(["dram", "local", "c0"]))},
               {"tensor": "Y", "home": "local"}, {"tensor": "V", "home": "dram"},
               {"tensor": "A", "via": draw(st.sampled_from(["network", "dram"])),
                "multicast": draw(st.booleans())},
               {"tensor": "Z", "home": draw(st.sampled_from(["dram", "kept"]))}]  # fmt: skip
    groups = [("e1", "e2")] if draw(st.booleans()) else []
    return chip, [e1, e2], layers, tensors, groups
