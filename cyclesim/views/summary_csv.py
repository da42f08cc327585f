"""`cyclesim run --csv DIR`: summary tables in the manner of SCALE-Sim's COMPUTE_REPORT and
BANDWIDTH_REPORT, one row per run and one per memory, for spreadsheets and other tools.

compute_report.csv: cycles, the four phases, non-compute cycles per cause (cause_<name>_cycles,
summing onload + stall + offload), MACs, PE utilisation.
memory_report.csv: per memory, values and bits read and written, the average bandwidth used
(bits per cycle over the run) and its share of the total width of its ports over all its
instances (`instances`: one per array position it is not shared across; accesses are totals).
With per-action energies in the architecture, both add `energy` (the run's total; each
memory's share with its leak, empty for a memory without energies) and `energy_unit` (the
architecture's, as `run` prints it), and energy_report.csv holds the energy table itself: one
row per Einsum, component, tensor and action (the MACs under tensor '(MACs)', leakage under
Einsum '(whole run)' and tensor '(leak)'), summing to compute_report's `energy`.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from cyclesim.outputs import atomic_path
from cyclesim.results import Result
from cyclesim.results.energy import has_energies
from cyclesim.spec import Architecture


def compute_report(res: Result, arch: Architecture, run: str = "run") -> pd.DataFrame:
    """One row: the run's cycles split in phases and causes, its MACs and utilisation."""
    pes = 1
    for _, size in arch.pe_array.dims:
        pes *= size
    peak_macs = res.cycles * pes * arch.pe_array.macs_per_pe_per_cycle
    row = dict(
        run=run,
        **res.cycle_columns(),
        macs=res.macs,
        pe_count=pes,
        # SCALE-Sim's "compute utilisation": cycles the array steps over all cycles
        compute_utilisation_pct=round(100.0 * res.ideal_compute_cycles / res.cycles, 3)
        if res.cycles
        else 0.0,
        # its "overall utilisation": MACs done over what every PE could do in the run
        mac_utilisation_pct=round(100.0 * res.macs / peak_macs, 3) if peak_macs else 0.0,
        reuse=res.reuse,
        isolate_einsums=res.isolate_einsums,
    )
    if res.energy is not None:
        row |= dict(energy=float(res.energy.energy.sum()), energy_unit=arch.energy_unit)
    return pd.DataFrame([row])


def memory_report(res: Result, arch: Architecture, run: str = "run") -> pd.DataFrame:
    """One row per memory, outermost first: reads and writes (values, bits) and bandwidth used."""
    acc = res.detailed_accesses
    energy = res.energy
    rows = []
    for mem in arch.memories:
        mine = acc[acc["memory"] == mem.name]
        reads = mine[mine["action"] == "read"]
        writes = mine[mine["action"] == "write"]
        bits = int(mine["bits"].sum())
        width = sum(p.width_bits for p in mem.ports)  # of one instance
        instances = arch.instances_of(mem)  # the accesses are totals over every instance
        per_cycle = bits / res.cycles if res.cycles else 0.0
        rows.append(
            dict(
                run=run,
                memory=mem.name,
                read_values=int(reads["values"].sum()),
                read_bits=int(reads["bits"].sum()),
                write_values=int(writes["values"].sum()),
                write_bits=int(writes["bits"].sum()),
                instances=instances,
                port_width_bits=width,
                bandwidth_bits_per_cycle=round(per_cycle, 6),
                bandwidth_used_pct=round(100.0 * per_cycle / (width * instances), 3)
                if width
                else 0.0,
            )
        )
        if energy is not None:
            mine_energy = energy.loc[energy.component == mem.name, "energy"].sum()
            given = mem.energy is not None  # a memory without energies: empty, not 0
            rows[-1] |= dict(
                energy=float(mine_energy) if given else None, energy_unit=arch.energy_unit
            )
    return pd.DataFrame(rows)


def energy_report(res: Result, arch: Architecture, run: str = "run") -> pd.DataFrame:
    """The energy table (results/energy.py) with the run's name and the energies' unit."""
    table = res.energy.copy()  # (Result's own is not to be changed)
    table.insert(0, "run", run)
    table["energy_unit"] = arch.energy_unit
    return table


CSV_NAMES = ("compute_report.csv", "memory_report.csv", "energy_report.csv")


def write_summary_csv(
    res: Result, arch: Architecture, directory: str | Path, run: str = "run"
) -> list[Path]:
    """Write compute_report.csv, memory_report.csv and, with per-action energies in the
    architecture, energy_report.csv into directory; return their paths."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / name for name in CSV_NAMES[: 3 if has_energies(arch) else 2]]
    reports = (compute_report, memory_report, energy_report)
    for report, path in zip(reports, paths, strict=False):
        with atomic_path(path) as temporary:
            report(res, arch, run).to_csv(temporary, index=False)
    return paths
