"""Energy of a replay: the replayed access and MAC counts times the architecture's energies.

One row per (einsum, component, tensor, action): `read`, `write`, `update` (a write of an
output's partial sums from below, Timeloop's update), `mac` on the PE array, and `leak` (per
instance per cycle over the whole run, booked to no Einsum). Actions are bits divided by the
memory's `bits_per_action`, kept fractional as AccelForge keeps them. Components without
energies in the architecture contribute no rows. Energies are in the architecture's
`energy_unit` (default pJ), which every view of them prints.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from cyclesim.results.schema import as_is, json_rows

if TYPE_CHECKING:
    import pandas as pd

    from cyclesim.results.result import Result
    from cyclesim.spec.arch import Architecture

PE_ARRAY = "pe_array"
# energies of no tensor and of no Einsum, under parenthesised names a reader of the table,
# the JSON's by_tensor or the CSV tells apart from a tensor's or an Einsum's (an empty name
# read as a blank key in JSON and as NaN from a CSV)
MACS = "(MACs)"  # the tensor of a MAC row: the PE array's arithmetic touches no one tensor
LEAK = "(leak)"  # the tensor of a leak row
WHOLE_RUN = "(whole run)"  # the Einsum of a leak row: leakage over every cycle of the run
ENERGY_COLUMNS = ["einsum", "component", "tensor", "action", "bits", "actions", "energy"]
_JSON_ROW = dict(
    einsum=as_is, component=as_is, tensor=as_is, action=as_is, bits=int, actions=float, energy=float
)


def has_energies(arch: Architecture) -> bool:
    """True when the architecture gives any energy (a memory's or the PE array's)."""
    return arch.pe_array.energy is not None or any(m.energy is not None for m in arch.memories)


def energy_table(res: Result, arch: Architecture) -> pd.DataFrame:
    """Energy per (einsum, component, tensor, action) of one replay, in `arch.energy_unit`
    (also the table's `attrs["energy_unit"]`); MAC rows have tensor MACS, leak rows einsum
    WHOLE_RUN and tensor LEAK."""
    rows: list[tuple] = []  # in ENERGY_COLUMNS order
    memories = {m.name: m for m in arch.memories}
    detailed = res.detailed_accesses
    for (einsum, memory, tensor, action), bits in _bits_by_action(detailed).items():
        energy = memories[memory].energy
        if energy is None or not bits:
            continue
        actions = bits / energy.bits_per_action
        per_action = {"read": energy.read, "write": energy.write, "update": energy.update}[action]
        rows.append((einsum, memory, tensor, action, bits, actions, actions * per_action))
    compute = arch.pe_array.energy
    if compute is not None:
        for einsum, macs in _macs_by_einsum(res).items():
            rows.append((einsum, PE_ARRAY, MACS, "mac", 0, macs, macs * compute.mac))
    dims = arch.pe_array.dim_sizes
    for memory in arch.memories:
        if memory.energy is not None and memory.energy.leak_per_cycle:
            cycles = res.cycles * arch.instances_of(memory)
            leak = cycles * memory.energy.leak_per_cycle
            rows.append((WHOLE_RUN, memory.name, LEAK, "leak", 0, cycles, leak))
    if compute is not None and compute.leak_per_cycle:
        cycles = res.cycles * math.prod(dims.values())
        rows.append((WHOLE_RUN, PE_ARRAY, LEAK, "leak", 0, cycles, cycles * compute.leak_per_cycle))
    import pandas as pd  # only when energies are given: a plain run stays free of pandas

    table = pd.DataFrame(rows, columns=ENERGY_COLUMNS).astype({"bits": "int64"})
    table.attrs["energy_unit"] = arch.energy_unit  # the table says its unit wherever it goes
    return table


def energy_json(table: pd.DataFrame, unit: str) -> dict:
    """The `energy` object of `run --json`: the unit of its energies, totals, by Einsum
    (dynamic: leak belongs to no Einsum), component, tensor (the MACs under '(MACs)', leak
    under '(leak)') and action, and the rows."""

    def by(column: str, rows: pd.DataFrame = table) -> dict[str, float]:
        return {
            str(k): float(v) for k, v in rows.groupby(column, sort=False)["energy"].sum().items()
        }

    leak = float(table.loc[table.action == "leak", "energy"].sum())
    total = float(table.energy.sum())
    return dict(
        unit=unit,
        total=total,
        dynamic=total - leak,
        leak=leak,
        by_einsum=by("einsum", table[table.action != "leak"]),
        by_component=by("component"),
        by_tensor=by("tensor"),
        by_action=by("action"),
        rows=json_rows(table.itertuples(), _JSON_ROW),
    )


def _bits_by_action(detailed: pd.DataFrame) -> dict[tuple[str, str, str, str], int]:
    """Bits per (einsum, memory, tensor, action), a write from below being an `update`."""
    out: dict[tuple[str, str, str, str], int] = {}
    for r in detailed.itertuples():
        action = "update" if r.direction == "write_from_below" else r.action
        key = (r.einsum, r.memory, r.tensor, action)
        out[key] = out.get(key, 0) + int(r.bits)
    return out


def _macs_by_einsum(res: Result) -> dict[str, int]:
    out: dict[str, int] = {}
    for leaf in res.raw.plan.leaves:
        macs = 0 if leaf.is_copy else leaf.steps * leaf.macs_per_step
        out[leaf.einsum] = out.get(leaf.einsum, 0) + macs
    return out
