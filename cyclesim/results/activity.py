"""The Activity model: what each port, DMA channel, buffer and the PE array did over a window.

Plain records (built by results.activity_build from a traced run) that the VCD, FST, Perfetto,
plot and HTML views draw from; kept apart from the builders so a view reads the shapes alone.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

# (re-exported: views never import the engine)
from cyclesim.engine.loop import gc_paused as gc_paused
from cyclesim.results.record_columns import numbered
from cyclesim.results.wait_causes import bank_path
from cyclesim.vocabulary import BankCommand

COMPUTE = "compute"  # the PE array's state while it completes a step every cycle


class Busy(NamedTuple):
    """A resource busy over cycles [start, end) moving `bits` of `tensor` for `who`."""

    start: int
    end: int
    tensor: str
    who: str
    bits: int
    kind: str = ""  # fill, reload, write-back (transfers); empty for single bursts


class Track:
    """Busy records of one port stored by column (about 30 bytes each instead of a hundred);
    iterating gives Busy records in time order. A long run holds hundreds of thousands."""

    __slots__ = ("starts", "ends", "tensors", "whos", "bits", "kinds", "_numbered")

    def __init__(self) -> None:
        self.starts, self.ends, self.bits = array("q"), array("q"), array("q")
        self.tensors: list[str] = []
        self.whos: list[str] = []
        self.kinds: list[str] = []
        self._numbered: dict = {}

    def numbered(self, column: str) -> tuple[np.ndarray, list]:
        """numbered() of a column of strings ("tensors", "whos"): see numbered_column."""
        return numbered_column(self, column)

    def add(self, start: int, end: int, tensor: str, who: str, bits: int, kind: str) -> None:
        self.starts.append(start)
        self.ends.append(end)
        self.tensors.append(tensor)
        self.whos.append(who)
        self.bits.append(bits)
        self.kinds.append(kind)

    def __iter__(self) -> Iterator[Busy]:
        columns = (self.starts, self.ends, self.tensors, self.whos, self.bits, self.kinds)
        return map(Busy._make, zip(*columns, strict=True))

    def take(self, indices: Iterable[int]) -> list[Busy]:
        """The records at these positions, made without walking the others."""
        columns = (self.starts, self.ends, self.tensors, self.whos, self.bits, self.kinds)
        return [Busy._make(c[i] for c in columns) for i in indices]

    def __len__(self) -> int:
        return len(self.starts)

    def __bool__(self) -> bool:
        return len(self.starts) > 0


class States:
    """The PE array's states (PeState) stored by column; iterating gives PeState in time order."""

    __slots__ = ("starts", "ends", "phases", "states", "wheres", "einsums", "tiles", "_numbered")

    def __init__(self) -> None:
        self.starts, self.ends = array("q"), array("q")
        self.phases: list[str] = []
        self.states: list[str] = []
        self.wheres: list[str] = []
        self.einsums: list[str] = []
        self.tiles: list[int | None] = []
        self._numbered: dict = {}

    def numbered(self, column: str) -> tuple[np.ndarray, list]:
        """numbered() of a column of strings ("states", "wheres", ...): see numbered_column."""
        return numbered_column(self, column)

    def __iter__(self) -> Iterator[PeState]:
        columns = (self.starts, self.ends, self.phases, self.states, self.wheres, self.einsums, self.tiles)  # fmt: skip
        return map(PeState._make, zip(*columns, strict=True))

    def take(self, indices: Iterable[int]) -> list[PeState]:
        """The states at these positions, made without walking the others."""
        columns = (self.starts, self.ends, self.phases, self.states, self.wheres, self.einsums, self.tiles)  # fmt: skip
        return [PeState._make(c[i] for c in columns) for i in indices]

    def __len__(self) -> int:
        return len(self.starts)


@dataclass(frozen=True, slots=True)
class Segments:
    """The PE array's segments over the window, as columns: segment i computes tile tiles[i]
    of Einsum einsums[leaves[i]] over [starts[i], ends[i]) (clipped to the window)."""

    starts: np.ndarray  # int64, in time order
    ends: np.ndarray
    leaves: np.ndarray  # the leaf of each segment: an index into einsums
    tiles: np.ndarray
    einsums: tuple[str, ...]  # per leaf, its Einsum's name

    def __len__(self) -> int:
        return len(self.starts)


def prefill_numbered(records: Track | States, column: str, held: tuple[np.ndarray, list]) -> None:
    """Give numbered_column the numbering of a column its builder made from numbers it had
    (equal to numbered(column)): the views then number no column of strings."""
    if len(held[0]) != len(getattr(records, column)):
        raise ValueError(
            f"{column}: {len(held[0])} numbers for {len(getattr(records, column))} values"
        )
    held[0].flags.writeable = False
    records._numbered[column] = held


