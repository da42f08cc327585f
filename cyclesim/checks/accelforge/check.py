"""`cyclesim check accelforge`: the replay, its closed form, our AccelForge model and the real accelforge.

Rows: bits read and written per Einsum, memory, tensor, in AccelForge's conventions (bits,
directions summed, copy Einsums booked under their source tensor). Columns: the replay as it
happened, the schedule's closed form mapped into AccelForge's conventions, cyclesim's model of
AccelForge (`model`) and the real accelforge when its environment exists. Every
difference carries one sentence naming its mechanism (`explain`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from cyclesim.checks.accelforge.explain import explain
from cyclesim.checks.accelforge.importer import import_accelforge
from cyclesim.checks.accelforge.model import COMPUTE_ACTION, AfModelResult, evaluate_model
from cyclesim.checks.accelforge.read import load_accelforge_spec
from cyclesim.checks.accelforge.rows import (
    ACTIONS,
    AccelForgeCheck,
    AccessRow,
    EnergyRow,
    Key,
    Latency,
    convention_bits,
    energies_equal,
)
from cyclesim.checks.accelforge.spec import ENERGY_UNIT, AfSpec
from cyclesim.errors import PeerUnavailable, SpecError
from cyclesim.results.energy import has_energies


def _table(frame, bits: str = "bits") -> dict[Key, float]:
    out: dict[Key, float] = {}
    for r in frame.itertuples():
        if r.action in ACTIONS:
            key = (r.einsum, r.memory, r.tensor, r.action)
            out[key] = out.get(key, 0.0) + float(getattr(r, bits))
    return out


def run_check(
    spec_files: Sequence[str | Path],
    *,
    reuse: str = "retain",
    isolate_einsums: bool = False,
    use_peer: bool = True,
    trace: bool = False,
    jinja_data: Mapping[str, Any] | None = None,
):
    """Replay, model and (when available) the real accelforge on one spec.

    Returns (AccelForgeCheck, Result). Raise SpecError for a bad spec, or for a spec the
    real accelforge rejects while our reader accepts it.
    """
    from cyclesim.analysis.simulate import replay

    files = tuple(str(f) for f in spec_files)
    spec = load_accelforge_spec(files, jinja_data, _component_costs(files, jinja_data))
    imported = import_accelforge(spec)
    model = evaluate_model(spec)
    theirs, missing = _run_peer(files, use_peer, jinja_data)
    if theirs is not None and spec.arch.clock_hz is not None:
        theirs = theirs.in_cycles(spec.arch.clock_hz)
    res = replay(
        imported.architecture,
        imported.workload,
        imported.mapping,
        reuse=reuse,
        isolate_einsums=isolate_einsums,
        trace=trace,
        progress=False,
    )
    rows_of_run = list(res.accesses.itertuples())
    replay_bits = convention_bits(spec, rows_of_run, physical=True)
    closed = convention_bits(spec, rows_of_run)
    modelled = _table(model.accesses)
    real = _table(theirs.accesses) if theirs is not None else {}
    keys = set(replay_bits) | set(closed) | {k for k, v in modelled.items() if v}
    keys |= {k for k, v in real.items() if v}
    rows = tuple(
        AccessRow(
            *key,
            replay_bits=replay_bits.get(key, 0),
            closed_form_bits=closed.get(key, 0),
            model_bits=modelled.get(key, 0.0),
            accelforge_bits=None if theirs is None else real.get(key, 0.0),
        )
        for key in sorted(keys, key=lambda k: _order(spec, k))
    )
    latency = _latency(res, model, theirs)
    check = AccelForgeCheck(
        files=files,
        reuse=res.reuse,
        isolate_einsums=res.isolate_einsums,
        latency=latency,
        accesses=rows,
        explanations=(),
        notes=imported.notes,
        accelforge_version=theirs.accelforge_version if theirs is not None else None,
        accelforge_missing=missing,
        energy=_energy_rows(spec, imported, res, model, theirs),
        energy_sources=_energy_sources(spec),
    )
    sentences = explain(spec, imported, model, check)
    return replace(check, explanations=tuple(sentences)), res


def _energy_rows(spec: AfSpec, imported, res, model: AfModelResult, theirs) -> tuple:
    """Energy per (einsum, memory, tensor, action) in AccelForge's names, MACs on its compute node.

    The replay's energy is its counts booked as AccelForge books them (the closed-form column;
    a copy moving data down counts as AccelForge counts it) times the imported per-action
    energies; its MACs' energy comes from results.energy. Empty when no energies are given.
    """
    arch = imported.architecture
    if not has_energies(arch):
        return ()
    replayed: dict[Key, float] = {}
    for key, bits in convention_bits(spec, res.accesses.itertuples()).items():
        energy = arch.memory(key[1]).energy
        if energy is not None and bits:
            per_action = energy.read if key[3] == "read" else energy.write
            replayed[key] = bits / energy.bits_per_action * per_action
    compute = spec.arch.compute.name
    table = res.energy  # the replay's own (it ran on the imported architecture)
    for r in table[table.action == "mac"].itertuples():
        replayed[r.einsum, compute, "", COMPUTE_ACTION] = r.energy
    modelled = _energies(model.accesses)
    real = _energies(theirs.energy) if theirs is not None else {}
    keys = {k for source in (replayed, modelled, real) for k, v in source.items() if v}
    return tuple(
        EnergyRow(
            *key,
            replay=float(replayed.get(key, 0.0)),
            model=float(modelled.get(key, 0.0)),
            accelforge=None if theirs is None else float(real.get(key, 0.0)),
        )
        for key in sorted(keys, key=lambda k: _order(spec, k))
    )


def _energies(frame) -> dict[Key, float]:
    out: dict[Key, float] = {}
    for r in frame.itertuples():
        if r.action in ACTIONS + (COMPUTE_ACTION,):
            key = (r.einsum, r.memory, r.tensor, r.action)
            out[key] = out.get(key, 0.0) + float(r.energy)
    return out


def _order(spec: AfSpec, key: Key) -> tuple:
    einsums = [e.name for e in spec.workload.einsums]
    memories = [m.name for m in spec.arch.memories] + [spec.arch.compute.name]
    tensors = list(spec.workload.tensor_names)
    einsum, memory, tensor, action = key
    return (
        einsums.index(einsum) if einsum in einsums else len(einsums),
        memories.index(memory) if memory in memories else len(memories),
        tensors.index(tensor) if tensor in tensors else len(tensors),
        (ACTIONS + (COMPUTE_ACTION,)).index(action),
    )


def _component_costs(files: tuple[str, ...], jinja_data: Mapping[str, Any] | None):
    """The reader's provider of hwcomponents' per-action costs: the real accelforge, asked only
    when a component class must supply an energy or throughput (cached per spec)."""

    def ask():
        from cyclesim.checks.accelforge import peer

        try:
            return peer.component_costs(files, jinja_data)
        except peer.AccelForgeRejected as error:
            raise SpecError(
                f"{error} (while costing the components with hwcomponents)", file=files[0]
            ) from None

    return ask


def _energy_sources(spec: AfSpec) -> tuple[tuple[str, str, str], ...]:
    """Where each per-action energy came from: the spec, or the hwcomponents model named."""
    nodes = [*spec.arch.memories, spec.arch.compute]
    return tuple((n.name, a.name, a.energy_source) for n in nodes for a in n.actions)


def _run_peer(files: tuple[str, ...], use_peer: bool, jinja_data: Mapping[str, Any] | None):
    """The real accelforge's run, or None and the reason it is missing."""
    if not use_peer:
        return None, "not asked for (--no-peer)"
    from cyclesim.checks.accelforge import peer

    try:
        return peer.run_accelforge(files, jinja_data), None
    except PeerUnavailable as error:
        return None, str(error)
    except peer.AccelForgeRejected as error:
        raise SpecError(
            f"{error}; cyclesim's reader accepted the spec, so the comparison would be meaningless",
            file=files[0],
        ) from None


