"""A DRAM device and its controller: geometry, a standard's timing, address mapping, queues.

Read from a built-in preset (`DDR4_8Gb_x8_2400`, `HBM2_8Gb_x128`, …) or from a DRAMsim3 `.ini`
file, the format most DRAM studies already have. Derived values (ranks from the channel size,
the burst's cycles, read and write delays, the address fields' bit positions) follow DRAMsim3's
own derivation so a config means the same thing in both tools.
"""

from __future__ import annotations

import configparser
import difflib
import math
import re
from dataclasses import dataclass, fields, replace
from pathlib import Path

from cyclesim.errors import SpecError

PROTOCOLS = ("DDR3", "DDR4", "GDDR5", "GDDR5X", "GDDR6", "LPDDR", "LPDDR3", "LPDDR4", "HBM", "HBM2")
ADDRESS_FIELDS = ("ch", "ra", "bg", "ba", "ro", "co")
REFRESH_POLICIES = ("RANK_LEVEL_STAGGERED", "RANK_LEVEL_SIMULTANEOUS", "BANK_LEVEL_STAGGERED")
MAX_CYCLES = 1 << 20  # no timing parameter of a real standard comes near a million cycles
# timing parameters counted in clock cycles (tREFI and tREFIb, intervals, are checked apart)
TIMING_CYCLES = (
    "AL", "CL", "CWL", "tRCD", "tRCDRD", "tRCDWR", "tRP", "tRAS", "tRTP", "tWR", "tWTR_L",
    "tWTR_S", "tRRD_L", "tRRD_S", "tFAW", "tCCD_L", "tCCD_S", "tRTRS", "tRFC", "tRFCb", "tPPD",
    "t32AW",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class DramConfig:
    """One memory system: identical channels, each with its own controller.

    Timing fields are in DRAM clock cycles (`tck_ns` long), with the JEDEC names every
    datasheet uses. `columns` counts device-width columns of a row (as DRAMsim3 regulates it).
    """

    name: str
    protocol: str
    channels: int
    ranks: int
    bankgroups: int
    banks_per_group: int
    rows: int
    columns: int
    device_width: int
    bus_width: int
    burst_length: int
    burst_cycles: int
    tck_ns: float
    AL: int
    CL: int
    CWL: int
    tRCD: int
    tRCDRD: int
    tRCDWR: int
    tRP: int
    tRAS: int
    tRTP: int
    tWR: int
    tWTR_L: int
    tWTR_S: int
    tRRD_L: int
    tRRD_S: int
    tFAW: int
    tCCD_L: int
    tCCD_S: int
    tRTRS: int
    tRFC: int
    tRFCb: int
    tREFI: int
    tREFIb: int
    tPPD: int
    t32AW: int
    address_mapping: str = "rochrababgco"
    queue_per_bank: bool = True
    close_page: bool = False
    refresh_policy: str = "RANK_LEVEL_STAGGERED"
    cmd_queue_size: int = 8
    trans_queue_size: int = 32
    unified_queue: bool = False
    hbm_dual_cmd: bool = True
    # the replay times this DRAM with these controllers in its loop (a `dram:` block's
    # `timing: controller`, engine/dram_loop.py), not the closed-form timer
    replay_controller: bool = False

    # ---- derived, as DRAMsim3 derives them -------------------------------------------
    @property
    def banks(self) -> int:
        return self.bankgroups * self.banks_per_group

    def bank_coords(self, flat: int) -> tuple[int, int, int, int]:
        """(channel, rank, bank group, bank) of a bank numbered across the whole device,
        channel by channel and rank by rank, as the engine's timer records it."""
        channel, rest = divmod(flat, self.ranks * self.banks)
        rank, rest = divmod(rest, self.banks)
        return (channel, rank, *divmod(rest, self.banks_per_group))

    @property
    def tRC(self) -> int:
        return self.tRAS + self.tRP

    @property
    def read_latency(self) -> int:
        """RL: cycles from a read command to its first data beat."""
        return self.AL + self.CL

    @property
    def write_latency(self) -> int:
        """WL: cycles from a write command to its first data beat."""
        return self.AL + self.CWL

    @property
    def read_delay(self) -> int:
        """Cycles from a read command to the end of its data burst."""
        return self.read_latency + self.burst_cycles

    @property
    def write_delay(self) -> int:
        """Cycles from a write command to the end of its data burst."""
        return self.write_latency + self.burst_cycles

    @property
    def is_hbm(self) -> bool:
        return self.protocol in ("HBM", "HBM2")

    @property
    def is_gddr(self) -> bool:
        return self.protocol.startswith("GDDR")

    @property
    def request_bytes(self) -> int:
        """Bytes one column command moves: the bus width times the burst length."""
        return self.bus_width // 8 * self.burst_length

    @property
    def row_bytes(self) -> int:
        """Bytes of one row across the rank's devices (what one activate opens)."""
        return self.columns * self.bus_width // 8

    def field_layout(self) -> dict[str, tuple[int, int]]:
        """(bit position, width) of each address field above the request offset."""
        widths = {
            "ch": _log2(self.channels),
            "ra": _log2(self.ranks),
            "bg": _log2(self.bankgroups),
            "ba": _log2(self.banks_per_group),
            "ro": _log2(self.rows),
            "co": _log2(self.columns) - _log2(self.burst_length),
        }
        tokens = [self.address_mapping[i : i + 2] for i in range(0, 12, 2)]
        layout, pos = {}, 0
        for token in reversed(tokens):  # the last field is the least significant
            layout[token] = (pos, widths[token])
            pos += widths[token]
        return layout

    def with_changes(self, **changes) -> DramConfig:
        """A copy with some fields changed (e.g. another address mapping), validated again."""
        return validate(replace(self, **changes), source=f"{self.name} (changed)")


def _log2(n: int) -> int:
    return max(0, n.bit_length() - 1)


# ---- presets: each standard's published timing and geometry ---------------------------
# DDR4-2400 (17-17-17), 8 Gb x8 devices on a 64-bit bus, 16 GiB per channel; HBM2 8 Gb
# x128 pseudo-channels at 1 GHz, 8 channels. Values are the speed bins' datasheet numbers, as
# DRAMsim3's files of the same names state them (HBM2's one read-to-precharge time is 5: the
# model has a single tRTP, as DRAMsim3 has, between the standard's tRTP_S 4 and tRTP_L 6).
_PRESETS: dict[str, dict] = {
    "DDR4_8Gb_x8_2400": dict(
        protocol="DDR4",
        channels=1,
        channel_size_mb=16384,
        bankgroups=4,
        banks_per_group=4,
        rows=65536,
        columns=1024,
        device_width=8,
        bus_width=64,
        BL=8,
        tCK=0.83,
        AL=0,
        CL=17,
        CWL=12,
        tRCD=17,
        tRP=17,
        tRAS=39,
        tRFC=420,
        tREFI=9360,
        tRRD_S=4,
        tRRD_L=6,
        tWTR_S=3,
        tWTR_L=9,
        tFAW=26,
        tWR=18,
        tRTP=9,
        tCCD_S=4,
        tCCD_L=6,
        tRTRS=1,
        address_mapping="rochrababgco",
        refresh_policy="RANK_LEVEL_STAGGERED",
        cmd_queue_size=8,
        trans_queue_size=32,
    ),
    "DDR4_8Gb_x16_3200": dict(
        protocol="DDR4",
        channels=1,
        channel_size_mb=8192,
        bankgroups=2,
        banks_per_group=4,
        rows=65536,
        columns=1024,
        device_width=16,
        bus_width=64,
        BL=8,
        tCK=0.63,
        AL=0,
        CL=22,
        CWL=16,
        tRCD=22,
        tRP=22,
        tRAS=52,
        tRFC=560,
        tREFI=12480,
        tRRD_S=9,
        tRRD_L=11,
        tWTR_S=4,
        tWTR_L=12,
        tFAW=48,
        tWR=24,
        tRTP=12,
        tCCD_S=4,
        tCCD_L=8,
        tRTRS=1,
        address_mapping="rochrababgco",
        refresh_policy="RANK_LEVEL_STAGGERED",
        cmd_queue_size=8,
        trans_queue_size=32,
    ),
    "HBM2_8Gb_x128": dict(
        protocol="HBM",
        channels=8,
        channel_size_mb=1024,
        bankgroups=4,
        banks_per_group=4,
        rows=32768,
        columns=64,
        device_width=128,
        bus_width=128,
        BL=4,
        tCK=1.0,
        CL=14,
        CWL=4,
        tRCDRD=14,
        tRCDWR=14,
        tRP=14,
        tRAS=34,
        tRFC=260,
        tREFI=3900,
        tREFIb=128,
        tRRD_S=4,
        tRRD_L=6,
        tWTR_S=6,
        tWTR_L=8,
        tFAW=30,
        tWR=16,
        tCCD_S=1,
        tCCD_L=2,
        tRTP=5,
        address_mapping="rorabgbachco",
        refresh_policy="RANK_LEVEL_STAGGERED",
        cmd_queue_size=8,
        trans_queue_size=32,
    ),
}

# DRAMsim3's defaults for keys a file leaves out (configuration.cc).
_DEFAULTS: dict[str, object] = dict(
    protocol="DDR3",
    bankgroups=2,
    banks_per_group=2,
    rows=1 << 16,
    columns=1 << 10,
    device_width=8,
    BL=8,
    channel_size_mb=1024,
    channels=1,
    bus_width=64,
    address_mapping="chrobabgraco",
    queue_structure="PER_BANK",
    row_buf_policy="OPEN_PAGE",
    cmd_queue_size=16,
    trans_queue_size=32,
    unified_queue=False,
    hbm_dual_cmd=True,
    bankgroup_enable=True,
    refresh_policy="RANK_LEVEL_STAGGERED",
    tCK=1.0,
    AL=0,
    CL=12,
    CWL=12,
    tCCD_L=6,
    tCCD_S=4,
    tRTRS=2,
    tRTP=5,
    tWTR_L=5,
    tWTR_S=5,
    tWR=10,
    tRP=10,
    tRRD_L=4,
    tRRD_S=4,
    tRAS=24,
    tRCD=10,
    tRFC=74,
    tRFCb=20,
    tREFI=7800,
    tREFIb=1950,
    tFAW=50,
    tPPD=0,
    t32AW=330,
    tRCDRD=24,
    tRCDWR=20,
)

PRESET_NAMES = tuple(_PRESETS)

# Keys DRAMsim3 reads that the timing here does not use (power, self-refresh, HMC, thermal,
# statistics), and the keys its shipped configs carry that DRAMsim3 itself ignores.
_DRAMSIM3_OTHER_KEYS = frozenset(
    "num_dies num_links link_width link_speed block_size xbar_queue_depth tCKE tCKESR tXS tXP "
    "tRPRE tWPRE ideal_memory_latency write_buf_size enable_self_refresh sref_threshold "
    "aggressive_precharging_enabled mega_tick epoch_period output_level output_prefix VDD IDD0 "
    "IDD1 IDD2P IDD2P0 IDD2P1 IDD2N IDD3P IDD3N IDD4W IDD4R IDD5AB IDD5PB IDD6x const_logic_power "
    "mat_dim_x mat_dim_y loc_mapping bank_order bank_layer_order chip_dim_x chip_dim_y amb_temp "
    "tRFC2 tRFC4 tWR2 queue_size refresh_strategy req_buffering_enabled IDD2Q IDD3Pf IDD3Ps "
    "IDD5 IDD6 IDD6L IDD7 IPP0 REFI REFRESH_PERIOD activation_window_depth logic_bg_power "
    "logic_max_power power_epoch_period tCAS tCKSRE tCMD tCWD tRFCPB tRREFD tRTP_L tRTP_S "
    "validation_output".split()  # all 86 configs of DRAMsim3's configs/ read (its DDR3 and
)  # LPDDR3 files spell tREFI as REFI, so DRAMsim3 refreshes them at its default 7800)

# .ini section/key -> our raw key (DRAMsim3's key names, kept as the file spells them)
_INI_KEYS = {
    "dram_structure": (
        "protocol",
        "bankgroups",
        "banks_per_group",
        "rows",
        "columns",
        "device_width",
        "BL",
        "bankgroup_enable",
        "hbm_dual_cmd",
    ),
    "timing": ("tCK", *TIMING_CYCLES, "tREFI", "tREFIb"),
    "system": (
        "channel_size",
        "channels",
        "bus_width",
        "address_mapping",
        "queue_structure",
        "row_buf_policy",
        "refresh_policy",
        "cmd_queue_size",
        "trans_queue_size",
        "unified_queue",
    ),
}


def load_dram_config(source: str | Path, overrides: dict | None = None) -> DramConfig:
    """A preset's name or a DRAMsim3 `.ini` path, with optional overrides (channels, mapping…)."""
    text = str(source)
    if text in _PRESETS:
        raw = dict(_DEFAULTS) | _PRESETS[text]
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
        raw, lines = _read_ini(path)
        raw = dict(_DEFAULTS) | raw
        name, origin = path.stem, str(path)
    for key, value in (overrides or {}).items():
        raw[key] = value
    return _build(raw, name, origin, lines)


def _read_ini(path: Path) -> tuple[dict, dict]:
    """The keys cyclesim uses from a DRAMsim3 ini, and the line each was found on."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(
            f"not UTF-8 text (byte {exc.start})", file=str(path), expected="a DRAMsim3 .ini"
        ) from None
    parser = configparser.ConfigParser(
        inline_comment_prefixes=(";", "#"), strict=True, interpolation=None
    )
    parser.optionxform = str  # keys are case-sensitive: tRCD vs trcd
    try:
        parser.read_string(text, source=str(path))
    except configparser.Error as exc:
        message, line, found = _ini_error(exc, text.splitlines())
        raise SpecError(
            message, file=str(path), line=line, found=found, expected="INI sections and keys"
        ) from None
    lines = _key_lines(text)
    _refuse_misplaced_keys(parser, path, lines)
    raw: dict = {}
    for section, keys in _INI_KEYS.items():
        if not parser.has_section(section):
            continue
        for key in keys:
            if parser.has_option(section, key):
                target = "channel_size_mb" if key == "channel_size" else key
                raw[target] = parser.get(section, key).strip()
                lines[target] = lines.get((section, key))
    return raw, lines


def _refuse_misplaced_keys(parser: configparser.ConfigParser, path: Path, lines: dict) -> None:
    """Refuse a key DRAMsim3 would silently ignore (using its default in its place) where it
    is clearly meant as one we read: in another section (a missing `[timing]` header puts the
    timing under `[dram_structure]`), in another case (`trcd`), or misspelt (`tRCDD`).

    Keys DRAMsim3 reads for power, thermal or statistics, and the extra keys its shipped configs
    carry (`tRFC2`, `queue_size`, ...), pass: they are not mistakes."""
    home = {key: section for section, keys in _INI_KEYS.items() for key in keys}
    given = {key for section in parser.sections() for key in parser.options(section)}
    given = {key for key in given if key in home and parser.has_option(home[key], key)}
    missing = sorted(set(home) - given)
    for section in parser.sections():
        for key in parser.options(section):
            if home.get(key) == section or key in _DRAMSIM3_OTHER_KEYS:
                continue
            if key in home:
                problem = f"key '{key}' belongs in [{home[key]}], not [{section}]"
            else:
                folded = [k for k in missing if k.lower() == key.lower()]
                close = folded or difflib.get_close_matches(key, missing, n=2, cutoff=0.8)
                if not close:  # no key DRAMsim3 reads: a typo all the same (CWL-x)
                    section_keys = _INI_KEYS.get(section)
                    known = f"; [{section}] takes {', '.join(section_keys)}" if section_keys else ""
                    problem = f"unknown key '{key[:40]}' in [{section[:40]}]{known}"
                else:
                    names = " or ".join(f"'{k}'" for k in close)
                    hint = "keys are case-sensitive; " if folded else ""
                    problem = f"unknown key '{key}' in [{section}]: {hint}did you mean {names}?"
            raise SpecError(
                f"{problem} (DRAMsim3 would ignore it and use its default)",
                file=str(path),
                line=lines.get((section, key)),
            )


def _ini_error(exc: configparser.Error, lines: list[str]) -> tuple[str, int | None, str | None]:
    """configparser's complaint as (message, line, the line's text): its own text repeats the
    file name and, for a line it cannot parse, gives no line number."""
    # the offending text is not quoted: the file may not be an .ini at all (/etc/passwd)
    if isinstance(exc, configparser.MissingSectionHeaderError):
        return "not a DRAMsim3 .ini: a line before the first [section]", exc.lineno, None
    if isinstance(exc, configparser.ParsingError):
        line = exc.errors[0][0]  # (line, repr of its text)
        return "neither a [section] nor a 'key = value' line", line, None
    if isinstance(exc, configparser.DuplicateOptionError):
        return f"key '{exc.option}' given twice in [{exc.section}]", exc.lineno, None
    if isinstance(exc, configparser.DuplicateSectionError):
        return f"section [{exc.section}] given twice", exc.lineno, None
    return str(exc).splitlines()[0], getattr(exc, "lineno", None), None


def _key_lines(text: str) -> dict:
    """(section, key) -> 1-based line, for error messages."""
    out, section = {}, ""
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("["):
            section = stripped.strip("[]").strip()
        elif "=" in stripped and not stripped.startswith((";", "#")):
            out[(section, stripped.split("=", 1)[0].strip())] = number
    return out


def _build(raw: dict, name: str, origin: str, lines: dict) -> DramConfig:
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


def validate(config: DramConfig, source: str, lines: dict | None = None) -> DramConfig:
    """Checks that need several fields at once (a changed copy goes through them again)."""
    if config.tREFI // config.ranks < 1:
        raise SpecError(
            "refresh interval below one cycle per rank",
            file=source,
            field="tREFI",
            found=config.tREFI,
        )
    _check_refresh_leaves_time(config, source, lines or {})
    for f in fields(config):
        if f.name.startswith("t") and f.name != "tck_ns":
            value = getattr(config, f.name)
            if not 0 <= value <= MAX_CYCLES:
                raise SpecError(
                    "out of range",
                    file=source,
                    field=f.name,
                    found=value,
                    expected=f"0 to {MAX_CYCLES} cycles",
                )
    mapping = config.address_mapping
    if not re.fullmatch(r"([a-z]{2}){6}", mapping) or sorted(
        mapping[i : i + 2] for i in range(0, 12, 2)
    ) != sorted(ADDRESS_FIELDS):
        raise SpecError(
            "not a permutation of the six fields",
            file=source,
            field="address_mapping",
            found=mapping,
            expected="ch ra bg ba ro co, each once, most significant first",
        )
    return config


def _check_refresh_leaves_time(config: DramConfig, source: str, lines: dict) -> None:
    """Refuse refresh timing that leaves a bank no time to serve a request between refreshes.

    As in DRAMsim3 (controller.cc: a waiting refresh is issued first, and the command queues of
    the rank it refreshes are skipped until it is), a request is served only if its activate and
    column command fit between the end of one refresh of its bank and the next refresh, which
    first precharges: with tREFI = 100 and tRFC = 90 neither tool ever serves a read (DRAMsim3
    runs forever too). So the refresh period of a bank must exceed the refresh's own time plus
    tRP + the activate-to-column delay; every real standard clears this by far.
    """
    c = config
    if c.is_gddr or c.is_hbm:
        act_to_column = max(c.tRCDRD, c.tRCDWR)
    else:
        act_to_column = max(0, c.tRCD - c.AL)
    if c.refresh_policy == "BANK_LEVEL_STAGGERED":
        period, busy, names = c.tREFIb * c.ranks * c.banks, max(c.tRFC, c.tRFCb), "tREFIb"
        every = f"tREFIb x {c.ranks * c.banks} banks"
    elif c.refresh_policy == "RANK_LEVEL_SIMULTANEOUS":
        period, busy, names, every = c.tREFI, c.tRFC, "tREFI", "tREFI"
    else:
        period, busy, names = c.tREFI // c.ranks * c.ranks, c.tRFC, "tREFI"
        every = "tREFI" if c.ranks == 1 else f"tREFI / {c.ranks} ranks x {c.ranks}"
    need = busy + c.tRP + act_to_column
    if period <= need:
        raise SpecError(
            f"refresh leaves no time to serve a request: each bank is refreshed every {period} "
            f"cycles ({every}) and a refresh, a precharge and an activate take {need} "
            f"(tRFC {busy} + tRP {c.tRP} + activate to column {act_to_column})",
            file=source,
            field=names,
            line=lines.get(names),
            found=getattr(c, names),
            expected=f"a refresh period above {need} cycles (DRAMsim3 would never serve it either)",
        )
