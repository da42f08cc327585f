"""A DRAM device and its controller: geometry, a standard's timing, address mapping, queues.

The DramConfig fields, the values derived from them (read and write delays, the address fields'
bit positions, as DRAMsim3 derives them) and the checks that need several fields at once.
Built by load.py from a preset (presets.py) or a DRAMsim3 `.ini` file (dramsim3_ini.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields, replace

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
