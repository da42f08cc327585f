"""`cyclesim check zigzag`: the replay, our reimplementation of ZigZag's model and the real zigzag-dse, side by side.

Rows: total latency, ideal compute, stall, onloading, offloading, each with the replay's cycles
by cause below it; then word accesses per operand, memory and direction in ZigZag's conventions
(port-width words summed over instances). Each differing row carries one sentence naming the
mechanism. The replay's side is read from its Result tables only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from math import ceil
from typing import TYPE_CHECKING

from cyclesim.checks.zigzag.explain import count, explain
from cyclesim.checks.zigzag.inputs import DataDirection, ZigZagInputs
from cyclesim.checks.zigzag.latency import ZigZagLatency
from cyclesim.checks.zigzag.mapping import mapping_quantities
from cyclesim.checks.zigzag.model import evaluate
from cyclesim.checks.zigzag.read import load_zigzag_inputs
from cyclesim.checks.zigzag.stalls import PHASES, stall_groups
from cyclesim.checks.zigzag.terms import (
    JSON_NAMES,
    PHASE_TERMS,
    TERM_NAMES,
    TERMS,
    AccessRow,
    Terms,
)
from cyclesim.checks.zigzag.to_spec import DIRECTION_NAMES, import_zigzag, slot_flags
from cyclesim.errors import PeerUnavailable

if TYPE_CHECKING:
    from cyclesim.checks.zigzag.peer import PeerResult
    from cyclesim.results import Result


@dataclass(frozen=True, slots=True)
class ZigZagCheck:
    """The side-by-side comparison of one ZigZag case."""

    replay: Terms
    analytical: Terms
    zigzag: Terms | None
    zigzag_missing: str | None
    stall_causes: tuple[
        tuple[str, str, int], ...
    ]  # (phase, cause, cycles), largest first per phase
    accesses: tuple[AccessRow, ...]
    explanations: tuple[str, ...]
    result: Result = field(repr=False, compare=False)
    model: ZigZagLatency = field(repr=False, compare=False)
    inputs: ZigZagInputs = field(repr=False, compare=False)  # as replayed: ZigZag's choices in

    def causes(self, phase: str) -> dict[str, int]:
        """The replay's cycles by cause in one phase (onload, compute, offload)."""
        return {cause: cycles for p, cause, cycles in self.stall_causes if p == phase}

    def to_json(self) -> dict:
        """The --json object: replay, analytical, zigzag (null if missing), accesses, explanations."""

        def terms(t: Terms | None) -> dict | None:
            return None if t is None else {JSON_NAMES[name]: getattr(t, name) for name in TERMS}

        return {
            "replay": {
                **terms(self.replay),
                **{f"{JSON_NAMES[PHASE_TERMS[p]]}_by_cause": self.causes(p) for p in PHASES},
            },
            "analytical": terms(self.analytical),
            "zigzag": terms(self.zigzag),
            "zigzag_missing": self.zigzag_missing,
            "accesses": [
                {
                    "operand": a.operand,
                    "memory": a.memory,
                    "direction": a.direction.words,
                    "replay": a.replay,
                    "analytical": a.analytical,
                    "zigzag": a.zigzag,
                }  # fmt: skip
                for a in self.accesses
            ],
            "explanations": list(self.explanations),
        }


def replay_case(inputs: ZigZagInputs) -> Result:
    """Import a ZigZag case with a fixed temporal mapping into cyclesim's spec and replay it."""
    from cyclesim.analysis.simulate import replay

    spec = import_zigzag(inputs)
    return replay(spec.architecture, spec.workload, spec.mapping, progress=False)


def replay_terms(result: Result) -> Terms:
    """The five terms of a replay, read from its totals table."""
    t = result.totals.iloc[0]
    return Terms(
        int(t["cycles"]),
        int(t["ideal_compute_cycles"]),
        int(t["stall_cycles"]),
        int(t["onload_cycles"]),
        int(t["offload_cycles"]),
    )


