"""A bounded evaluator for the arithmetic spec files may write (`1024*8`, `2**14`, `min(a, 4)`).

Only numbers, whitelisted operators and functions, and names of other variables; the text length,
the expression depth and every intermediate result are bounded, `**` is refused when its result
would be huge (`9**9**9`), and a variable that refers to itself, directly or not, is refused.
Every fault is a SpecError naming the file, field and line.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Mapping
from typing import Any

from cyclesim.errors import SpecError

MAX_CHARS = 500  # the longest expression in AccelForge's shipped specs is about 40 characters
MAX_DEPTH = 40  # operators nested in one expression
MAX_BITS = 128  # an integer result of at most 2**128 (sizes in bits are below 2**64)
MAX_FLOAT = 1e38
EXPECTED = "numbers, inf, + - * / // % **, min/max/ceil/floor/log2/sqrt/abs/int/float, variables"

FUNCTIONS: dict[str, Callable[..., Any]] = {
    "min": min,
    "max": max,
    "ceil": math.ceil,
    "floor": math.floor,
    "log2": math.log2,
    "sqrt": math.sqrt,
    "abs": abs,
    "int": int,
    "float": float,
}
INFINITY_NAMES = ("inf", "infinity", "Infinity")


def _power(base: Any, exponent: Any) -> Any:
    """`base ** exponent`, refused before it is computed when the result would be huge."""
    if isinstance(exponent, int) and isinstance(base, int) and abs(base) > 1:
        if exponent * math.log2(abs(base)) > MAX_BITS:
            raise OverflowError(f"{base}**{exponent} is larger than 2**{MAX_BITS}")
    return base**exponent


_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: _power,
}


class Evaluator:
    """Evaluates expressions over a mapping of variables (each itself a number or expression).

    Variable values are computed once and cached, so chains of variables stay linear.
    """

    def __init__(self, variables: Mapping[str, Any], file: str | None, line: int | None) -> None:
        self.variables = variables
        self.file = file
        self.line = line
        self.cache: dict[str, int | float] = {}
        self.evaluating: list[str] = []

    def number(self, value: Any, field: str) -> int | float:
        """A number, or the value of an arithmetic expression; whole floats become ints."""
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise self._error("expected a number", field, value)
        if isinstance(value, int | float):
            return _checked(_normalise(value), self, field, value)
        text = value.strip()
        if len(text) > MAX_CHARS:
            raise self._error(
                f"expression longer than {MAX_CHARS} characters", field, value[:40] + "..."
            )
        try:
            tree = ast.parse(text, mode="eval")
        except SyntaxError:
            raise self._error("not a number or arithmetic expression", field, value) from None
        except (RecursionError, MemoryError):
            raise self._error("expression nested too deeply", field, value[:40]) from None
        try:
            result = self._walk(tree.body, field, value, 1)
        except (ArithmeticError, ValueError, TypeError) as error:
            raise self._error(f"numeric expression failed: {error}", field, value) from None
        if isinstance(result, bool) or not isinstance(result, int | float):
            raise self._error("expected a number", field, value)
        return _checked(_normalise(result), self, field, value)

    def _walk(self, node: ast.AST, field: str, source: str, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise self._error(f"expression nested more than {MAX_DEPTH} deep", field, source[:40])
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, int | float):
                raise self._unsupported(field, source)
            return node.value
        if isinstance(node, ast.Name):
            return self._variable(node.id, field, source)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            left = self._walk(node.left, field, source, depth + 1)
            right = self._walk(node.right, field, source, depth + 1)
            result = _BINARY[type(node.op)](left, right)
            if _infinite(result) and not (_infinite(left) or _infinite(right)):
                raise self._error("numeric expression overflows to infinity", field, source)
            return _checked(result, self, field, source)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            operand = self._walk(node.operand, field, source, depth + 1)
            return -operand if isinstance(node.op, ast.USub) else operand
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in FUNCTIONS
            and not node.keywords
            and node.args
        ):
            args = [self._walk(arg, field, source, depth + 1) for arg in node.args]
            return _checked(FUNCTIONS[node.func.id](*args), self, field, source)
        raise self._unsupported(field, source)

    def _variable(self, name: str, field: str, source: str) -> int | float:
        if name in INFINITY_NAMES:
            return math.inf
        if name in self.cache:
            return self.cache[name]
        if name not in self.variables:
            raise SpecError(
                f"unknown name '{name}' in a numeric expression",
                file=self.file,
                field=field,
                line=self.line,
                found=source,
                expected="numbers, inf, arithmetic, or names defined under variables:",
            )
        if name in self.evaluating:
            chain = " -> ".join(self.evaluating[self.evaluating.index(name) :] + [name])
            raise SpecError(
                f"variable '{name}' refers to itself ({chain})",
                file=self.file,
                field=field,
                line=self.line,
                expected="variables defined from numbers and earlier variables",
            )
        self.evaluating.append(name)
        try:
            value = self.number(self.variables[name], name)
        finally:
            self.evaluating.pop()
        self.cache[name] = value
        return value

    def _error(self, message: str, field: str, found: Any) -> SpecError:
        return SpecError(message, file=self.file, field=field, line=self.line, found=found)

    def _unsupported(self, field: str, source: str) -> SpecError:
        return SpecError(
            "unsupported numeric expression",
            file=self.file,
            field=field,
            line=self.line,
            found=source,
            expected=EXPECTED,
        )


def _checked(value: Any, evaluator: Evaluator, field: str, source: Any) -> Any:
    """Refuse NaN and results beyond the bounds (infinity itself is a valid size)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value.bit_length() > MAX_BITS:
        raise evaluator._error(f"result larger than 2**{MAX_BITS}", field, source)
    if isinstance(value, float):
        if math.isnan(value):
            raise evaluator._error("result is not a number (NaN)", field, source)
        if math.isfinite(value) and abs(value) > MAX_FLOAT:
            raise evaluator._error(f"result larger than {MAX_FLOAT:g}", field, source)
    return value


def _infinite(value: Any) -> bool:
    return isinstance(value, float) and math.isinf(value)


def _normalise(number: int | float) -> int | float:
    if isinstance(number, float) and math.isfinite(number) and number.is_integer():
        return int(number)
    return number


def evaluate_number(
    value: Any,
    variables: Mapping[str, Any],
    *,
    file: str | None,
    field: str,
    line: int | None,
) -> int | float:
    """Evaluate a number or a bounded arithmetic expression such as `1024*8`, `inf` or `2**14`.

    Whole floats become ints. Raise SpecError naming the field if it is not a number, is out of
    bounds, or refers to itself.
    """
    return Evaluator(variables, file, line).number(value, field)
