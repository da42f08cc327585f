"""A saved run: the three input files' text, the policy and the totals, in one JSON file.

`cyclesim run ... --save-run RUN.json` writes it; `cyclesim explain RUN.json - -` (or with the
three paths) reads it back and replays the same inputs.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from cyclesim.errors import SpecError
from cyclesim.outputs import atomic_output
from cyclesim.results import Result
from cyclesim.spec.yamlio import (
    MAX_FILE_BYTES,
    Lines,
    StrictModel,
    check_depth,
    parse_yaml_text,
    pydantic_to_spec_error,
    read_json,
    read_text,
)

FORMAT = "cyclesim-run/1"
SCHEMA_VERSION = 1


@atomic_output
def save_run(
    res: Result, arch_path: str, workload_path: str, mapping_path: str, path: str | Path
) -> None:
    """Write the inputs (verbatim) with the run's policy, totals and stalls."""
    doc = dict(
        format=FORMAT,
        schema_version=SCHEMA_VERSION,
        inputs={
            k: read_text(p)
            for k, p in (
                ("arch", arch_path),
                ("workload", workload_path),
                ("mapping", mapping_path),
            )
        },
        reuse=res.reuse,
        isolate_einsums=res.isolate_einsums,
        cycles=res.cycles,
        result=res.to_json_dict() | {"wall_seconds": None},
    )
    Path(path).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")


class _Inputs(StrictModel):
    arch: str = Field(max_length=MAX_FILE_BYTES)
    workload: str = Field(max_length=MAX_FILE_BYTES)
    mapping: str = Field(max_length=MAX_FILE_BYTES)


class _SavedRun(StrictModel):
    """The schema of a saved run; `schema_version` counts incompatible changes (absent: 1)."""

    format: Literal["cyclesim-run/1"]
    schema_version: Literal[1] = SCHEMA_VERSION
    inputs: _Inputs
    reuse: Literal["retain", "strict"]
    isolate_einsums: bool
    cycles: int = Field(ge=0, le=2**63 - 1)
    result: dict[str, Any]


def read_saved_run(path: str) -> dict:
    """Read and validate a saved run; raise SpecError naming the file, field and line.

    A file that is not a JSON object at all (a YAML input given by mistake) is refused as not
    a saved run, like a JSON file without the format; a saved run cut short is invalid JSON.
    """
    if not read_text(path).lstrip().startswith("{"):
        raise _not_saved(str(path), None)
    data, name = read_json(path)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise _not_saved(name, data.get("format") if isinstance(data, dict) else None)
    check_depth(data, name)
    try:
        _SavedRun.model_validate(data)
    except ValidationError as exc:
        raise pydantic_to_spec_error(exc, _SavedRun, name, _json_lines(path)) from None
    return data


def check_same_cycles(saved: dict, res: Result) -> None:
    """Refuse a saved run whose replay no longer gives its cycles: what is shown would not be
    the run that was saved (the simulator changed, or the file was edited)."""
    from cyclesim.errors import CyclesimError

    if saved.get("cycles") != res.cycles:
        raise CyclesimError(  # (the saved run's schema makes its cycles an integer)
            f"the saved run had {saved['cycles']:,} cycles, this replay of its inputs {res.cycles:,}: "
            "the simulator changed since it was saved; rerun `cyclesim run --save-run`"
        )


def _not_saved(name: str, found: object) -> SpecError:
    return SpecError(
        "not a saved run",
        file=name,
        found=found,
        expected=f"format {FORMAT!r}; save one with `cyclesim run --save-run`",
    )


def _json_lines(path: str) -> Lines:
    """Lines of the top-level keys and of `inputs.*` (save_run writes one key per line)."""
    lines: Lines = {(): 1}
    try:
        text = read_text(path)
    except SpecError:
        return lines
    for number, line in enumerate(text.splitlines(), 1):
        match = re.match(r'^( *)"(\w+)":', line)
        if match is None:
            continue
        indent, key = len(match.group(1)), match.group(2)
        if indent == 1:
            lines.setdefault((key,), number)
        elif indent == 2 and ("inputs",) in lines and key in ("arch", "workload", "mapping"):
            lines.setdefault(("inputs", key), number)
    return lines


def load_inputs(arch: str, workload: str, mapping: str):
    """(Architecture, Workload, Mapping, saved-run dict or None) from three paths or a saved run.

    A saved run is given as the first path, with '-' for the other two.
    """
    from cyclesim.spec import load_architecture, load_mapping, load_workload

    if arch.endswith(".json") and workload == "-" and mapping == "-":
        return load_saved_run(arch)
    a = load_architecture(arch)
    w = load_workload(workload)
    return a, w, load_mapping(mapping, a, w), None


def load_saved_run(path: str):
    """(Architecture, Workload, Mapping, saved-run dict) of the saved run at `path`."""
    saved = read_saved_run(path)
    return (*_from_text(saved, path), saved)


def _from_text(saved: dict, source: str):
    """Validate the saved inputs as if read from files named '<source>:arch' and so on."""
    from cyclesim.spec import architecture_from_dict, mapping_from_dict, workload_from_dict

    texts = [saved["inputs"][k] for k in ("arch", "workload", "mapping")]
    a = architecture_from_dict(*_parsed(texts[0], f"{source}:arch"))
    w = workload_from_dict(*_parsed(texts[1], f"{source}:workload"))
    data, name, lines = _parsed(texts[2], f"{source}:mapping")
    return a, w, mapping_from_dict(data, a, w, name, lines)


def _parsed(text: str, name: str):
    data, lines, name = parse_yaml_text(text, name)
    return data, name, lines
