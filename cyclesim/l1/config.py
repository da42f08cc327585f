"""L1 configuration of one Tensix-like core, the closed vocabularies, and tt-metal's size rules."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError

from cyclesim.errors import SpecError
from cyclesim.spec.limits import MAX_BYTES, MAX_COUNT
from cyclesim.spec.yamlio import (
    Lines,
    StrictModel,
    format_path,
    line_of,
    pydantic_to_spec_error,
    read_yaml,
)


class Policy(enum.StrEnum):
    """Where an op's intermediate tensors go."""

    HEAP = "heap"  # today's tt-metal: the top-down L1 heap, like any tensor
    STACK = "stack"  # bottom-up beside the circular buffers, popped when the op returns
    POOL = "pool"  # a pool preallocated on the heap for each top-level op


class AllocKind(enum.StrEnum):
    """What an allocation is, as the reports and plots name it."""

    CB = "cb"  # a circular buffer of one program
    INTERMEDIATE = "intermediate"  # a tensor that lives and dies inside an op
    OUTPUT = "output"  # a tensor an op allocates and hands to the top-level sequence
    TENSOR = "tensor"  # a tensor of the top-level sequence (inputs, activations)
    POOL = "pool"  # the block reserved for a top-level op's intermediates (policy pool)


class Region(enum.StrEnum):
    """The allocator that placed a buffer."""

    HEAP = "heap"  # first fit, top-down, below L1_SMALL
    STACK = "stack"  # program-local region, bump-allocated upward from the unreserved base
    POOL = "pool"  # first fit, top-down, inside a pool block


class FailureKind(enum.StrEnum):
    """Why an allocation failed, in tt-metal's three cases."""

    CLASH = "clash"  # circular buffers / stack and L1 buffers overlap
    OUT_OF_MEMORY = "out_of_memory"  # no free block large enough
    BEYOND_L1 = "beyond_l1"  # the program-local region grows past the L1 size


