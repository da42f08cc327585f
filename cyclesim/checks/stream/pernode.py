"""Per-node check: each core's tile, with the ZigZag mapping Stream's search chose, replayed alone
through the ZigZag adapter and set against the cycles Stream charged it (latency_total2 minus the
systolic drain). A difference here is inside a core; one that is not here is between cores."""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from cyclesim.checks.stream.model import StreamAccelerator
from cyclesim.checks.stream.read import CORE_FIELDS
from cyclesim.checks.stream.schedule import StreamRun
from cyclesim.checks.zigzag.cases import write_case
from cyclesim.errors import CyclesimError


@dataclass(frozen=True, slots=True)
class NodeCheck:
    """One (group, node, core): Stream's charge, zigzag-dse's and our model's cost at Stream's
    mapping, the replay alone on the core, and the mechanisms behind any difference."""

    group: int
    node: str
    core: int
    stream_cycles: float  # what Stream charged the slot for this core's tile
    drain_cycles: float
    zigzag_cycles: float | None  # zigzag-dse at the same mapping, latency_total2 - drain
    model_cycles: float | None  # cyclesim's reimplementation of ZigZag's model, same
    replay_cycles: float | None  # the tile replayed alone on the core
    explanations: tuple[str, ...]
    missing: str | None  # why a column is missing (ZigZag case not replayable, ...)

    @property
    def difference(self) -> float | None:
        """Replay minus Stream's charge."""
        return None if self.replay_cycles is None else self.replay_cycles - self.stream_cycles


def zigzag_names(case: dict) -> dict:
    """The ZigZag case with Stream's operand names (A, B) renamed to the ones zigzag-dse's
    workload validator accepts (I, W), inputs in their order; O stays."""
    workload = case["workload"]
    inputs = [op for op in workload["operand_source"] if op not in ("I", "W")]
    free = [n for n in ("I", "W") if n not in workload["operand_source"]]
    names = dict(zip(inputs, free, strict=False))
    if not names:
        return case

    def rename(op: str) -> str:
        return names.get(op, op)

    equation = re.sub(r"\b([A-Za-z_]\w*)(?=\[)", lambda m: rename(m.group(1)), workload["equation"])
    renamed_workload = {
        **workload,
        "equation": equation,
        "operand_precision": {rename(k): v for k, v in workload["operand_precision"].items()},
        "operand_source": {rename(k): v for k, v in workload["operand_source"].items()},
    }
    mapping = {
        **case["mapping"],
        "memory_operand_links": {
            rename(k): v for k, v in case["mapping"]["memory_operand_links"].items()
        },
    }
    temporal = {rename(k): v for k, v in case["temporal_mapping"].items()}
    return {**case, "workload": renamed_workload, "mapping": mapping, "temporal_mapping": temporal}


def zigzag_core_yaml(core_file: str) -> dict:
    """A Stream core file as a plain ZigZag core (Stream's own fields dropped)."""
    data = yaml.safe_load(Path(core_file).read_text())
    return {k: v for k, v in data.items() if k not in CORE_FIELDS}


def check_nodes(
    run: StreamRun, accelerator: StreamAccelerator, *, use_peer: bool = True
) -> tuple[NodeCheck, ...]:
    """Check every (node, core) of every group; identical tiles on identical cores run once."""
    from cyclesim.checks.zigzag.check import run_check

    done: dict[str, tuple] = {}
    rows = []
    with tempfile.TemporaryDirectory(prefix="cyclesim-stream-nodes-") as folder:
        for group in run.groups:
            for node in group.nodes:
                for on_core in node.cores:
                    case = on_core.zigzag and zigzag_names(on_core.zigzag)
                    if case is None:
                        rows.append(
                            NodeCheck(
                                group.index,
                                node.name,
                                on_core.core,
                                on_core.latency_cycles,
                                on_core.drain_cycles,
                                None,
                                None,
                                None,
                                (),
                                "Stream costed this node without ZigZag (its ideal-cycle fallback)",
                            )  # fmt: skip
                        )
                        continue
                    core = zigzag_core_yaml(accelerator.core(on_core.core).file)
                    key = hashlib.sha256(
                        json.dumps(
                            [core, case["workload"], case["mapping"], case["temporal_mapping"]],
                            sort_keys=True,
                        ).encode()
                    ).hexdigest()[:16]
                    if key not in done:
                        done[key] = _check_one(folder, key, core, case, use_peer, run_check)
                    zigzag, model, replay, explanations, missing = done[key]
                    rows.append(
                        NodeCheck(
                            group.index,
                            node.name,
                            on_core.core,
                            on_core.latency_cycles,
                            on_core.drain_cycles,
                            zigzag,
                            model,
                            replay,
                            explanations,
                            missing,
                        )  # fmt: skip
                    )
    return tuple(rows)


def _check_one(folder: str, key: str, core: dict, case: dict, use_peer: bool, run_check) -> tuple:
    # zigzag-dse's mapping validator wants a `default` entry next to the layer's own
    mappings = [case["mapping"], {**case["mapping"], "name": "default"}]
    files = write_case(folder, key, core, [case["workload"]], mappings, case["temporal_mapping"])
    drain = float(case.get("systolic_drain_cycle") or 0)
    try:
        check = run_check(
            files.accelerator, files.workload, files.mapping, files.temporal_mapping,
            use_peer=use_peer,
        )  # fmt: skip
    except CyclesimError as exc:
        return None, None, None, (), f"the ZigZag case of this tile is not replayed: {exc}"
    zigzag = None if check.zigzag is None else check.zigzag.latency_total - drain
    # the replay runs the tile as a layer of its own: its drain is there once; Stream adds the
    # drains along the longest chain of dependent nodes at the end of the group instead
    replay = check.replay.latency_total - drain
    model = check.analytical.latency_total - drain
    explanations = tuple(check.explanations)
    if drain:
        explanations = (
            f"drain: the array's systolic drain ({drain:g} cycles) is taken off every side here, as "
            "Stream does: it adds the drains along its longest chain of dependent nodes once, in the fill",
        ) + explanations
    return zigzag, model, replay, explanations, check.zigzag_missing
