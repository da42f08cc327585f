"""Reading a DRAMsim3 `.ini` file: the keys cyclesim uses and the line each is on, and the
refusal of a key DRAMsim3 would silently ignore (misplaced, miscased or misspelt)."""

from __future__ import annotations

import configparser
import difflib
from pathlib import Path

from cyclesim.dram.config import TIMING_CYCLES
from cyclesim.errors import SpecError

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


def read_ini(path: Path) -> tuple[dict, dict]:
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
