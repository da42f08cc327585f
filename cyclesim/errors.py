"""Exceptions of cyclesim: every one says what went wrong, where, and what to do."""

from __future__ import annotations


class CyclesimError(Exception):
    """Base of every error cyclesim raises on purpose."""


class SpecError(CyclesimError):
    """An input file is wrong: names the file, the field path, the line, found and expected."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        field: str | None = None,
        line: int | None = None,
        found: object = None,
        expected: str | None = None,
    ) -> None:
        self.file = file
        self.field = field
        self.line = line
        self.found = found
        self.expected = expected
        self.detail = message
        super().__init__(self._format())

    def _format(self) -> str:
        where = self.file or "<input>"
        if self.line is not None:
            where += f":{self.line}"
        if self.field:
            where += f": field '{self.field}'"
        text = f"{where}: {self.detail}"
        if self.found is not None:
            text += f" (found {self.found!r})"
        if self.expected:
            text += f"; expected {self.expected}"
        return text


class OptionError(CyclesimError):
    """A command-line option is wrong (an output path that cannot be written): exit code 2."""


class EngineError(CyclesimError):
    """The replay could not progress or broke an invariant; names cycle, component, tensor."""


class DeadlockError(EngineError):
    """The replay cannot progress: processes wait on each other forever (exit code 3)."""


class FoundFailure(CyclesimError):
    """What the user asked about failed (a check beyond tolerance, an L1 clash): exit code 1."""


class CountMismatchError(EngineError):
    """The engine's counted accesses differ from the schedule's closed form."""


class TraceError(CyclesimError):
    """A trace writer was used out of order or given values it cannot represent."""


class PeerUnavailable(CyclesimError):
    """A peer package (zigzag-dse, accelforge) is not installed; carries the reason."""
