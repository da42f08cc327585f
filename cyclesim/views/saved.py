"""A saved run: the three input files' text, the policy and the totals, in one JSON file.

`cyclesim run ... --save-run RUN.json` writes it; `cyclesim explain RUN.json - -` (or with the
three paths) reads it back and replays the same inputs.
"""

from __future__ import annotations

import json
from pathlib import Path

from cyclesim.errors import CyclesimError
from cyclesim.results import SimResult

FORMAT = "cyclesim-run/1"


def save_run(
    res: SimResult, arch_path: str, workload_path: str, mapping_path: str, path: str | Path
) -> None:
    """Write the inputs (verbatim) with the run's policy, totals and stalls."""
    doc = dict(
        format=FORMAT,
        inputs={
            k: Path(p).read_text(encoding="utf-8")
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


def load_inputs(arch: str, workload: str, mapping: str):
    """(Architecture, Workload, Mapping, saved-run dict or None) from three paths or a saved run.

    A saved run is given as the first path, with '-' for the other two.
    """
    from cyclesim.spec import load_architecture, load_mapping, load_workload

    saved = None
    if arch.endswith(".json") and workload == "-" and mapping == "-":
        try:
            saved = json.loads(Path(arch).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CyclesimError(f"{arch}: cannot read the saved run ({exc})") from exc
        if not isinstance(saved, dict) or saved.get("format") != FORMAT:
            raise CyclesimError(
                f"{arch}: not a saved run (expected format {FORMAT!r}); save one with `cyclesim run --save-run`"
            )
        return (*_from_text(saved, arch), saved)
    a = load_architecture(arch)
    w = load_workload(workload)
    return a, w, load_mapping(mapping, a, w), saved


def _from_text(saved: dict, source: str):
    """Validate the saved inputs as if read from files named '<source>:arch' and so on."""
    from cyclesim.spec import architecture_from_dict, mapping_from_dict, workload_from_dict

    try:
        texts = [saved["inputs"][k] for k in ("arch", "workload", "mapping")]
    except (KeyError, TypeError) as exc:
        raise CyclesimError(f"{source}: the saved run lacks its inputs ({exc})") from exc
    a = architecture_from_dict(*_parsed(texts[0], f"{source}:arch"))
    w = workload_from_dict(*_parsed(texts[1], f"{source}:workload"))
    data, name, lines = _parsed(texts[2], f"{source}:mapping")
    return a, w, mapping_from_dict(data, a, w, name, lines)


def _parsed(text: str, name: str):
    from cyclesim.spec.yamlio import parse_yaml_text

    data, lines, name = parse_yaml_text(text, name)
    return data, name, lines
