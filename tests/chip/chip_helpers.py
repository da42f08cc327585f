"""Small chips for hand-derived tests: cores of one PE whose top memory (1024 b/cycle) feeds
it every cycle, so a step of m iterations lasts exactly m cycles (today's replay: everything
resident in the backing store, one iteration per cycle, no onload or offload)."""

from __future__ import annotations

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


def make_chip(cores=("c0", "c1"), links=(), buses=(), dram=None, prefer=None):
    dram = dram or {"name": "rw", "kind": "read_write", "width_bits": 64}
    ic = {"links": list(links), "buses": list(buses)}
    if prefer:
        ic["prefer"] = prefer
    return chip_from_dict({
        "name": "chip", "cores": [{"name": c, "architecture": TINY_CORE} for c in cores],
        "offchip": {"ports": [dram]}, "interconnect": ic,
    })  # fmt: skip


def einsum(name, inputs, output, ranks):
    return {"name": name, "ranks": ranks,
            "inputs": [{"tensor": t, "projection": p} for t, p in inputs],
            "outputs": [{"tensor": output[0], "projection": output[1]}]}  # fmt: skip


CHAIN = [  # A = X * Y on one layer, Z = A * V on the next, 8 bits each
    lambda m: einsum("e1", [("X", ["m"]), ("Y", ["m"])], ("A", ["m"]), {"m": m}),
    lambda m: einsum("e2", [("A", ["m"]), ("V", ["m"])], ("Z", ["m"]), {"m": m}),
]


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