def numbered_column(records: Track | States, column: str) -> tuple[np.ndarray, list]:
    """numbered(records.<column>) made once per column (the waveforms and the Perfetto JSON
    number the same ones), again only if the column has grown since; the numbers read-only."""
    values = getattr(records, column)
    held = records._numbered.get(column)
    if held is None or len(held[0]) != len(values):
        codes, distinct = numbered(values)
        codes.flags.writeable = False  # shared by every view that asks
        held = records._numbered[column] = (codes, distinct)
    return held


class PeState(NamedTuple):
    """The PE array over [start, end): `compute` or the root cause of its non-compute cycles.

    Within a segment that a narrow port slows down, the segment's steps come first and its
    spatial stall cycles after them (cycle by cycle they interleave; the counts are exact).
    """

    start: int
    end: int
    phase: str  # onload, compute, offload
    state: str  # compute or a cause (stall_span.CAUSES)
    where: str  # tensor@memory, port, competitor in words ('' for compute)
    einsum: str  # the Einsum computing or stalled ('' outside segments)
    tile: int | None  # segment index while in a segment


@dataclass(slots=True)
class Buffer:
    """One storage node's slots over time, by column: at times[i], counts[i] tiles are resident
    and slot j holds tile slot_tiles[j][i] (-1: empty). `changes` gives them as tuples."""

    memory: str
    tensor: str
    label: str
    slots: int
    tile_bits: int
    times: array = field(default_factory=lambda: array("q"))
    counts: array = field(default_factory=lambda: array("q"))
    slot_tiles: list[array] = field(default_factory=list)

    def record(self, t: int, count: int, held: list[int | None]) -> None:
        """The state from cycle t on; a second state at the same cycle replaces the first."""
        if not self.slot_tiles:
            self.slot_tiles = [array("q") for _ in range(self.slots)]
        if self.times and self.times[-1] == t:
            self.counts[-1] = count
            for column, k in zip(self.slot_tiles, held, strict=True):
                column[-1] = -1 if k is None else k
            return
        self.times.append(t)
        self.counts.append(count)
        for column, k in zip(self.slot_tiles, held, strict=True):
            column.append(-1 if k is None else k)

    @property
    def changes(self) -> Iterator[tuple[int, int, tuple[int | None, ...]]]:
        """(t, tiles resident, tile index per slot or None), in time order."""
        for i, (t, n) in enumerate(zip(self.times, self.counts, strict=True)):
            yield t, n, tuple(None if c[i] < 0 else c[i] for c in self.slot_tiles)


BANK_IDLE, BANK_ACTIVE = "idle", "active"
BANK_STATES = (
    BANK_IDLE,
    BANK_ACTIVE,
    BankCommand.PRECHARGE,
    BankCommand.REFRESH,
)  # a DRAM bank's states
NO_ROW = -1


@dataclass(slots=True)
class DramBank:
    """One bank of a DRAM-modelled memory, by column: from times[i] on it is in states[i] (idle,
    active, precharge, refresh) with row rows[i] open (-1: none). The value at the window's
    start comes first; `activates` counts the activates inside the window."""

    memory: str
    channel: int
    rank: int
    bank_group: int
    bank: int
    times: array = field(default_factory=lambda: array("q"))
    states: list[str] = field(default_factory=list)
    rows: array = field(default_factory=lambda: array("q"))
    activates: int = 0

    @property
    def changes(self) -> Iterator[tuple[int, str, int]]:
        """(t, state, open row or -1), in time order."""
        return zip(self.times, self.states, self.rows, strict=True)

    def path(self, ranks: int) -> tuple[str, ...]:
        """('ch0', 'bg1', 'bank2'), 'rank1' after the channel with several ranks: the VCD's
        scopes under the memory, the words of the Perfetto track after the memory's name."""
        return bank_path(self.channel, self.rank, self.bank_group, self.bank, ranks)


@dataclass(slots=True, weakref_slot=True)  # weakref: the waveform writers share a stream
class Activity:
    """The whole picture over [start, end): ports, DMA channels, PE array, buffers."""

    start: int
    end: int
    cycles: int
    ports: dict[str, Track]  # port key -> bursts, in time order
    pe_ports: dict[str, Track]  # port key -> the PE array's segments on it, in time order
    port_memory: dict[str, str]
    port_width: dict[str, int]
    dma: dict[str, list[list[Busy]]]  # engine -> per channel transfers
    segments: Segments
    pe_states: States  # cover [start, end) without overlap, in time order
    buffers: list[Buffer]
    memories: list[str]  # outermost first, as in the plan's ports
    # memory with an L1 allocator -> (t, bytes in use), the value at start first
    l1: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    # DRAM-modelled memory -> its banks that a row visit used, by channel, rank, group, bank
    dram_banks: dict[str, list[DramBank]] = field(default_factory=dict)
    dram_ranks: dict[str, int] = field(default_factory=dict)  # DRAM memory -> ranks