def _replay_values(result: Result) -> dict[tuple[str, str, str], tuple[int, int]]:
    """(tensor, memory, direction) -> (values, bits) summed over Einsums, from detailed_accesses."""
    df = result.detailed_accesses
    summed = df.groupby(["tensor", "memory", "direction"], sort=False)[["values", "bits"]].sum()
    return {key: (int(v), int(b)) for key, (v, b) in summed.iterrows()}


def _replay_words(
    inputs: ZigZagInputs, q, values: dict, op: str, m: int, direction: DataDirection
) -> int | None:
    """The replay's values converted to ZigZag words: whole periods of ZigZag's size, rounded per period."""
    memory = inputs.accelerator.levels(inputs.mapping.memory_operand(op))[m]
    count, bits = values.get((op, memory.name, DIRECTION_NAMES[direction].value), (0, 0))
    if count == 0:
        return 0
    port = memory.port_for(inputs.mapping.memory_operand(op), direction)
    link = q.links[(op, m, direction)]
    per_period = link.elements_per_period * q.unit_count[op][m + 1]
    if port is None or per_period == 0 or count % per_period:
        return None
    periods = count // int(per_period)
    bits_per_transfer = bits // (periods * q.unit_count[op][m + 1])
    words = ceil(bits_per_transfer / port.bandwidth_min_bits) * (
        port.bandwidth_min_bits / port.bandwidth_max_bits
    )
    return int(words * periods * q.unit_count[op][m + 1])


def run_check(
    accelerator: str,
    workload: str,
    mapping: str,
    temporal_mapping: str | None = None,
    *,
    layer_name: str | None = None,
    use_peer: bool = True,
    result: Result | None = None,
) -> ZigZagCheck:
    """Replay, model and peer on one ZigZag case. Raise SpecError for bad inputs.

    `result` is an already-run replay of this very case (e.g. of the committed example YAML
    generated from it); without it the case is imported and replayed here.
    """
    inputs, theirs, missing = choose_mapping(
        accelerator,
        workload,
        mapping,
        temporal_mapping,
        layer_name=layer_name,
        use_peer=use_peer,
    )
    return compare(inputs, replay_case(inputs) if result is None else result, theirs, missing)


def choose_mapping(
    accelerator: str,
    workload: str,
    mapping: str,
    temporal_mapping: str | None = None,
    *,
    layer_name: str | None = None,
    use_peer: bool = True,
) -> tuple[ZigZagInputs, PeerResult | None, str | None]:
    """The inputs as ZigZag evaluates them (its spatial and temporal choice when it runs), its
    result, and why it is missing. Raise SpecError for bad inputs, PeerUnavailable when only
    zigzag-dse could complete the mapping and it cannot run."""
    from cyclesim.checks.zigzag import peer

    inputs = load_zigzag_inputs(
        accelerator, workload, mapping, temporal_mapping, layer_name=layer_name
    )
    theirs, missing = None, None
    if use_peer:
        try:
            theirs = peer.run_zigzag(
                accelerator, workload, mapping, temporal_mapping, layer_name=layer_name
            )
        except PeerUnavailable as exc:
            missing = str(exc)
    else:
        missing = "not asked for (--no-peer)"
    if theirs is None and not inputs.mapping.spatial_complete:
        raise PeerUnavailable(
            f"the spatial mapping of '{inputs.layer.name}' leaves array dimensions for ZigZag's "
            f"search and zigzag-dse cannot run it ({missing})"
        )
    if theirs is not None:
        # replay what ZigZag evaluated: its spatial choice (reduced to the layer, searched where
        # only hinted) and, unless one was given, its temporal mapping
        chosen = replace(inputs.mapping, spatial=theirs.spatial, spatial_complete=True)
        temporal = inputs.temporal_mapping or theirs.temporal_mapping
        inputs = ZigZagInputs(inputs.accelerator, inputs.layer, chosen, temporal)
    elif inputs.temporal_mapping is None:
        raise PeerUnavailable(
            f"no temporal mapping given and zigzag-dse cannot choose one ({missing}); pass --temporal-mapping"
        )
    return inputs, theirs, missing