def round_up(value: int, multiple: int) -> int:
    """Round value up to a multiple (alignment padding)."""
    return -(-value // multiple) * multiple


def bank_bytes(size_bytes: int, page_size_bytes: int, num_banks: int, alignment_bytes: int) -> int:
    """Bytes every bank reserves for a buffer (tt-metal `calculate_bank_size_spread`, lockstep)."""
    num_pages = -(-size_bytes // page_size_bytes)
    pages_per_bank = 1 + (num_pages - 1) // num_banks
    return pages_per_bank * round_up(page_size_bytes, alignment_bytes)


@dataclass(frozen=True, slots=True)
class L1Config:
    """One core's L1: size, reserved base, alignment, L1_SMALL at the top, lockstep bank count."""

    l1_size_bytes: int
    unreserved_base_bytes: int
    alignment_bytes: int = 32
    l1_small_size_bytes: int = 0
    num_banks: int = 1
    worker_grid: tuple[int, int] = (1, 1)
    policy: Policy = Policy.HEAP
    name: str = "l1"

    @property
    def heap_top(self) -> int:
        """First byte above the heap: the start of L1_SMALL (or the L1 size without it)."""
        return self.l1_size_bytes - round_up(self.l1_small_size_bytes, self.alignment_bytes)

    @property
    def bank_size_bytes(self) -> int:
        """Allocatable bytes per bank, as tt-metal's out-of-memory message calls 'bank size'."""
        return self.heap_top - self.unreserved_base_bytes

    @property
    def core_range(self) -> str:
        """The worker grid in tt-metal's CoreRange notation (for the clash message)."""
        x, y = self.worker_grid
        return f"{{[(x=0,y=0) - (x={x - 1},y={y - 1})]}}"

    @classmethod
    def from_dict(
        cls, data: Any, *, file: str | None = None, lines: Lines | None = None, loc: tuple = ()
    ) -> L1Config:
        """Validate an allocator mapping (an arch memory's `allocator:`) into a config."""
        return _config_from_dict(data, file or "<l1 config>", lines or {}, loc)


class _Config(StrictModel):
    kind: Literal["tt_l1"] = "tt_l1"
    l1_size_bytes: int = Field(gt=0, le=MAX_BYTES, description="worker_l1_size per Tensix core")
    unreserved_base_bytes: int = Field(
        ge=0, le=MAX_BYTES, description="l1_unreserved_base: firmware below"
    )
    alignment_bytes: int = Field(
        32, gt=0, le=MAX_COUNT, description="DRAM alignment of every L1 address"
    )
    l1_small_size_bytes: int = Field(
        0, ge=0, le=MAX_BYTES, description="L1_SMALL region at the top"
    )
    num_banks: int = Field(
        1, gt=0, le=MAX_COUNT, description="lockstep banks a tensor is interleaved over"
    )
    worker_grid: list[Annotated[int, Field(le=MAX_COUNT)]] = Field(
        [1, 1], min_length=2, max_length=2
    )
    policy: Literal["heap", "stack", "pool"] = "heap"


def _config_from_dict(data: Any, file: str, lines: Lines, loc: tuple) -> L1Config:
    if not isinstance(data, dict):
        raise SpecError(
            "the L1 allocator must be a mapping",
            file=file,
            field=format_path(loc) or None,
            line=line_of(lines, loc),
            found=type(data).__name__,
            expected="a mapping with l1_size_bytes, unreserved_base_bytes, ...",
        )
    try:
        raw = _Config.model_validate(data)
    except ValidationError as exc:
        raise pydantic_to_spec_error(exc, _Config, file, lines, loc) from None

    def err(msg: str, field: str, found: object, expected: str) -> SpecError:
        where = loc + (field,)
        return SpecError(
            msg,
            file=file,
            field=format_path(where),
            line=line_of(lines, where),
            found=found,
            expected=expected,
        )

    align = raw.alignment_bytes
    if align & (align - 1):
        raise err(
            "alignment must be a power of two", "alignment_bytes", align, "1, 2, 4, ... bytes"
        )
    if raw.unreserved_base_bytes % align:
        raise err(
            "the unreserved base must be aligned",
            "unreserved_base_bytes",
            raw.unreserved_base_bytes,
            f"a multiple of alignment_bytes={align}",
        )
    if raw.l1_size_bytes % align:
        raise err(
            "the L1 size must be aligned",
            "l1_size_bytes",
            raw.l1_size_bytes,
            f"a multiple of {align}",
        )
    if any(v <= 0 for v in raw.worker_grid):
        raise err("grid sizes must be positive", "worker_grid", raw.worker_grid, "[x, y] > 0")
    config = L1Config(
        raw.l1_size_bytes,
        raw.unreserved_base_bytes,
        align,
        raw.l1_small_size_bytes,
        raw.num_banks,
        (raw.worker_grid[0], raw.worker_grid[1]),
        Policy(raw.policy),
    )
    if config.bank_size_bytes <= 0:
        raise err(
            "nothing is left to allocate between the unreserved base and L1_SMALL",
            "unreserved_base_bytes",
            raw.unreserved_base_bytes,
            f"< {config.heap_top} (l1_size_bytes - l1_small_size_bytes)",
        )
    return config


def load_l1_config(path: str | Path) -> L1Config:
    """Read the L1 config from an architecture file: the memory that has an `allocator:`."""
    data, lines, name = read_yaml(path)
    if isinstance(data, dict) and "memories" in data:
        from cyclesim.spec.arch import architecture_from_dict

        architecture_from_dict(data, name, lines)  # the whole architecture, as `run` checks it
        found = [
            (i, m)
            for i, m in enumerate(data["memories"])
            if isinstance(m, dict) and m.get("allocator") is not None
        ]
        if len(found) != 1:
            raise SpecError(
                "the architecture must have exactly one memory with an L1 `allocator:`",
                file=name,
                field="memories",
                line=line_of(lines, ("memories",)),
                found=len(found),
                expected="one memory (the Tensix L1) with `allocator: {kind: tt_l1, ...}`",
            )
        index, memory = found[0]
        loc = ("memories", index, "allocator")
        config = L1Config.from_dict(memory["allocator"], file=name, lines=lines, loc=loc)
        size_bits = memory.get("size_bits")
        if size_bits is not None and size_bits != 8 * config.l1_size_bytes:
            raise SpecError(
                "the memory's size_bits disagrees with its allocator's l1_size_bytes",
                file=name,
                field=format_path(("memories", index, "size_bits")),
                line=line_of(lines, ("memories", index, "size_bits")),
                found=size_bits,
                expected=f"{8 * config.l1_size_bytes} (= 8 * l1_size_bytes)",
            )
        return _named(config, str(memory.get("name", "l1")))
    if isinstance(data, dict) and "l1" in data:
        return L1Config.from_dict(data["l1"], file=name, lines=lines, loc=("l1",))
    raise SpecError(
        "no L1 allocator found",
        file=name,
        expected="an architecture with a memory carrying `allocator:`, or a top-level `l1:` mapping",
    )


def _named(config: L1Config, name: str) -> L1Config:
    from dataclasses import replace

    return replace(config, name=name)
