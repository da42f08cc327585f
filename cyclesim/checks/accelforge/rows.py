"""The rows of an AccelForge comparison and AccelForge's naming conventions for access rows.

Shared by `check` (which builds the rows) and `explain` (which names the mechanism of each
difference); neither imports the other's private parts, and `explain` does not import `check`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from cyclesim.checks.accelforge.spec import ENERGY_UNIT, AfSpec

ACTIONS = ("read", "write")
Key = tuple[str, str, str, str]  # einsum, memory, tensor, action


@dataclass(frozen=True, slots=True)
class AccessRow:
    """Bits of one (einsum, memory, tensor, action) from each source; None = no such source."""

    einsum: str
    memory: str
    tensor: str
    action: str
    replay_bits: int
    closed_form_bits: int
    model_bits: float
    accelforge_bits: float | None

    @property
    def key(self) -> Key:
        """(einsum, memory, tensor, action)."""
        return (self.einsum, self.memory, self.tensor, self.action)

    @property
    def reference_bits(self) -> float:
        """AccelForge's number: the real one when it ran, else our model of it."""
        return self.model_bits if self.accelforge_bits is None else self.accelforge_bits


@dataclass(frozen=True, slots=True)
class EnergyRow:
    """Energy of one (einsum, memory, tensor, action) — `compute` on the compute node, tensor ''.

    `replay` is the replayed counts times the imported per-action energies; `model` our model of
    AccelForge; `accelforge` the real one (None when it did not run).
    """

    einsum: str
    memory: str
    tensor: str
    action: str
    replay: float
    model: float
    accelforge: float | None

    @property
    def reference(self) -> float:
        """AccelForge's energy: the real one when it ran, else our model's."""
        return self.model if self.accelforge is None else self.accelforge

    @property
    def equal(self) -> bool:
        """The replay's energy equals AccelForge's (up to floating-point summation order).

        Relative: per-action energies from hwcomponents are around 1e-14 J, so an absolute
        tolerance must sit far below them (ENERGY_ABS_TOLERANCE). Against the real accelforge,
        to its precision: it reports results in float32 (FLOAT32_TOLERANCE)."""
        return energies_equal(self.replay, self.reference, float32=self.accelforge is not None)


ENERGY_ABS_TOLERANCE = 1e-21  # J: a zeptojoule, far below any per-action energy
# accelforge 1.0.467 keeps its results in float32 (accelforge.util.NUMPY_FLOAT_TYPE): an
# energy it reports is actions x float32(energy per action), rounded again to float32, so it
# is within two float32 roundings (2 x 2**-24) of the exact product; allow 4 ulps.
FLOAT32_TOLERANCE = 2.0**-22


def energies_equal(first: float, second: float, *, float32: bool = False) -> bool:
    """Equal up to floating-point summation order (relative 1e-9), or to float32 precision
    when `second` was reported by the real accelforge (`float32`)."""
    tolerance = FLOAT32_TOLERANCE if float32 else 1e-9
    return math.isclose(first, second, rel_tol=tolerance, abs_tol=ENERGY_ABS_TOLERANCE)


@dataclass(frozen=True, slots=True)
class Latency:
    """Replay cycles split in phases, and AccelForge's bound (max over components, per Einsum)."""

    replay_cycles: int
    onload_cycles: int
    ideal_compute_cycles: int
    stall_cycles: int
    offload_cycles: int
    stall_by_cause: tuple[tuple[str, int], ...]
    model_einsum_cycles: tuple[tuple[str, float], ...]
    model_cycles: float
    accelforge_cycles: float | None

    @property
    def bound_cycles(self) -> float:
        """AccelForge's total latency: the real one when it ran, else our model's."""
        return self.model_cycles if self.accelforge_cycles is None else self.accelforge_cycles