def _latency(res, model: AfModelResult, theirs) -> Latency:
    causes = res.stall_cycles_by_cause(("onload", "compute", "offload"))
    return Latency(
        replay_cycles=int(res.cycles),
        onload_cycles=int(res.onload_cycles),
        ideal_compute_cycles=int(res.ideal_compute_cycles),
        stall_cycles=int(res.stall_cycles),
        offload_cycles=int(res.offload_cycles),
        stall_by_cause=tuple(sorted(causes.items(), key=lambda kv: -kv[1])),
        model_einsum_cycles=model.einsum_latency_cycles,
        model_cycles=float(model.total_latency_cycles),
        accelforge_cycles=None if theirs is None else float(theirs.total_latency_cycles),
    )


def _cell(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{int(value)}" if float(value).is_integer() else f"{value:.6g}"


def format_report(check: AccelForgeCheck) -> str:
    """The side-by-side table as text."""
    lat = check.latency
    policy = (
        f"reuse {check.reuse}, Einsums {'isolated' if check.isolate_einsums else 'not isolated'}"
    )
    af = f"accelforge {check.accelforge_version}" if check.accelforge_version else "accelforge"
    lines = [f"{', '.join(Path(f).name for f in check.files)}  ({policy})", ""]
    per_einsum = " + ".join(f"{e} {_cell(c)}" for e, c in lat.model_einsum_cycles)
    lines.append(
        f"latency  replay {lat.replay_cycles} cycles = onload {lat.onload_cycles} + compute "
        f"{lat.ideal_compute_cycles} + stall {lat.stall_cycles} + offload {lat.offload_cycles}"
    )
    lines.append(
        f"         AccelForge bound {_cell(lat.bound_cycles)} ({per_einsum}; "
        f"{af if lat.accelforge_cycles is not None else 'our model'})"
    )
    lines.append("")
    head = ("einsum", "memory", "tensor", "action", "replay", "closed form", "AF model", af)
    widths = [max(len(head[0]), *(len(a.einsum) for a in check.accesses)) + 2]
    widths += [max(len(head[1]), *(len(a.memory) for a in check.accesses)) + 2]
    widths += [max(len(head[2]), *(len(a.tensor) for a in check.accesses)) + 2, 8]
    widths += [12, 13, 12, max(len(af), 10) + 2]
    lines.append(_line(head, widths))
    for a in check.accesses:
        marks = "" if _same(a) else "  *"
        cells = (a.einsum, a.memory, a.tensor, a.action, _cell(a.replay_bits))
        cells += (_cell(a.closed_form_bits), _cell(a.model_bits), _cell(a.accelforge_bits))
        lines.append(_line(cells, widths) + marks)
    lines.append("(bits; * = the columns differ, explained below)")
    if check.accelforge_missing:
        lines.append(f"real accelforge column missing: {check.accelforge_missing}")
    lines += _energy_lines(check, af)
    lines += _source_lines(check)
    if check.explanations:
        lines.append("")
        lines += [f"* {text}" for text in check.explanations]
    if check.notes:
        lines.append("")
        lines += [f"note: {text}" for text in check.notes]
    return "\n".join(lines)


def _energy_lines(check: AccelForgeCheck, af: str) -> list[str]:
    """Energy by Einsum and component: the replay's next to AccelForge's, and the totals."""
    if not check.energy:
        return []
    sums: dict[tuple[str, str], list] = {}
    for e in check.energy:
        cell = sums.setdefault(
            (e.einsum, e.memory), [0.0, 0.0, None if e.accelforge is None else 0.0]
        )
        cell[0] += e.replay
        cell[1] += e.model
        if e.accelforge is not None:
            cell[2] += e.accelforge
    width = max(len(f"{einsum} {memory}") for einsum, memory in sums) + 2
    lines = [
        "",
        f"dynamic energy in {ENERGY_UNIT} (the replayed counts x the spec's per-action energies)",
    ]
    lines.append(
        f"{'einsum component':<{width}}{'replay':>16}{'AF model':>16}{af:>{max(len(af), 14) + 2}}"
    )
    totals = [check.energy_total(s) for s in ("replay", "model", "accelforge")]
    for (einsum, memory), (replay, model, theirs) in [*sums.items(), (("total", ""), totals)]:
        reference = model if theirs is None else theirs
        mark = "" if energies_equal(replay, reference, float32=theirs is not None) else "  *"
        lines.append(
            f"{(einsum + ' ' + memory).strip():<{width}}{_cell(replay):>16}{_cell(model):>16}"
            f"{_cell(theirs):>{max(len(af), 14) + 2}}{mark}"
        )
    different = [e for e in check.energy if not e.equal]
    if different:
        lines.append(
            f"(* = the replay's energy differs: {len(different)} of {len(check.energy)} rows; "
            "it follows the replayed counts above)"
        )
    return lines


def _source_lines(check: AccelForgeCheck) -> list[str]:
    """Where the per-action energies came from, one line per source."""
    if not check.energy:
        return []
    by_source: dict[str, list[str]] = {}
    for component, action, source in check.energy_sources:
        by_source.setdefault(source, []).append(f"{component} {action}")
    lines = ["per-action energies from:"]
    for source, actions in by_source.items():
        lines.append(f"  {source}: {', '.join(actions)}")
    return lines


def _same(a: AccessRow) -> bool:
    values = {a.replay_bits, a.closed_form_bits, a.model_bits}
    if a.accelforge_bits is not None:
        values.add(a.accelforge_bits)
    return len(values) == 1


def _line(cells: Sequence[str], widths: Sequence[int]) -> str:
    left = "".join(f"{c:<{w}}" for c, w in zip(cells[:4], widths[:4], strict=True))
    right = "".join(f"{c:>{w}}" for c, w in zip(cells[4:], widths[4:], strict=True))
    return (left + right).rstrip()
