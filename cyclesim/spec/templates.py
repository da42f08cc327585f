"""Jinja rendering of spec files that cannot run code or blow up.

Templates run in Jinja's `ImmutableSandboxedEnvironment` (no attribute starting with `_`, no
mutation of passed-in values, so `cycler.__init__.__globals__.os` is refused), with the loop
budget, `**`/`*`/`+` results, the output size and (on the main thread) the wall-clock time
bounded. Every fault is a SpecError naming the file and, where Jinja knows it, the line.
"""

from __future__ import annotations

import math
import re
import signal
import threading
from collections.abc import Callable, Mapping
from contextlib import contextmanager
from typing import Any

from cyclesim.errors import SpecError

MAX_OUTPUT_CHARS = 4 * 1024 * 1024  # a rendered spec is a few kilobytes
MAX_ITERATIONS = 200_000  # range() items over one rendering (nested loops share the budget)
MAX_BITS = 128  # integer results of ** and *
MAX_SECONDS = 5.0


def uses_jinja(text: str) -> bool:
    """True when the text has Jinja markup (`{{`, `{%` or `{#`)."""
    return "{{" in text or "{%" in text or "{#" in text


class _Budget(Exception):
    """A bound was reached while rendering (message says which)."""


class HelperRefusal(Exception):
    """Raised by a template helper of ours: becomes a SpecError with the file and template line."""

    def __init__(self, message: str, expected: str | None = None) -> None:
        super().__init__(message)
        self.expected = expected


def _template_line() -> int | None:
    """The template line where the exception being handled arose (Jinja maps its frames)."""
    import sys
    import traceback

    line = None
    for frame, lineno in traceback.walk_tb(sys.exc_info()[2]):
        if frame.f_code.co_filename == "<template>":
            line = lineno
    return line