@dataclass(frozen=True, slots=True)
class AccelForgeCheck:
    """The side-by-side comparison of one AccelForge spec."""

    files: tuple[str, ...]
    reuse: str
    isolate_einsums: bool
    latency: Latency
    accesses: tuple[AccessRow, ...]
    explanations: tuple[str, ...]
    notes: tuple[str, ...]
    accelforge_version: str | None
    accelforge_missing: str | None
    energy: tuple[EnergyRow, ...] = ()  # empty when the spec gives no energies
    energy_sources: tuple[tuple[str, str, str], ...] = ()  # (component, action, where from)

    def energy_total(self, source: str) -> float | None:
        """Total dynamic energy of `source` (replay, model, accelforge); None if it is missing."""
        values = [getattr(row, source) for row in self.energy]
        return None if not values or None in values else float(sum(values))

    def to_json(self) -> dict:
        """The --json object: cycles, accelforge_latency, accesses, explanations, and context."""
        lat = self.latency
        return {
            "spec": list(self.files),
            "reuse": self.reuse,
            "isolate_einsums": self.isolate_einsums,
            "cycles": lat.replay_cycles,
            "accelforge_latency": lat.bound_cycles,
            "accelforge_latency_source": "accelforge"
            if lat.accelforge_cycles is not None
            else "model",
            "accelforge_einsum_latency": dict(lat.model_einsum_cycles),
            "onload_cycles": lat.onload_cycles,
            "ideal_compute_cycles": lat.ideal_compute_cycles,
            "stall_cycles": lat.stall_cycles,
            "offload_cycles": lat.offload_cycles,
            "non_compute_cycles_by_cause": dict(lat.stall_by_cause),
            "accesses": [
                {
                    "einsum": a.einsum,
                    "memory": a.memory,
                    "tensor": a.tensor,
                    "action": a.action,
                    "replay_bits": a.replay_bits,
                    "closed_form_bits": a.closed_form_bits,
                    "model_bits": _number(a.model_bits),
                    "accelforge_bits": _number(a.accelforge_bits),
                }
                for a in self.accesses
            ],
            "energy": [
                {
                    "einsum": e.einsum,
                    "memory": e.memory,
                    "tensor": e.tensor,
                    "action": e.action,
                    "replay": e.replay,
                    "model": e.model,
                    "accelforge": e.accelforge,
                }
                for e in self.energy
            ],
            "energy_unit": ENERGY_UNIT,
            "energy_totals": {
                source: self.energy_total(source) for source in ("replay", "model", "accelforge")
            },
            "energy_sources": [
                {"component": c, "action": a, "source": source}
                for c, a, source in self.energy_sources
            ],
            "explanations": list(self.explanations),
            "notes": list(self.notes),
            "accelforge_version": self.accelforge_version,
            "accelforge_missing": self.accelforge_missing,
        }


def _number(value: float | None) -> float | int | None:
    if value is None:
        return None
    return int(value) if float(value).is_integer() else float(value)


def copy_renames(spec: AfSpec) -> dict[tuple[str, str], str]:
    """(copy Einsum, destination tensor) -> source tensor: AccelForge books copies under the source."""
    return {
        (e.name, t): e.copy_source
        for e in spec.workload.einsums
        if e.is_copy_operation
        for t in e.output_tensor_names
    }


def convention_bits(spec: AfSpec, accesses, *, physical: bool = False) -> dict[Key, int]:
    """Access rows (objects with einsum, tensor, memory, action, bits) keyed in AccelForge's names.

    Copy Einsums are booked under their source tensor. Unless `physical`, a copy that moves data
    down the hierarchy is also booked AccelForge's way, as a read of the lower memory and a write
    of the upper one (AccelForge treats every copy as a write-back towards the outer memory).
    """
    return {key: int(v) for key, v in convention_sums(spec, accesses, physical=physical).items()}


def convention_sums(
    spec: AfSpec, accesses, *, value: str = "bits", physical: bool = False
) -> dict[Key, float]:
    """`convention_bits` for any numeric attribute `value` of the rows (bits, energy)."""
    accesses = list(accesses)
    renames = copy_renames(spec)
    order = {m.name: i for i, m in enumerate(spec.arch.memories)}
    out: dict[Key, float] = {}
    downward: dict[str, bool] = {}
    for e in spec.workload.einsums:
        if e.is_copy_operation and not physical:
            rows = [(r.tensor, r.memory) for r in accesses if r.einsum == e.name]
            src = [order[m] for t, m in rows if t == e.copy_source]
            dst = [order[m] for t, m in rows if t != e.copy_source]
            downward[e.name] = bool(src and dst) and max(dst) > max(src)
    for r in accesses:
        if r.action not in ACTIONS:
            continue
        action = r.action
        if downward.get(r.einsum):
            action = "write" if action == "read" else "read"
        key = (r.einsum, r.memory, renames.get((r.einsum, r.tensor), r.tensor), action)
        out[key] = out.get(key, 0) + getattr(r, value)
    return out
