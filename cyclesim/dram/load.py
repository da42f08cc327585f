"""A DramConfig from a built-in preset (`DDR4_8Gb_x8_2400`, `HBM2_8Gb_x128`, …) or from a
DRAMsim3 `.ini` file, the format most DRAM studies already have. Derived values (ranks from the
channel size, the burst's cycles) follow DRAMsim3's own derivation so a config means the same
thing in both tools.
"""

from __future__ import annotations

import difflib
import math
from pathlib import Path

from cyclesim.dram.config import (
    ADDRESS_FIELDS,
    MAX_CYCLES,
    PROTOCOLS,
    REFRESH_POLICIES,
    TIMING_CYCLES,
    DramConfig,
    validate,
)
from cyclesim.dram.dramsim3_ini import read_ini
from cyclesim.dram.presets import DEFAULTS, PRESET_NAMES, PRESETS
from cyclesim.errors import SpecError


def load_dram_config(source: str | Path, overrides: dict | None = None) -> DramConfig:
    """A preset's name or a DRAMsim3 `.ini` path, with optional overrides (channels, mapping…)."""
    text = str(source)
    if text in PRESETS:
        raw = dict(DEFAULTS) | PRESETS[text]
        name, origin, lines = text, f"preset {text}", {}
    else:
        path = Path(text)
        if not path.is_file():
            close = difflib.get_close_matches(text, PRESET_NAMES, n=1, cutoff=0.8)
            raise SpecError(
                "no such DRAM config" + (f": did you mean {close[0]}?" if close else ""),
                file=text,
                found=text,
                expected=f"a DRAMsim3 .ini file or a preset: {', '.join(PRESET_NAMES)}",
            )
        raw, lines = read_ini(path)
        raw = dict(DEFAULTS) | raw
        name, origin = path.stem, str(path)
    for key, value in (overrides or {}).items():
        raw[key] = value
    return _build(raw, name, origin, lines)


def _build(raw: dict, name: str, origin: str, lines: dict) -> DramConfig:
    """The DramConfig of a DRAMsim3 .ini's parsed keys, each checked with the file, key and
    line.

    Over 80 lines: small readers (integer, power of two, choice) shared by every key, then the
    keys in the order DRAMsim3's .ini lists them.
    """

    def err(key: str, message: str, found: object, expected: str) -> SpecError:
        return SpecError(
            message, file=origin, field=key, line=lines.get(key), found=found, expected=expected
        )

    def integer(key: str, low: int = 0, high: int = MAX_CYCLES) -> int:
        value = raw[key]
        try:
            number = int(str(value), 0) if not isinstance(value, int) else value
        except ValueError:
            raise err(key, "not an integer", value, f"an integer in [{low}, {high}]") from None
        if isinstance(value, bool) or not low <= number <= high:
            raise err(key, "out of range", value, f"an integer in [{low}, {high}]")
        return number

    def power_of_two(key: str, high: int = 1 << 24) -> int:
        number = integer(key, 1, high)
        if number & (number - 1):
            raise err(key, "not a power of two", number, "a power of two")
        return number

    def boolean(key: str) -> bool:
        value = raw[key]
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("true", "1", "yes", "on"):
            return True
        if text in ("false", "0", "no", "off"):
            return False
        raise err(key, "not a boolean", value, "true or false")

    def choice(key: str, options: tuple[str, ...]) -> str:
        value = str(raw[key]).strip()
        if value not in options:
            raise err(key, "unknown value", value, f"one of {', '.join(options)}")
        return value

    protocol = choice("protocol", PROTOCOLS)
    if protocol == "HBM2":
        protocol = "HBM"  # DRAMsim3 times HBM2 configs with its HBM rules
    try:
        tck = float(raw["tCK"])
    except (TypeError, ValueError):
        raise err("tCK", "not a number", raw["tCK"], "a clock period in ns") from None
    if not (math.isfinite(tck) and 0.05 <= tck <= 100):
        raise err("tCK", "out of range", raw["tCK"], "a clock period in ns, 0.05 to 100")
    bankgroups = power_of_two("bankgroups", 64)
    banks_per_group = power_of_two("banks_per_group", 64)
    if not boolean("bankgroup_enable"):
        banks_per_group, bankgroups = banks_per_group * bankgroups, 1
    burst_length = power_of_two("BL", 64)
    columns = power_of_two("columns")
    burst_cycles = {
        "GDDR5": burst_length // 4,
        "GDDR5X": burst_length // 8,
        "GDDR6": burst_length // 16,
    }.get(protocol, burst_length // 2)
    if protocol.startswith("GDDR"):
        columns *= burst_length
    elif protocol == "HBM":
        columns *= 2
    rows = power_of_two("rows", 1 << 22)
    device_width = power_of_two("device_width", 1024)
    bus_width = power_of_two("bus_width", 4096)
    if bus_width < device_width:
        raise err(
            "bus_width",
            "narrower than one device",
            bus_width,
            f"at least device_width ({device_width})",
        )
    channel_size_mb = integer("channel_size_mb", 1, 1 << 24)
    # ranks from the channel's size, as DRAMsim3's Config::CalculateSize
    devices_per_rank = bus_width // device_width
    megs_per_bank = columns * device_width // 8 * (rows // 1024) // 1024
    megs_per_rank = max(1, megs_per_bank * bankgroups * banks_per_group * devices_per_rank)
    ranks = 1 if megs_per_rank > channel_size_mb else channel_size_mb // megs_per_rank
    if ranks & (ranks - 1):
        raise err(
            "channel_size_mb",
            "gives a rank count that is not a power of two",
            channel_size_mb,
            f"a multiple of {megs_per_rank} MB by a power of two",
        )
    mapping = str(raw["address_mapping"]).strip()
    tokens = [mapping[i : i + 2] for i in range(0, len(mapping), 2)]
    if len(mapping) != 12 or sorted(tokens) != sorted(ADDRESS_FIELDS):
        raise err(
            "address_mapping",
            "not a permutation of the six fields",
            mapping,
            "12 characters: ch ra bg ba ro co, each once, most significant first",
        )
    queue = choice("queue_structure", ("PER_BANK", "PER_RANK"))
    page = choice("row_buf_policy", ("OPEN_PAGE", "CLOSE_PAGE"))
    config = DramConfig(
        name=name,
        protocol=protocol,
        channels=power_of_two("channels", 256),
        ranks=ranks,
        bankgroups=bankgroups,
        banks_per_group=banks_per_group,
        rows=rows,
        columns=columns,
        device_width=device_width,
        bus_width=bus_width,
        burst_length=burst_length,
        burst_cycles=burst_cycles,
        tck_ns=tck,
        **{key: integer(key) for key in TIMING_CYCLES},
        tREFI=integer("tREFI", 1),
        tREFIb=integer("tREFIb", 1),
        address_mapping=mapping,
        queue_per_bank=queue == "PER_BANK",
        close_page=page == "CLOSE_PAGE",
        refresh_policy=choice("refresh_policy", REFRESH_POLICIES),
        cmd_queue_size=integer("cmd_queue_size", 1, 4096),
        trans_queue_size=integer("trans_queue_size", 1, 1 << 16),
        unified_queue=boolean("unified_queue"),
        hbm_dual_cmd=boolean("hbm_dual_cmd"),
    )
    return validate(config, source=origin, lines=lines)
