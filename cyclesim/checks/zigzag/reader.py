"""One ZigZag input file being read: its data, its lines, and errors that point into it.

The field sets and patterns of ZigZag 3.9.1's validators live here too, shared by the readers of the
accelerator, workload and mapping files.
"""

from __future__ import annotations

import math
import re
from typing import Any, NoReturn

from cyclesim.errors import SpecError
from cyclesim.spec.yamlio import format_path, line_of, read_yaml

MAX_INTEGER = 2**60  # sizes in bits, latencies, loop sizes
MAX_NUMBER = 1e30  # energies and areas
PORT_NAME = re.compile(r"^[r]?[w]?_port_\d+$")
ALLOCATION = re.compile(r"^\s*(\w+)\s*,\s*(\w+)\s*$")
ARRAY_DIM = re.compile(r"^D\d$")
EQUATION = re.compile(
    r"^\s*(\w+)((?:\[\w*\])+)\s*\+?=\s*(\w+)((?:\[\w*\])+)\s*[*+]\s*(\w+)((?:\[\w*\])+)\s*$"
)
RELATION = re.compile(r"^\s*(\w+)\s*=\s*(?:(\d+)\s*\*\s*)?(\w+)\s*\+\s*(?:(\d+)\s*\*\s*)?(\w+)\s*$")
UNROLLING = re.compile(r"^\s*([A-Za-z]+\d*)\s*,\s*(\d+)\s*$")

MEMORY_FIELDS = {
    "size", "r_cost", "w_cost", "area", "latency", "operands", "ports", "served_dimensions",
    "mem_type", "auto_cost_extraction", "force_double_buffering",
}  # fmt: skip
# input_precision: ZigZag reads it only for IMC arrays (cell sizes); a digital array ignores it
ARRAY_FIELDS = {
    "dimensions", "sizes", "unit_energy", "unit_area", "systolic_dimensions", "is_imc",
    "input_precision",
}  # fmt: skip
LAYER_FIELDS = {
    "id", "name", "operator_type", "equation", "dimension_relations", "loop_dims", "loop_sizes",
    "operand_precision", "operand_source", "pr_loop_dims", "pr_loop_sizes", "padding",
}  # fmt: skip
MAPPING_FIELDS = {
    "name",
    "spatial_mapping",
    "temporal_ordering",
    "memory_operand_links",
    "spatial_mapping_hint",
}


class Reader:
    """One parsed file: its data, its lines, and errors that point into it."""

    def __init__(self, path: str) -> None:
        # ZigZag reads its files with PyYAML, where a repeated key's last value counts; its own
        # tpu_like.yaml lists `ports:` twice under sram_2MB (an old form, then the 3.x one)
        self.data, self.lines, self.file = read_yaml(path, last_duplicate_wins=True)

    def fail(
        self, path: tuple, message: str, found: Any = None, expected: str | None = None
    ) -> NoReturn:
        """Raise a SpecError at a field path of this file."""
        raise SpecError(
            message,
            file=self.file,
            field=format_path(path) or None,
            line=line_of(self.lines, path),
            found=found,
            expected=expected,
        )

    def mapping(self, value: Any, path: tuple, allowed: set[str], required: set[str]) -> dict:
        """Check a YAML mapping: no unknown keys (listing the allowed ones), no missing keys."""
        if not isinstance(value, dict):
            self.fail(path, "must be a mapping", found=value, expected="a mapping")
        for key in value:
            if key not in allowed:
                self.fail(
                    path + (key,), f"unknown field '{key}' (allowed: {', '.join(sorted(allowed))})"
                )
        for key in sorted(required):
            if key not in value:
                self.fail(path, f"missing field '{key}'")
        return value

    def listing(self, value: Any, path: tuple) -> list:
        """Check a YAML list."""
        if not isinstance(value, list):
            self.fail(path, "must be a list", found=value, expected="a list")
        return value

    def integer(self, value: Any, path: tuple, minimum: int | None = None) -> int:
        """Check an integer, optionally at least `minimum`."""
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(path, "must be an integer", found=value, expected="an integer")
        if minimum is not None and value < minimum:
            self.fail(path, f"must be at least {minimum}", found=value)
        if value > MAX_INTEGER:
            self.fail(path, "out of range", found=value, expected="at most 2**60")
        return value

    def number(self, value: Any, path: tuple) -> float:
        """Check a number (energy, area): finite and not negative."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.fail(path, "must be a number", found=value, expected="a number")
        if not (math.isfinite(value) and 0 <= value <= MAX_NUMBER):
            self.fail(path, "out of range", found=value, expected=f"0 to {MAX_NUMBER:g}")
        return float(value)

    def string(self, value: Any, path: tuple) -> str:
        """Check a string."""
        if not isinstance(value, str):
            self.fail(path, "must be a string", found=value, expected="a string")
        return value
