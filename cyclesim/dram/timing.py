"""Command-to-command timing: after command X at cycle t, command Y may issue at t + delay.

Four scopes, as JEDEC states them and DRAMsim3 tabulates them: the same bank, other banks of
the same bank group, other bank groups of the same rank, other ranks; plus rank-wide commands
(refresh). The derivation of every delay mirrors DRAMsim3's `timing.cc`, so the two tools
agree on what is legal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from cyclesim.dram.config import DramConfig

# Command kinds, in DRAMsim3's order (its command trace prints them by these names); Final
# literals, so that the compiled controller (dram/native.py) uses them as constants
READ: Final = 0
READ_PRECHARGE: Final = 1
WRITE: Final = 2
WRITE_PRECHARGE: Final = 3
ACTIVATE: Final = 4
PRECHARGE: Final = 5
REFRESH_BANK: Final = 6
REFRESH: Final = 7
SREF_ENTER: Final = 8
SREF_EXIT: Final = 9
KINDS: Final = 10
NAMES = (
    "read", "read_p", "write", "write_p", "activate", "precharge",
    "refresh_bank", "refresh", "self_refresh_enter", "self_refresh_exit",
)  # fmt: skip
READS = (READ, READ_PRECHARGE)
WRITES = (WRITE, WRITE_PRECHARGE)

Delays = tuple[tuple[int, int], ...]  # (next command kind, delay in cycles)


@dataclass(frozen=True, slots=True)
class TimingTables:
    """For each command kind, the delays it imposes in each scope."""

    same_bank: tuple[Delays, ...]
    same_bankgroup: tuple[Delays, ...]
    other_bankgroups: tuple[Delays, ...]
    other_ranks: tuple[Delays, ...]
    same_rank: tuple[Delays, ...]


def timing_tables(c: DramConfig) -> TimingTables:
    """Derive every command-to-command delay from the standard's parameters."""
    burst = c.burst_cycles
    one_group = c.bankgroups == 1  # no bank groups: the _S values apply throughout
    read_to_read_l = max(burst, c.tCCD_S if one_group else c.tCCD_L)
    read_to_read_s = max(burst, c.tCCD_S)
    read_to_read_o = burst + c.tRTRS
    read_to_write = c.read_latency + burst - c.write_latency + c.tRTRS
    read_to_write_o = c.read_delay + burst + c.tRTRS - c.write_delay
    read_to_precharge = c.AL + c.tRTP
    readp_to_act = c.AL + burst + c.tRTP + c.tRP
    write_to_read_l = c.write_delay + (c.tWTR_S if one_group else c.tWTR_L)
    write_to_read_s = c.write_delay + c.tWTR_S
    write_to_read_o = c.write_delay + burst + c.tRTRS - c.read_delay
    write_to_write_l = max(burst, c.tCCD_S if one_group else c.tCCD_L)
    write_to_write_s = max(burst, c.tCCD_S)
    write_to_write_o = burst
    write_to_precharge = c.write_latency + burst + c.tWR
    read_to_activate = read_to_precharge + c.tRP
    write_to_activate = write_to_precharge + c.tRP
    act_to_act_l = c.tRRD_S if one_group else c.tRRD_L
    if c.is_gddr or c.is_hbm:
        act_to_read, act_to_write = c.tRCDRD, c.tRCDWR
    else:
        act_to_read = act_to_write = c.tRCD - c.AL

    same_bank: list[Delays] = [()] * KINDS
    same_group: list[Delays] = [()] * KINDS
    other_groups: list[Delays] = [()] * KINDS
    other_ranks: list[Delays] = [()] * KINDS
    same_rank: list[Delays] = [()] * KINDS

    def column(to_read_l, to_write_l, to_read_s, to_write_s, to_read_o, to_write_o):
        return (
            ((READ, to_read_l), (WRITE, to_write_l), (READ_PRECHARGE, to_read_l), (WRITE_PRECHARGE, to_write_l)),
            ((READ, to_read_s), (WRITE, to_write_s), (READ_PRECHARGE, to_read_s), (WRITE_PRECHARGE, to_write_s)),
            ((READ, to_read_o), (WRITE, to_write_o), (READ_PRECHARGE, to_read_o), (WRITE_PRECHARGE, to_write_o)),
        )  # fmt: skip

    after_read = column(read_to_read_l, read_to_write, read_to_read_s, read_to_write,
                        read_to_read_o, read_to_write_o)  # fmt: skip
    after_write = column(write_to_read_l, write_to_write_l, write_to_read_s, write_to_write_s,
                         write_to_read_o, write_to_write_o)  # fmt: skip
    same_bank[READ] = after_read[0] + ((PRECHARGE, read_to_precharge),)
    same_bank[WRITE] = after_write[0] + ((PRECHARGE, write_to_precharge),)
    same_bank[READ_PRECHARGE] = (
        (ACTIVATE, readp_to_act), (REFRESH, read_to_activate),
        (REFRESH_BANK, read_to_activate), (SREF_ENTER, read_to_activate),
    )  # fmt: skip
    same_bank[WRITE_PRECHARGE] = (
        (ACTIVATE, write_to_activate), (REFRESH, write_to_activate),
        (REFRESH_BANK, write_to_activate), (SREF_ENTER, write_to_activate),
    )  # fmt: skip
    for kind, tables in ((READ, after_read), (READ_PRECHARGE, after_read),
                         (WRITE, after_write), (WRITE_PRECHARGE, after_write)):  # fmt: skip
        same_group[kind], other_groups[kind], other_ranks[kind] = tables
    same_bank[ACTIVATE] = (
        (ACTIVATE, c.tRC), (READ, act_to_read), (WRITE, act_to_write),
        (READ_PRECHARGE, act_to_read), (WRITE_PRECHARGE, act_to_write), (PRECHARGE, c.tRAS),
    )  # fmt: skip
    same_group[ACTIVATE] = ((ACTIVATE, act_to_act_l), (REFRESH_BANK, c.tRC))
    other_groups[ACTIVATE] = ((ACTIVATE, c.tRRD_S), (REFRESH_BANK, c.tRC))
    same_bank[PRECHARGE] = (
        (ACTIVATE, c.tRP), (REFRESH, c.tRP), (REFRESH_BANK, c.tRP), (SREF_ENTER, c.tRP),
    )  # fmt: skip
    if c.is_gddr or c.protocol == "LPDDR4":
        same_group[PRECHARGE] = ((PRECHARGE, c.tPPD),)
        other_groups[PRECHARGE] = ((PRECHARGE, c.tPPD),)
    # A per-bank refresh constrains the other banks only (DRAMsim3 applies no same-bank delay).
    same_group[REFRESH_BANK] = ((ACTIVATE, c.tRFC), (REFRESH_BANK, c.tREFI))
    other_groups[REFRESH_BANK] = ((ACTIVATE, c.tRFC), (REFRESH_BANK, c.tREFI))
    same_rank[REFRESH] = ((ACTIVATE, c.tRFC), (REFRESH, c.tRFC), (SREF_ENTER, c.tRFC))
    return TimingTables(
        tuple(same_bank), tuple(same_group), tuple(other_groups), tuple(other_ranks),
        tuple(same_rank),
    )  # fmt: skip
