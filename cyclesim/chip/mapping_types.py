"""The multi-core mapping as the replay reads it (frozen dataclasses): per layer its cores, split,
tile and loop trees (LayerMapping), per tensor where it lives and how it moves (TensorPlacement,
Via), and the whole mapping with its groups (ChipMapping)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from cyclesim.errors import SpecError
from cyclesim.spec.mapping import Mapping
from cyclesim.spec.workload import Workload
from cyclesim.spec.yamlio import format_path, line_of


class Via(enum.Enum):
    """How a tensor reaches the cores that read it."""

    NETWORK = "network"  # over links or a bus, from where it is to the consumer's top memory
    DRAM = "dram"  # written to the off-chip memory by its producer, read back by its consumer
    KEPT = "kept"  # already on the consumer's core (its producer ran there): nothing moves


@dataclass(frozen=True, slots=True)
class LayerMapping:
    """One layer on its cores: split ranks (parts multiply to the core count; cores take the
    parts in row-major order of the split list), step tile per core, loop tree per core."""

    einsum: str
    cores: tuple[str, ...]
    split: tuple[tuple[str, int], ...]  # (rank, parts)
    tile: tuple[tuple[str, int], ...]  # (rank, extent of one step on one core)
    loop_trees: tuple[tuple[str, Mapping], ...]  # (core, one step's loop tree)
    step_workload: Workload  # the layer cut to one step's extent (what each loop tree maps)
    path: str = ""

    def loop_tree(self, core: str) -> Mapping:
        return dict(self.loop_trees)[core]


@dataclass(frozen=True, slots=True)
class TensorPlacement:
    tensor: str
    home: str  # network input: 'dram', 'local' or a core; output: 'dram' or 'kept'; intermediate: unused
    via: Via
    route: tuple[str, ...] | None  # None: any link/bus, shortest route
    multicast: bool
    path: str = ""


@dataclass(frozen=True, slots=True)
class ChipMapping:
    name: str
    layers: tuple[LayerMapping, ...]  # workload order
    groups: tuple[tuple[str, ...], ...]  # in run order; layers of one group interleave per step
    tensors: tuple[TensorPlacement, ...]  # every tensor of the workload (defaults filled in)
    source: str = "<chip mapping>"
    lines: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    def layer(self, einsum: str) -> LayerMapping:
        for lm in self.layers:
            if lm.einsum == einsum:
                return lm
        raise KeyError(einsum)

    def placement(self, tensor: str) -> TensorPlacement:
        for t in self.tensors:
            if t.tensor == tensor:
                return t
        raise KeyError(tensor)

    def error(self, message: str, loc: tuple | str = (), **kw: Any) -> SpecError:
        loc = loc_of(loc) if isinstance(loc, str) else loc
        return SpecError(
            message, file=self.source, field=format_path(loc) or None,
            line=line_of(self.lines, loc), **kw,
        )  # fmt: skip


def loc_of(path: str) -> tuple:
    out: list = []
    for part in path.replace("]", "").split("."):
        if not part:
            continue
        name, *idx = part.split("[")
        out.append(name)
        out.extend(int(i) for i in idx)
    return tuple(out)
