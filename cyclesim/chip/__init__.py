"""chip: several cores on one chip — the multi-core architecture and mapping (arch, mapping),
routes over links and buses (routes), and the chip replay above today's single-core replay."""

from cyclesim.chip.arch import Chip, Core, Medium, MediumKind, Offchip, chip_from_dict, load_chip
from cyclesim.chip.mapping import (
    ChipMapping,
    LayerMapping,
    TensorPlacement,
    Via,
    chip_mapping_from_dict,
    load_chip_mapping,
)

__all__ = [
    "Chip",
    "ChipMapping",
    "Core",
    "LayerMapping",
    "Medium",
    "MediumKind",
    "Offchip",
    "TensorPlacement",
    "Via",
    "chip_from_dict",
    "chip_mapping_from_dict",
    "load_chip",
    "load_chip_mapping",
]
