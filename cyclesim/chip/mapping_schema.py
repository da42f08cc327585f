"""The chip mapping YAML's validation models (pydantic): the fields a file may hold, their types,
bounds and defaults; chip/mapping.py validates a file against them. The models keep their leading
underscore, as spec/arch_schema.py's do: pydantic names them in the messages users read."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from cyclesim.spec.limits import MAX_RANK_SIZE
from cyclesim.spec.mapping import _AnyNode
from cyclesim.spec.yamlio import StrictModel


class _Split(StrictModel):
    rank: str
    parts: int = Field(ge=1, le=MAX_RANK_SIZE)


class _Tile(StrictModel):
    rank: str
    size: int = Field(ge=1, le=MAX_RANK_SIZE)


class _Layer(StrictModel):
    einsum: str
    cores: list[str] = Field(min_length=1)
    split: list[_Split] = Field([], description="ranks cut across cores; parts multiply to cores")
    tile: list[_Tile] = Field([], description="per core, the step's extent along each rank")
    loop_tree: list[_AnyNode] | str | None = Field(
        None, description="one step's loop tree for every core (inline, or a mapping file)"
    )
    loop_trees: dict[str, list[_AnyNode] | str] = Field(
        {}, description="core -> one step's loop tree on that core"
    )


class _Tensor(StrictModel):
    tensor: str
    home: str | None = Field(
        None,
        description="inputs: where they start (the off-chip memory, by its name: dram unless "
        "offchip.name says otherwise; a core; or local: on every core that reads them); "
        "outputs: the off-chip memory or kept. Default: the off-chip memory",
    )
    via: Literal["network", "dram", "kept"] = "network"
    route: list[str] | None = Field(None, description="links/buses the transfer may use")
    multicast: bool = Field(True, description="one transfer to every core needing the same part")


class _Group(StrictModel):
    layers: list[str] = Field(min_length=1)


class _ChipMapping(StrictModel):
    name: str | None = None
    layers: list[_Layer] = Field(min_length=1)
    groups: list[_Group] = Field([], description="fused layers; default: one group per layer")
    tensors: list[_Tensor] = []
