"""The output paths of every sub-command: checked before anything runs, and the ones a run
created, removed again when it is cut short.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from cyclesim.errors import OptionError
from cyclesim.views import WAVES, save_file_of

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
# outputs whose suffix chooses or names a format (a waveform's or a saved run's file under
# another suffix is a file other tools misread: --vcd run.fst, --fst run.vcd) and that have no default (views/tables.py; a Perfetto
# trace is Chrome JSON, gzipped or not, or Perfetto's protobuf: views.write_perfetto)
FORMAT_SUFFIXES = {
    "vcd": (".vcd",),
    "fst": (".fst",),
    "save_run": (".json",),
    "events": (".csv", ".parquet", ".pq"),
    "perfetto": (".json", ".json.gz", ".pftrace", ".pb"),
    "html": (".html", ".htm"),
}
IMAGE_SUFFIXES = (".png", ".svg", ".pdf")
# where a command writes fewer formats: the chip's Perfetto trace is Trace Event JSON only
COMMAND_SUFFIXES = {("chip", "perfetto"): (".json", ".json.gz")}


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
            IMAGE_SUFFIXES
            if option == "plot" and not folder
            else COMMAND_SUFFIXES.get((args.command, option)) or FORMAT_SUFFIXES.get(option, ())
        )
        if suffixes and not value.lower().endswith(suffixes):
            raise OptionError(
                f"{flag} {value}: the suffix chooses the format; use one of {', '.join(suffixes)}"
                if len(suffixes) > 1
                else f"{flag} {value}: this file's name must end in {suffixes[0]}"
            )
        parent = path if path.is_dir() else path.parent
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
        if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
            raise OptionError(
                f"{flag} {value} cannot be written: {parent} is not a writable directory"
            )


def new_outputs(args: argparse.Namespace) -> list[Path]:
    """The output files named on the command line that do not exist yet."""
    out = []
    for option in OUTPUT_OPTIONS:
        if option == "out" and getattr(args, "command", None) == "sweep":
            continue  # a sweep's folder keeps its cache of finished points, even when cut short
        value = getattr(args, option, None)
        if not isinstance(value, str) or value in ("", "-"):
            continue
        # the waveform's save file as the writer names it (an FST beside a VCD of the same stem
        # gets X.fst.gtkw): removed with it when the run is cut short
        companions = [save_file_of(args, option)] if option in WAVES else []
        out += [p for p in (Path(value), *companions) if not p.exists()]
        made = None  # the outermost folder the output's path still lacks: made by this run
        for parent in Path(value).absolute().parents:
            if parent.exists():
                break
            made = parent
        if made is not None:
            out.append(made)
    return out


def remove_begun(fresh: list[Path]) -> None:
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
