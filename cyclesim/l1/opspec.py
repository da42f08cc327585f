"""Op descriptions as frozen dataclasses: what `ops.py` produces and the replay walks."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class StepKind(enum.StrEnum):
    """What one step of an op's body does."""

    ALLOC = "alloc"  # allocate one of the op's intermediates (or an output it allocates)
    FREE = "free"  # free an intermediate
    CALL = "call"  # call another op, binding its outputs to this op's tensors
    RUN = "run"  # launch this op's own program with its circular buffers


class OutputOwner(enum.StrEnum):
    """Who allocates an op's output."""

    CALLER = "caller"  # preallocated by the caller (what a compiler wants)
    OP = "op"  # allocated by the op on the heap, handed to the caller (today's ttnn)


@dataclass(frozen=True, slots=True)
class CircularBufferSpec:
    """A circular buffer of an op's program: pages of one size, per core."""

    name: str
    page_size_bytes: int
    num_pages: int

    @property
    def size_bytes(self) -> int:
        """Bytes per core."""
        return self.page_size_bytes * self.num_pages


@dataclass(frozen=True, slots=True)
class TensorSpec:
    """A tensor: whole size, page size, banks it is spread over (None: the L1's bank count)."""

    name: str
    size_bytes: int
    page_size_bytes: int
    num_banks: int | None = None
    allocated_by: OutputOwner = OutputOwner.CALLER  # outputs only


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a body; `bindings` maps a callee's outputs to this op's tensors."""

    kind: StepKind
    target: str
    bindings: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class OpSpec:
    """An op: its program's CBs, its intermediates and outputs, and its body."""

    name: str
    circular_buffers: tuple[CircularBufferSpec, ...]
    intermediates: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    steps: tuple[Step, ...]

    def tensor(self, name: str) -> TensorSpec | None:
        """The intermediate or output of that name."""
        return next((t for t in self.intermediates + self.outputs if t.name == name), None)


@dataclass(frozen=True, slots=True)
class OpsFile:
    """A validated op-description file: the op library and the top-level sequence (`model`)."""

    ops: tuple[OpSpec, ...]
    model: OpSpec  # name "model": tensors are its intermediates, steps its body
    source: str = "<ops>"

    def op(self, name: str) -> OpSpec:
        """The op of that name (KeyError if none)."""
        for op in self.ops:
            if op.name == name:
                return op
        raise KeyError(name)
