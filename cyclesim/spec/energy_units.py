"""The units an architecture's per-action energies may be written in, and conversions.

An architecture declares one `energy_unit` for all its energies (`memories[].energy`,
`pe_array.energy`); every energy cyclesim prints is in that unit, and says so. The default is
the picojoule, the unit of Accelergy/Timeloop and ZigZag tables; AccelForge's and hwcomponents'
energies are joules, so the AccelForge importer writes `energy_unit: J`.
"""

from __future__ import annotations

from typing import Literal

EnergyUnit = Literal["J", "mJ", "uJ", "nJ", "pJ", "fJ"]
DEFAULT_ENERGY_UNIT: EnergyUnit = "pJ"
PICOJOULES_PER_UNIT: dict[str, float] = {
    "J": 1e12,
    "mJ": 1e9,
    "uJ": 1e6,
    "nJ": 1e3,
    "pJ": 1.0,
    "fJ": 1e-3,
}


def to_picojoules(value: float, unit: str) -> float:
    """`value` in `unit` as picojoules (the sweep table's `energy_pj` column)."""
    return value * PICOJOULES_PER_UNIT[unit]