def compare(
    inputs: ZigZagInputs, result: Result, theirs: PeerResult | None, missing: str | None
) -> ZigZagCheck:
    """The comparison of one replay with our model and (when given) zigzag-dse's result."""
    ours = evaluate(inputs)
    values = _replay_values(result)
    q = mapping_quantities(inputs)
    rows = []
    for a in ours.word_accesses:
        zz = theirs.latency.words(a.layer_operand, a.memory, a.direction) if theirs else None
        rep = _replay_words(inputs, q, values, a.layer_operand, a.level, a.direction)
        if a.words or zz or rep:
            moved = values.get((a.layer_operand, a.memory, DIRECTION_NAMES[a.direction].value))
            link = q.links[(a.layer_operand, a.level, a.direction)]
            model_values = (
                link.elements_per_period
                * link.period_count
                * q.unit_count[a.layer_operand][a.level + 1]
            )
            rows.append(
                AccessRow(
                    a.layer_operand,
                    a.memory,
                    a.direction,
                    rep,
                    a.words,
                    zz,
                    moved[0] if moved else 0,
                    model_values,
                )  # fmt: skip
            )
    replay = replay_terms(result)
    analytical = Terms.of_model(ours)
    zigzag_terms = Terms.of_model(theirs.latency) if theirs else None
    groups = {phase: stall_groups(result, phase) for phase in PHASES}
    causes = tuple(
        (phase, cause, cycles)
        for phase in PHASES
        for cause, cycles in sorted(
            result.stall_cycles_by_cause((phase,)).items(), key=lambda kv: (-kv[1], kv[0])
        )
    )
    explanations = explain(inputs, ours, replay, analytical, zigzag_terms, rows, groups)
    _, single = slot_flags(inputs)
    explanations = [
        f"buffers: ZigZag counts {op} in {memory} as double-buffered because only the slice along its "
        f"top relevant loops must fit next to the tile; two whole tiles do not fit, so the replay "
        f"gives it one slot"
        for op, memory in single
    ] + explanations
    return ZigZagCheck(
        replay,
        analytical,
        zigzag_terms,
        missing,
        causes,
        tuple(rows),
        tuple(explanations),
        result,
        ours,
        inputs,
    )


def format_report(check: ZigZagCheck) -> str:
    """The side-by-side table as text."""
    zz_head = "zigzag-dse" if check.zigzag else "zigzag-dse (missing)"
    lines = [f"{'term':<16}{'replay':>14}{'model':>14}{zz_head:>22}"]
    by_term = {term: check.causes(phase) for phase, term in PHASE_TERMS.items()}
    for name in TERMS:
        zz = count(getattr(check.zigzag, name)) if check.zigzag else "-"
        replay, model = count(getattr(check.replay, name)), count(getattr(check.analytical, name))
        lines.append(f"{TERM_NAMES[name]:<16}{replay:>14}{model:>14}{zz:>22}")
        for cause, cycles in by_term.get(name, {}).items():
            lines.append(f"  {cause:<14}{count(cycles):>14}{'':>14}{'':>22}")
    if check.zigzag_missing:
        lines.append(f"zigzag-dse column missing: {check.zigzag_missing}")
    lines.append("")
    lines.append(
        f"{'words':<8}{'memory':<12}{'direction':<20}{'replay':>14}{'model':>14}{'zigzag-dse':>14}"
    )
    for a in check.accesses:
        rep = "n/a" if a.replay is None else count(a.replay)
        zz = "-" if a.zigzag is None else count(a.zigzag)
        lines.append(
            f"{a.operand:<8}{a.memory:<12}{a.direction.words:<20}{rep:>14}{count(a.analytical):>14}{zz:>14}"
        )
    if any(a.replay is None for a in check.accesses):
        lines.append(
            "n/a: the replay's values are not whole periods of ZigZag's transfers, so they have "
            "no word count; the note on that row compares values"
        )
    if check.explanations:
        lines.append("")
        lines += [f"* {text}" for text in check.explanations]
    return "\n".join(lines)


def report_json(check: ZigZagCheck) -> str:
    """The --json text."""
    from cyclesim.results.schema import versioned

    return json.dumps(versioned(check.to_json()), indent=2)