def _sandbox() -> Any:
    """A fresh sandboxed environment with its own iteration budget."""
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class BoundedSandbox(ImmutableSandboxedEnvironment):
        intercepted_binops = frozenset({"**", "*", "+"})

        def __init__(self) -> None:
            super().__init__(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
            self.iterations_left = MAX_ITERATIONS
            self.globals["range"] = self.bounded_range
            for name in WIDTH_TAKERS & set(self.filters):  # 'x'|center(3000000000)
                self.filters[name] = _bounded_widths(self.filters[name], name)

        def getattr(self, obj: Any, attribute: str) -> Any:
            if attribute in ("format", "format_map") and isinstance(obj, str):
                _check_widths(attribute, (obj,), {})  # the format string itself: '{:>3000000000}'
            return super().getattr(obj, attribute)

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
            name = getattr(__obj, "__name__", "")
            # 'x'.center(3000000000); str.format's own string was checked by getattr
            if name in WIDTH_TAKERS and not name.startswith("format"):
                _check_widths(name, (getattr(__obj, "__self__", None), *args), kwargs)
            return super().call(__context, __obj, *args, **kwargs)

        def bounded_range(self, *args: int) -> range:
            items = range(*args)
            self.iterations_left -= len(items)
            if self.iterations_left < 0:
                raise _Budget(f"loops over range() exceed {MAX_ITERATIONS:,} iterations")
            return items

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            if operator == "**" and isinstance(left, int) and isinstance(right, int):
                if abs(left) > 1 and right * math.log2(abs(left)) > MAX_BITS:
                    raise _Budget(f"{left}**{right} is larger than 2**{MAX_BITS}")
            if operator == "*":
                for seq, count in ((left, right), (right, left)):
                    if isinstance(seq, str | list | tuple) and isinstance(count, int):
                        if len(seq) * count > MAX_OUTPUT_CHARS:
                            raise _Budget(f"a repeated sequence longer than {MAX_OUTPUT_CHARS:,}")
            result = super().call_binop(context, operator, left, right)
            if isinstance(result, int) and result.bit_length() > MAX_BITS:
                raise _Budget(f"a number larger than 2**{MAX_BITS}")
            if isinstance(result, str | list | tuple) and len(result) > MAX_OUTPUT_CHARS:
                raise _Budget(f"a value longer than {MAX_OUTPUT_CHARS:,}")
            return result

    return BoundedSandbox()


# filters and str methods whose arguments size their result: a width, a format's field width
WIDTH_TAKERS = frozenset(
    "center ljust rjust zfill expandtabs indent wordwrap format format_map".split()
)
# a field width (or precision) of a million characters or more in a %- or {}-format string
_WIDE_FIELD = re.compile(r"%[-+ #0]*\d*\.?\d{7,}|\{[^{}]*:[^{}]*\d{7,}")
_STAR_FIELD = re.compile(r"%[-+ #0]*\*|%[-+ #0]*\d*\.\*")  # '%*d': the width is an argument


def _check_widths(name: str, args: tuple, kwargs: dict) -> None:
    """Refuse a width argument, or a format string's field width, beyond the output bound
    (a large number formatted as a value is fine: only widths size the result)."""
    formats = [v for v in args if isinstance(v, str)] if name.startswith("format") else []
    if any(_WIDE_FIELD.search(text) for text in formats):
        raise _Budget(f"{name}() with a field width over {MAX_OUTPUT_CHARS:,} characters")
    if formats and not any(_STAR_FIELD.search(text) for text in formats):
        return  # a format's numbers are values, not widths
    for value in (*args, *kwargs.values()):
        if isinstance(value, int) and not isinstance(value, bool) and value > MAX_OUTPUT_CHARS:
            raise _Budget(f"{name}() with a width of {value:,} (at most {MAX_OUTPUT_CHARS:,})")


def _bounded_widths(function: Callable[..., Any], name: str) -> Callable[..., Any]:
    """A Jinja filter with its width arguments bounded (its pass-context marks kept)."""
    import functools

    @functools.wraps(function)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        _check_widths(name, args, kwargs)
        return function(*args, **kwargs)

    return bounded


@contextmanager
def _time_limit(seconds: float):
    """Raise _Budget after `seconds` of wall time (main thread, no timer of the caller's running;
    elsewhere the iteration and size budgets still bound the work)."""
    if (
        threading.current_thread() is not threading.main_thread()
        or not hasattr(signal, "setitimer")
        or signal.getitimer(signal.ITIMER_REAL)[0] > 0  # the caller's own timer: leave it be
    ):
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise _Budget(f"rendering took longer than {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def render_template(
    text: str,
    file: str,
    data: Mapping[str, Any],
    *,
    helpers: Mapping[str, Callable[..., Any]] | None = None,
) -> str:
    """Render `text` as a sandboxed Jinja template when it has Jinja markup; else return it.

    `helpers` are functions of ours a template may call (a peer's documented helpers, such as
    AccelForge's `include_text`); they run as our code, never code from the file.
    Raise SpecError naming the file (and line) for an undefined variable, a syntax error, an
    attempt to reach Python internals, or a bound exceeded.
    """
    if not uses_jinja(text):
        return text
    import jinja2
    from jinja2.sandbox import SecurityError

    environment = _sandbox()
    environment.globals.update(helpers or {})
    try:
        with _time_limit(MAX_SECONDS):
            template = environment.from_string(text)
            pieces, size = [], 0
            for piece in template.generate(**dict(data)):
                size += len(piece)
                if size > MAX_OUTPUT_CHARS:
                    raise _Budget(f"the rendered text is longer than {MAX_OUTPUT_CHARS:,}")
                pieces.append(piece)
            return "".join(pieces)
    except HelperRefusal as error:
        raise SpecError(
            str(error), file=file, line=_template_line(), expected=error.expected
        ) from None
    except SecurityError as error:
        raise SpecError(
            f"the Jinja template tried to reach Python internals: {error}",
            file=file,
            line=_template_line(),
            expected="templates that only substitute values (spec files cannot run code)",
        ) from None
    except jinja2.UndefinedError as error:
        raise SpecError(
            f"Jinja template uses an undefined variable: {error.message}",
            file=file,
            line=_template_line(),
            expected="a value for it: --jinja-data NAME=VALUE or --jinja-data FILE.yaml",
        ) from None
    except jinja2.TemplateSyntaxError as error:
        raise SpecError(
            f"Jinja template syntax error: {error.message}", file=file, line=error.lineno
        ) from None
    except jinja2.TemplateError as error:
        raise SpecError(
            f"Jinja template failed: {error}", file=file, line=_template_line()
        ) from None
    except _Budget as error:
        raise SpecError(
            f"the Jinja template was stopped: {error}",
            file=file,
            line=_template_line(),
            expected="a template that renders a spec-sized file",
        ) from None
    except (ArithmeticError, ValueError, TypeError, RecursionError, MemoryError) as error:
        raise SpecError(
            f"Jinja template failed: {type(error).__name__}: {error}", file=file
        ) from None
