"""The `cyclesim` command: run, explain, check zigzag|accelforge|scalesim|stream, chip, l1, dram,
sweep, rank, report.

Here the parser and main; the `run` command in cli.run, the checks of output paths in
cli.output_paths, what a run cut short by lack of memory or a signal does in cli.aborts.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from cyclesim import __version__
from cyclesim.cli.aborts import (
    RESERVE_BYTES,
    install_interrupt_handler,
    interrupted,
    memory_reserve,
    out_of_memory,
)
from cyclesim.cli.output_paths import check_outputs, new_outputs, remove_begun
from cyclesim.cli.run import add_replay_arguments, cmd_run
from cyclesim.errors import CyclesimError, DeadlockError, FoundFailure


class _Version(argparse.Action):
    """--version: the version, which DRAM timer and engine (compiled or pure) a replay would use,
    which loop writes FST changes and which the VCD's and Perfetto JSON's text (imported only
    here)."""

    def __init__(self, option_strings, dest, help=None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        from cyclesim.dram.native import NATIVE_KIND
        from cyclesim.engine.native import ENGINE_KIND
        from cyclesim.views import text_native
        from cyclesim.views.fst_native import fst_writer, load

        fst = fst_writer() or "none (pip install pylibfst, or make gtkwave-deps for vcd2fst)"
        if fst == "pylibfst":
            fst += f" ({load()[1]})"
        _, why_not = text_native.LOOP.load()
        text = f"numpy and Python ({why_not})" if why_not else "compiled C loops"
        print(f"{parser.prog} {__version__}\nDRAM timer: {NATIVE_KIND}\nengine: {ENGINE_KIND}")
        print(f"FST writer: {fst}\nVCD and Perfetto JSON text: {text}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cyclesim",
        description="Replay DNN accelerator schedules cycle by cycle.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_Version, help="show the version and the DRAM timer")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser(
        "run", help="replay ARCH WORKLOAD MAPPING and report cycles, stalls, accesses"
    )
    add_replay_arguments(run)
    run.add_argument(
        "--csv",
        metavar="DIR",
        help="write compute_report.csv and memory_report.csv (SCALE-Sim-like summaries) into DIR, "
        "and energy_report.csv when the architecture gives energies",
    )
    try:
        from cyclesim.views import add_view_arguments

        add_view_arguments(run)
    except ImportError:
        pass
    run.add_argument(
        "--dram-trace",
        metavar="FILE",
        help="write every DRAM request, with the DRAM cycle it arrived, as a DRAMsim3 trace "
        "(`cyclesim dram` on it gives each request the completion the replay gave it); needs "
        "a memory whose dram: block says timing: controller (FILE.<memory> for each of several)",
    )
    run.set_defaults(func=cmd_run)
    _optional(sub, "cyclesim.analysis.explain_cli")
    check = sub.add_parser(
        "check", help="compare a replay with an analytical model and the real peer"
    )
    check_sub = check.add_subparsers(dest="peer", required=True)
    _optional(check_sub, "cyclesim.checks.zigzag.cli")
    _optional(check_sub, "cyclesim.checks.accelforge.cli")
    _optional(check_sub, "cyclesim.checks.scalesim.cli")
    _optional(check_sub, "cyclesim.checks.stream.cli")
    _optional(sub, "cyclesim.l1.cli")
    _optional(sub, "cyclesim.dram.cli")
    _optional(sub, "cyclesim.chip.cli")
    _optional(sub, "cyclesim.analysis.sweep_cli")
    _optional(sub, "cyclesim.analysis.report_cli")
    _optional(sub, "cyclesim.analysis.rank_cli")
    _add_verbosity(parser, top_level=True)
    return parser


def _add_verbosity(parser: argparse.ArgumentParser, *, top_level: bool = False) -> None:
    """-q/--quiet and -v/--verbose on the command and every sub-command (either place works)."""
    default = False if top_level else argparse.SUPPRESS
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "-q", "--quiet", action="store_true", default=default, help="errors only, no progress bar"
    )
    group.add_argument(
        "-v", "--verbose", action="store_true", default=default, help="also log what is done (info)"
    )
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                _add_verbosity(sub)


def configure_logging(quiet: bool, verbose: bool) -> None:
    """Messages through `logging` on stderr: warnings by default, errors with -q, info with -v."""
    level = logging.ERROR if quiet else logging.INFO if verbose else logging.WARNING
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("cyclesim: %(message)s"))
    root = logging.getLogger("cyclesim")
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False


def _optional(sub, module: str) -> None:
    """Sub-commands live beside the layer they belong to; each module has register(subparsers)."""
    import importlib

    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise
        return
    mod.register(sub)


EXIT_CODES = """exit codes:
  0  success
  1  a failure you asked about was found (an L1 clash or out-of-memory, a check beyond tolerance)
  2  bad input: a wrong file, field or option, an output path that cannot be written,
     a sweep whose every point failed, or a peer package the command needs (rank) not installed
  3  the replay cannot progress (a deadlock between its processes)
  4  out of memory: nothing was written (one layer at a time, fewer workers, no trace)
  130, 143  interrupted by SIGINT (Ctrl-C) or SIGTERM: no partial output, no peer left running"""


def exit_code(exc: BaseException) -> int:
    """The exit code of an error cyclesim raised on purpose (the one table of them)."""
    if isinstance(exc, DeadlockError):
        return 3
    if isinstance(exc, FoundFailure):
        return 1
    return 2


def _environment_error() -> str | None:
    """CYCLESIM_PURE_PYTHON with a value that is neither yes nor no, in words (it is the
    user's input: exit 2), else None; the engine is imported only when the variable is set."""
    if "CYCLESIM_PURE_PYTHON" not in os.environ:
        return None
    from cyclesim.compiled import pure_python_requested

    try:
        pure_python_requested()
    except ValueError as exc:
        return str(exc)
    return None


@contextlib.contextmanager
def _quiet_stdout(args: argparse.Namespace) -> Iterator[None]:
    """-q means the same in every command: no report on stdout (errors still on stderr, files
    still written); the one exception is --json, which asks for stdout by name."""
    if not args.quiet or getattr(args, "json", False):
        yield
        return
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        yield


def chosen(
    parser: argparse.ArgumentParser, args: argparse.Namespace, argv: list[str] | None, token: str
) -> argparse.ArgumentParser:
    """The parser of the innermost sub-command `args` were parsed by (`check zigzag`, `chip`),
    or the top level's when `token` comes before the command (`cyclesim --bogus run ...`)."""
    given = sys.argv[1:] if argv is None else list(argv)
    if token in given and args.command in given and given.index(token) < given.index(args.command):
        return parser
    while True:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                name = getattr(args, action.dest, None)
                if name in action.choices:
                    parser = action.choices[name]
                    break
        else:
            return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command; print an error as one line on stderr and return its exit code."""
    if (odd := _environment_error()) is not None:  # before --version, which reports the timer
        print(f"cyclesim: {odd}", file=sys.stderr)
        return 2
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # refused with the usage of the sub-command given them, not the top level's
        chosen(parser, args, argv, unknown[0]).error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.quiet and args.verbose:  # one before the command, the other after it
        chosen(parser, args, argv, "").error("-q/--quiet and -v/--verbose contradict each other")
    configure_logging(args.quiet, args.verbose)
    if args.quiet and hasattr(args, "no_progress"):
        args.no_progress = True  # quiet: no progress bar in any command
    from cyclesim.outputs import Interrupted

    fresh: list[Path] = []  # outputs this run creates: removed again if it is cut short
    previous = {}
    try:
        previous = install_interrupt_handler()
        memory_reserve[:] = [bytearray(RESERVE_BYTES)]
        check_outputs(args)
        fresh = new_outputs(args)
        with _quiet_stdout(args):
            return int(args.func(args) or 0)
    except MemoryError:
        return out_of_memory(args, fresh)
    except (Interrupted, KeyboardInterrupt) as exc:
        return interrupted(getattr(exc, "signum", 2), fresh)
    except CyclesimError as exc:  # prefixed with the sub-command where it declares one
        print(f"{getattr(args, 'error_prefix', 'cyclesim')}: {exc}", file=sys.stderr)
        return exit_code(exc)
    except BrokenPipeError:
        return 0
    except OSError as exc:  # an output that could not be written after all (disk full, ...)
        remove_begun(fresh)
        where = f" {exc.filename}" if exc.filename else ""
        print(f"cyclesim: cannot write{where}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    finally:
        memory_reserve.clear()
        import signal

        for sig, handler in previous.items():
            signal.signal(sig, handler)
