"""Which Stream accelerators the replay can take, and why not the others (refused by name)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cyclesim.checks.stream.model import CoreKind, StreamAccelerator
from cyclesim.checks.stream.read import read_accelerator
from cyclesim.errors import SpecError

REASONS = {
    "bandwidth": "a measured bandwidth model (ceiling, contiguous, strided, burst) replaces link and "
    "port rates in Stream; the replay times links and ports by their declared widths only",
    "core_memory_sharing": "cores share one top memory (Stream charges their transfers 0 cycles); "
    "the replay gives every core its own memory",
    "memory_aliases": "memory aliases make one core use another's memory; the replay gives every "
    "core its own memory",
    "reconfiguration": "AIE reconfiguration costs are not modelled",
    "kernel_library": "AIE kernel libraries are not modelled",
}


@dataclass(frozen=True, slots=True)
class ImportVerdict:
    """Whether one accelerator file imports, and if not, why (one sentence)."""

    file: str
    name: str
    imported: bool
    reason: str


def verdict(accelerator: StreamAccelerator) -> ImportVerdict:
    """Import or refuse an accelerator already read: refusal names the first unmodelled feature."""
    reasons = [f"`{key}`: {REASONS[key]}" for key in accelerator.unmodelled]
    memory_cores = [c.id for c in accelerator.cores if c.kind is CoreKind.MEMORY]
    if memory_cores:
        reasons.append(
            f"cores {memory_cores} are on-chip memory cores (Stream stages inputs through them in "
            "two hops); the replay has compute cores and one off-chip core only"
        )
    if not reasons:
        return ImportVerdict(accelerator.file, accelerator.name, True, "")
    return ImportVerdict(accelerator.file, accelerator.name, False, "; ".join(reasons))


def check_file(path: str | Path) -> ImportVerdict:
    """Read and import-or-refuse one accelerator file; a file Stream's format rejects is refused
    with the reader's message."""
    try:
        return verdict(read_accelerator(path))
    except SpecError as exc:
        return ImportVerdict(str(path), Path(path).stem, False, str(exc))
