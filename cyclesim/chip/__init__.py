"""chip: several cores on one chip — the multi-core architecture and mapping (arch, mapping),
routes over links and buses (routes), and the chip replay above today's single-core replay.

Names are imported from their modules on first use, so `cyclesim --help` (which registers the
`chip` command) loads neither pydantic nor the YAML loader."""

from importlib import import_module

_WHERE = {
    "Chip": "arch",
    "Core": "arch",
    "Medium": "arch",
    "MediumKind": "arch",
    "Offchip": "arch",
    "chip_from_dict": "arch",
    "load_chip": "arch",
    "ChipMapping": "mapping_types",
    "LayerMapping": "mapping_types",
    "TensorPlacement": "mapping_types",
    "Via": "mapping_types",
    "chip_mapping_from_dict": "mapping",
    "load_chip_mapping": "mapping",
}


def __getattr__(name: str):
    """Import the submodule that holds `name` on first use (PEP 562)."""
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"cyclesim.chip.{where}"), name)
    globals()[name] = value
    return value


__all__ = sorted(_WHERE)
