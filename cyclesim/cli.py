"""The `cyclesim` command: run, explain, check zigzag|accelforge|scalesim|stream, chip, l1, dram,
sweep, rank, report."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

from cyclesim import __version__
from cyclesim.errors import CyclesimError, DeadlockError, FoundFailure, OptionError

log = logging.getLogger("cyclesim")


def _load(args: argparse.Namespace):
    from cyclesim.spec import load_architecture, load_mapping, load_workload

    arch = load_architecture(args.arch)
    workload = load_workload(args.workload)
    mapping = load_mapping(args.mapping, arch, workload)
    return arch, workload, mapping


def add_replay_arguments(p: argparse.ArgumentParser) -> None:
    """ARCH WORKLOAD MAPPING and the policy switches, shared by run and explain."""
    p.add_argument("arch", help="architecture YAML (hw_models/*.yaml)")
    p.add_argument("workload", help="workload YAML: one or more Einsums")
    p.add_argument("mapping", help="mapping YAML: the loop tree")
    p.add_argument(
        "--reuse",
        choices=["retain", "strict"],
        default="retain",
        help="retain: refill only when a tile changes (hardware); strict: on every loop iteration (AccelForge)",
    )
    p.add_argument(
        "--isolate-einsums",
        action="store_true",
        help="evaluate each Einsum alone, exchanging tensors only through backing stores (AccelForge)",
    )
    p.add_argument(
        "--json", action="store_true", help="one JSON object on stdout instead of the report"
    )
    p.add_argument("--no-progress", action="store_true", help="never show the progress bar")
    p.add_argument(
        "--no-fast-forward",
        action="store_true",
        help="replay every loop iteration, even those that repeat an exactly equal state "
        "(same result, slower; a check of the fast-forward)",
    )


def run_options(args: argparse.Namespace, **choices):
    """The RunOptions the switches of add_replay_arguments give, with choices on top (a trace,
    or a saved run's reuse): what run and explain hand to the engine."""
    from dataclasses import replace

    from cyclesim.engine import RunOptions

    options = RunOptions(
        reuse=args.reuse,
        isolate_einsums=args.isolate_einsums,
        progress=False if args.no_progress else None,
        fast_forward=not args.no_fast_forward,
    )
    return replace(options, **choices)


def log_replay(res, name: str) -> None:
    """-v: how long the replay took and what fast-forward skipped, or that it skipped nothing."""
    log.info("replayed %s in %.2f s (%s events)", name, res.wall_seconds, f"{res.engine_events:,}")
    ff = res.raw.fast_forward
    if ff.jumps:
        log.info(
            "fast-forward skipped %s of %s cycles (%s periods of a repeating loop in %d jumps)",
            f"{ff.cycles_skipped:,}",
            f"{res.cycles:,}",
            f"{ff.periods:,}",
            ff.jumps,
        )
    elif ff.off_because:
        log.info("fast-forward stayed off: this replay has %s", ff.off_because)
    elif res.raw.fast_forward_on:
        log.info("fast-forward skipped nothing: no loop repeated an equal state")
    else:
        log.info("fast-forward off (--no-fast-forward): every cycle simulated")


def cmd_run(args: argparse.Namespace) -> int:
    from cyclesim.analysis.simulate import replay, report_text

    arch, workload, mapping = _load(args)
    in_loop = [
        m.name for m in arch.memories if m.dram is not None and m.dram.config.replay_controller
    ]
    if args.dram_trace and not in_loop:
        raise OptionError(
            "--dram-trace records the requests of a DRAM controller in the replay's loop: "
            "give a memory's dram: block `timing: controller`"
        )
    try:
        from cyclesim.views import tracing_requested
    except ImportError:  # views not installed: nothing to trace
        tracing, trace_filter = False, None
    else:
        tracing, trace_filter = tracing_requested(args), _trace_filter(args)
        if trace_filter is not None and not tracing:  # it would select from nothing
            raise OptionError(
                "--window and --only choose what a trace keeps: give one of --vcd, --fst, "
                "--perfetto, --plot or --events with them"
            )
    options = run_options(args, trace=tracing, trace_filter=trace_filter if tracing else None)
    res = replay(arch, workload, mapping, options)
    log_replay(res, mapping.name)
    if args.dram_trace:
        from cyclesim.engine.dram_loop import write_dram_trace

        for name in in_loop:
            path = Path(args.dram_trace)
            if len(in_loop) > 1:
                path = path.with_name(f"{path.name}.{name}")
            write_dram_trace(path, res.raw.rec.dram_requests[name])
            log.info("wrote %s", path)
    args.title = res.title  # plots, Perfetto
    args.architecture, args.run_name = arch, mapping.name  # --csv summaries
    for path in _write_views(args, res):
        log.info("wrote %s", path)
    if args.json:
        json.dump(res.to_dict(), sys.stdout, indent=1)
        sys.stdout.write("\n")
    elif not args.quiet:  # -q: errors only, no report
        print(report_text(res))
    return 0


def _trace_filter(args: argparse.Namespace):
    """The TraceFilter asked for with --window / --only (None: record everything)."""
    window, only = getattr(args, "window", None), getattr(args, "only", None)
    if window is None and only is None:
        return None
    from cyclesim.engine import TraceFilter

    start, end = window if window is not None else (0, None)
    return TraceFilter(start, end, only)


def _write_views(args: argparse.Namespace, res) -> list:
    """Trace files and plots requested on the command line (views read the Result)."""
    try:
        from cyclesim.views import write_requested
    except ImportError:
        if (
            getattr(args, "vcd", None)
            or getattr(args, "perfetto", None)
            or getattr(args, "plot", None)
        ):
            raise CyclesimError("trace views are not available in this build") from None
        return []
    return write_requested(args, res)


class _Version(argparse.Action):
    """--version: the version and which DRAM timer a replay would use (imported only here)."""

    def __init__(self, option_strings, dest, help=None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        from cyclesim.dram.native import NATIVE_KIND

        print(f"{parser.prog} {__version__}\nDRAM timer: {NATIVE_KIND}")
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
  2  bad input: a wrong file, field or option, or an output path that cannot be written
  3  the replay cannot progress (a deadlock between its processes)
  4  out of memory: nothing was written (one layer at a time, fewer workers, no trace)
  130, 143  interrupted by SIGINT (Ctrl-C) or SIGTERM: no partial output, no peer left running"""

# Output options of every sub-command: checked before anything runs ("-" is refused: none
# goes to stdout). Some name
# a directory (plots of `run`, CSV summaries, a sweep's output folder), the others a file.
OUTPUT_OPTIONS = (
    "vcd",
    "perfetto",
    "plot",
    "events",
    "save_run",
    "csv",
    "fst",
    "out",
    "table",
    "html",
    "dram_trace",
)
DIRECTORY_OPTIONS = ("plot", "csv", "out")
# outputs whose suffix chooses a format and that have no default (views/tables.py; a Perfetto
# trace is Chrome JSON, gzipped or not, or Perfetto's protobuf: views.write_perfetto)
FORMAT_SUFFIXES = {
    "events": (".csv", ".parquet", ".pq"),
    "perfetto": (".json", ".json.gz", ".pftrace", ".pb"),
    "html": (".html", ".htm"),
}
IMAGE_SUFFIXES = (".png", ".svg", ".pdf")


def exit_code(exc: BaseException) -> int:
    """The exit code of an error cyclesim raised on purpose (the one table of them)."""
    if isinstance(exc, DeadlockError):
        return 3
    if isinstance(exc, FoundFailure):
        return 1
    return 2


def check_outputs(args: argparse.Namespace) -> None:
    """Refuse an output path that cannot be written, before the replay spends any time."""
    for option in OUTPUT_OPTIONS:
        value = getattr(args, option, None)
        if not isinstance(value, str) or value == "":
            continue
        path = Path(value)
        flag = "--" + option.replace("_", "-")
        if value == "-":  # no output goes to stdout: not a file named '-' either
            raise OptionError(f"{flag} -: this output is written to a file, not to stdout; "
                              "give a file name")  # fmt: skip
        # `run --plot`, `chip --plot` and `--csv` name folders (`l1 --plot` and `check zigzag
        # --plot` an image)
        folder = option in DIRECTORY_OPTIONS and (
            option != "plot" or args.command in ("run", "chip")
        )
        if path.is_dir() and not folder:
            raise OptionError(f"{flag} {value} is a directory; a file path is expected")
        if folder and path.exists() and not path.is_dir():
            raise OptionError(f"{flag} {value} is a file; a directory is expected")
        # an image without a suffix is saved by matplotlib as PATH.png: not the path asked for
        suffixes = (
            IMAGE_SUFFIXES if option == "plot" and not folder else FORMAT_SUFFIXES.get(option, ())
        )
        if suffixes and not value.lower().endswith(suffixes):
            raise OptionError(
                f"{flag} {value}: the suffix chooses the format; use one of {', '.join(suffixes)}"
            )
        parent = path if path.is_dir() else path.parent
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
        if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
            raise OptionError(
                f"{flag} {value} cannot be written: {parent} is not a writable directory"
            )


OUT_OF_MEMORY = 4  # exit code: the replay's records did not fit in memory


def _new_outputs(args: argparse.Namespace) -> list[Path]:
    """The output files named on the command line that do not exist yet."""
    out = []
    for option in OUTPUT_OPTIONS:
        if option == "out" and getattr(args, "command", None) == "sweep":
            continue  # a sweep's folder keeps its cache of finished points, even when cut short
        value = getattr(args, option, None)
        if not isinstance(value, str) or value in ("", "-"):
            continue
        companions = [Path(value).with_suffix(".gtkw")] if option in ("vcd", "fst") else []
        out += [p for p in (Path(value), *companions) if not p.exists()]
        made = None  # the outermost folder the output's path still lacks: made by this run
        for parent in Path(value).absolute().parents:
            if parent.exists():
                break
            made = parent
        if made is not None:
            out.append(made)
    return out


RESERVE_BYTES = 8 << 20  # freed first when memory runs out, so that the handler itself can run
_reserve: list[bytearray] = []


def _remove_begun(fresh: list[Path]) -> None:
    """Remove the outputs this run created (files, and folders it made) and every output still
    under its temporary name."""
    import shutil

    from cyclesim.outputs import remove_temporary_files

    remove_temporary_files()
    for path in sorted(fresh, key=lambda p: p.is_dir()):  # files, then the folders made
        try:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif path.exists() or path.is_symlink():
                path.unlink()
        except OSError:
            pass


def _remedies(args: argparse.Namespace) -> str:
    """What the user can change to need less memory: only options this command has."""
    tips = []
    if hasattr(args, "layer"):
        tips.append("one layer at a time (--layer)")
    if hasattr(args, "workers"):
        tips.append("fewer --workers")
    if hasattr(args, "window"):
        tips.append("a trace --window or no trace")
    if getattr(args, "command", None) == "dram":
        tips.append("a shorter trace")
    return ", ".join([*tips, "or a machine with more memory"])


def _out_of_memory(args: argparse.Namespace, fresh: list[Path]) -> int:
    """One line for a run that ran out of memory; the outputs it began are removed. The reserve
    is freed first: the handler itself needs memory to build its line."""
    _reserve.clear()
    try:
        _remove_begun(fresh)
        what = [
            " ".join(v for v in (getattr(args, "command", None), getattr(args, "peer", None)) if v)
        ]
        for option in ("layer", "accelerator", "architecture", "arch", "workload", "mapping"):
            value = getattr(args, option, None)
            if isinstance(value, str) and value:
                what.append(f"--{option} {value}")
        line = (
            f"{getattr(args, 'error_prefix', 'cyclesim')}: ran out of memory running "
            f"{' '.join(what)}; nothing was written. Try {_remedies(args)}\n"
        )
    except MemoryError:  # even the reserve was not enough: the fixed line
        line = "cyclesim: ran out of memory; nothing was written\n"
    _say(line)
    return OUT_OF_MEMORY


def _interrupted(signum: int, fresh: list[Path]) -> int:
    """SIGINT or SIGTERM: peers terminated, outputs begun removed, one line, 128 + signal."""
    import signal

    from cyclesim.outputs import terminate_peers

    for sig in (signal.SIGINT, signal.SIGTERM):  # a second signal must not cut the cleanup short
        signal.signal(sig, signal.SIG_IGN)
    terminate_peers()
    _remove_begun(fresh)
    _say("cyclesim: interrupted\n")
    return 128 + signum


def _say(line: str) -> None:
    """One line on stderr, written even when the stream object cannot allocate."""
    try:
        sys.stderr.write(line)
        sys.stderr.flush()
    except (OSError, MemoryError, ValueError):
        try:
            os.write(2, line.encode("utf-8", "replace"))
        except OSError:
            pass


def _install_interrupt_handler() -> dict:
    """SIGINT and SIGTERM raise Interrupted in the main thread (one path for both); returns the
    handlers it replaced (restored when main returns: tests call main in-process)."""
    import signal
    import threading

    from cyclesim.outputs import raise_interrupt

    if threading.current_thread() is not threading.main_thread():
        return {}

    def handler(signum: int, _frame) -> None:
        raise_interrupt(signum)

    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        previous[sig] = signal.signal(sig, handler)
    return previous


def _environment_error() -> str | None:
    """CYCLESIM_PURE_PYTHON with a value that is neither yes nor no, in words (it is the
    user's input: exit 2), else None; the engine is imported only when the variable is set."""
    if "CYCLESIM_PURE_PYTHON" not in os.environ:
        return None
    from cyclesim.dram.native import pure_python_requested

    try:
        pure_python_requested()
    except ValueError as exc:
        return str(exc)
    return None


def main(argv: list[str] | None = None) -> int:
    """Run the command; print an error as one line on stderr and return its exit code."""
    if (odd := _environment_error()) is not None:  # before --version, which reports the timer
        print(f"cyclesim: {odd}", file=sys.stderr)
        return 2
    parser = build_parser()
    args = parser.parse_args(argv)
    configure_logging(args.quiet, args.verbose)
    if args.quiet and hasattr(args, "no_progress"):
        args.no_progress = True  # quiet: no progress bar in any command
    from cyclesim.outputs import Interrupted

    fresh: list[Path] = []  # outputs this run creates: removed again if it is cut short
    previous = {}
    try:
        previous = _install_interrupt_handler()
        _reserve[:] = [bytearray(RESERVE_BYTES)]
        check_outputs(args)
        fresh = _new_outputs(args)
        return int(args.func(args) or 0)
    except MemoryError:
        return _out_of_memory(args, fresh)
    except (Interrupted, KeyboardInterrupt) as exc:
        return _interrupted(getattr(exc, "signum", 2), fresh)
    except CyclesimError as exc:  # prefixed with the sub-command where it declares one
        print(f"{getattr(args, 'error_prefix', 'cyclesim')}: {exc}", file=sys.stderr)
        return exit_code(exc)
    except BrokenPipeError:
        return 0
    except OSError as exc:  # an output that could not be written after all (disk full, ...)
        _remove_begun(fresh)
        where = f" {exc.filename}" if exc.filename else ""
        print(f"cyclesim: cannot write{where}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    finally:
        _reserve.clear()
        import signal

        for sig, handler in previous.items():
            signal.signal(sig, handler)


if __name__ == "__main__":
    sys.exit(main())
