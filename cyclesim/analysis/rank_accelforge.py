"""`cyclesim rank accelforge`: replay the mappings AccelForge's mapper keeps, and rank them again.

AccelForge's mapper (FFM) runs once on the spec with the objectives latency, energy and
resource usage and returns its Pareto set; each mapping comes back with AccelForge's latency
and energy and as LoopTree YAML (`checks.accelforge.peer.mapper_candidates`). The K best by
AccelForge's latency (then energy, then the mapper's order), plus its pick (the first of
them), are replayed twice: under AccelForge's conventions (Einsums isolated, strict reuse:
"is AccelForge's ranking right under its own rules") and under the default policy (retain,
Einsums not isolated: "under what the hardware does"). The candidate list and every replay are
cached by content hash; a rerun with a larger K replays only the new candidates.

A candidate is a mapping of the whole workload, so one row ranks the whole workload (for a
one-Einsum spec, that Einsum).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from cyclesim.analysis.rank import (
    NOT_REPLAYED,
    OK,
    RankRun,
    candidate_table,
    layer_table,
)
from cyclesim.analysis.rank_cache import ResultCache, content_key, file_digest
from cyclesim.analysis.rank_replays import run_replays

TOP_MECHANISMS = 8  # sentences kept per explained candidate
FAILED = "failed"  # a replay raised something other than SpecError: a bug to report


@dataclass(frozen=True, slots=True)
class Policy:
    """A replay policy a rank run is made under, and how its table is titled."""

    name: str
    reuse: str
    isolate_einsums: bool
    title: str


POLICIES = (
    Policy(
        "accelforge",
        "strict",
        True,
        "under AccelForge's conventions (--reuse strict --isolate-einsums)",
    ),
    Policy("default", "retain", False, "under the default policy (what the hardware does)"),
)


@dataclass(frozen=True, slots=True)
class CandidateReplay:
    """One candidate's replay under one policy (plain data, pickles to a worker)."""

    layer: str
    spec_files: tuple[str, ...]
    jinja_data: str  # JSON
    candidate: dict  # the runner's candidate: order, latency, energy, mapping (YAML)
    reuse: str
    isolate_einsums: bool
    key: str
    explain: bool = False  # False: the cycles only; True: causes and mechanisms too


def mapping_file(mapping_yaml: str) -> Path:
    """The candidate's mapping as a file named by its content (in the system's temporary
    folder), read before the spec files so that its `mapping:` wins the merge; the same
    name every time, so the per-spec caches keyed by file bytes stay warm."""
    digest = hashlib.sha256(mapping_yaml.encode()).hexdigest()[:16]
    folder = Path(tempfile.gettempdir()) / "cyclesim-rank-accelforge"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"mapping-{digest}.yaml"
    if not path.exists():
        tmp = path.with_suffix(f".{os.getpid()}.tmp")  # workers may write the same one
        tmp.write_text(mapping_yaml)
        tmp.replace(path)
    return path


def replay_candidate(task: CandidateReplay) -> dict:
    """Replay one candidate under the task's policy: its cycles; with `task.explain` also the
    stall causes by phase and the sentences of `check accelforge`. A mapping the replay
    cannot represent is a row 'not replayed' with its reason."""
    from cyclesim.analysis.simulate import replay
    from cyclesim.checks.accelforge.check import run_check
    from cyclesim.checks.accelforge.importer import import_accelforge
    from cyclesim.checks.accelforge.read import load_accelforge_spec
    from cyclesim.errors import SpecError

    jinja = json.loads(task.jinja_data)
    files = (str(mapping_file(task.candidate["mapping"])), *task.spec_files)
    policy = dict(reuse=task.reuse, isolate_einsums=task.isolate_einsums)
    try:
        if not task.explain:
            spec = load_accelforge_spec(files, jinja, _costs(task.spec_files, jinja))
            imported = import_accelforge(spec)
            res = replay(
                imported.architecture,
                imported.workload,
                imported.mapping,
                **policy,
                progress=False,
            )
            return {"status": OK, "error": "", "replay_cycles": int(res.cycles)}
        check, res = run_check(files, **policy, use_peer=False, jinja_data=jinja)
    except SpecError as exc:
        return {"status": NOT_REPLAYED, "error": f"{type(exc).__name__}: {exc}"}
    causes = {
        f"{phase}/{cause}": int(cycles)
        for phase in ("onload", "compute", "offload")
        for cause, cycles in res.stall_cycles_by_cause((phase,)).items()
    }
    # the latency sentence first: it is the one about cycles, the others about counts
    sentences = sorted(check.explanations, key=lambda s: not s.startswith("latency:"))
    return {
        "status": OK,
        "error": "",
        "replay_cycles": int(res.cycles),
        "replay_ideal": int(res.ideal_compute_cycles),
        "replay_stall": int(res.stall_cycles),
        "replay_onload": int(res.onload_cycles),
        "replay_offload": int(res.offload_cycles),
        "causes": causes,
        "mechanisms": sentences[:TOP_MECHANISMS],
    }


def _costs(spec_files: tuple[str, ...], jinja: dict) -> Callable[[], Any]:
    """Per-action costs the spec leaves to hwcomponents, from the spec files alone (they do
    not depend on the mapping); asked of the real accelforge only when needed, cached."""

    def ask():
        from cyclesim.checks.accelforge import peer

        return peer.component_costs(spec_files, jinja)

    return ask


def peer_order(candidates: list[dict], clock_hz: float | None) -> list[dict]:
    """The candidates best first by AccelForge's latency (in cycles: it gives seconds when the
    arch has a clock), then its energy, then the mapper's order; the first is its pick."""
    scale = clock_hz or 1.0
    return sorted(
        (
            c | {"latency": float(c["latency"]) * scale, "energy": float(c["energy"] or 0)}
            for c in candidates
        ),
        key=lambda c: (c["latency"], c["energy"], c["order"]),
    )


def status_of(error: str) -> str:
    """A replay refused by cyclesim's reader is 'not replayed'; anything else failed."""
    return NOT_REPLAYED if error.startswith("SpecError") else FAILED


def rank_accelforge(
    spec_files: Sequence[str],
    *,
    jinja_data: Mapping[str, Any] | None = None,
    objectives: Sequence[str] | None = None,
    top: int | None = 20,
    cache_dir: Path | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    backend: str = "processes",
    progress: bool | None = None,
    on_line: Callable[[str], None] | None = None,
) -> list[tuple[Policy, RankRun]]:
    """Run AccelForge's mapper (or read its cached Pareto set), replay the `top` best
    candidates (None: all) under each policy, and rank both orders; one RankRun per policy.

    Raise SpecError if cyclesim's reader refuses the spec, PeerUnavailable if accelforge
    cannot run, AccelForgeRejected if its mapper refuses the spec.

    Over 80 lines: its steps run once each, in order (check the files, run or read the mapper,
    order its candidates, replay them under each policy), sharing the cache and the parallel
    settings.
    """
    from cyclesim.checks.accelforge.read import load_accelforge_spec
    from cyclesim.errors import CyclesimError, SpecError

    files = tuple(str(Path(f).resolve()) for f in spec_files)
    _check_files(files, jinja_data)  # a typo fails now, not after minutes of mapper
    jinja = json.dumps(dict(jinja_data or {}), sort_keys=True)
    store = ResultCache(cache_dir)
    from cyclesim.checks.accelforge.peer import MAPPER_OBJECTIVES

    objectives = tuple(objectives or MAPPER_OBJECTIVES)
    unknown = [o for o in objectives if o not in MAPPER_OBJECTIVES]
    if unknown:
        raise CyclesimError(
            f"--objectives: unknown objective {unknown[0]!r}; use {', '.join(MAPPER_OBJECTIVES)}"
        )
    found = _candidates(files, jinja, objectives, store, on_line)
    if not found["candidates"]:
        raise SpecError("accelforge's mapper found no mapping for the spec", file=files[0])
    # the spec as cyclesim reads it, with the mapper's first mapping (its own may be absent)
    first = mapping_file(found["candidates"][0]["mapping"])
    spec = load_accelforge_spec(
        (str(first), *files), jinja_data, _costs(files, dict(jinja_data or {}))
    )
    layer = ", ".join(e.name for e in spec.workload.einsums)
    order = peer_order(found["candidates"], spec.arch.clock_hz)
    pick = {layer: order[0]["order"]}
    chosen = order if top is None else order[:top]
    parallel = dict(workers=workers, progress=progress, backend=backend, scheduler=scheduler)
    if scheduler is not None:
        parallel["backend"] = "dask"
    digests = [file_digest(f) for f in files]
    runs = []
    for policy in POLICIES:
        timed = [
            CandidateReplay(
                layer,
                files,
                jinja,
                c,
                policy.reuse,
                policy.isolate_einsums,
                content_key("af-replay", policy.name, digests, jinja, c["mapping"]),
            )  # fmt: skip
            for c in chosen
        ]
        rows: dict[tuple[str, int], dict] = {}
        ran = _replay(timed, rows, store, parallel, on_line, f"candidates ({policy.name})")
        explained = _explain_tasks(layer, order, rows, pick[layer], timed)
        ran_explained = _replay(
            explained, rows, store, parallel, on_line, f"pick and winner ({policy.name})"
        )
        candidates = candidate_table([layer], {layer: chosen}, pick, rows)
        run = RankRun(
            peer="accelforge",
            candidates=candidates,
            layers=layer_table([layer], candidates, {}, top),
            replayed=ran,
            explained=ran_explained,
            from_cache=len(timed) + len(explained) - ran - ran_explained,
        )
        runs.append((policy, run))
    return runs


def _check_files(files: tuple[str, ...], jinja_data: Mapping[str, Any] | None) -> None:
    """Raise SpecError (file, line) if a spec file is not YAML AccelForge could read or the
    files have no arch or workload; the mapping is the mapper's business."""
    from cyclesim.checks.accelforge.read_yaml import load_yaml_file, merge_top_level
    from cyclesim.errors import SpecError

    merged, _ = merge_top_level([(f, load_yaml_file(f, dict(jinja_data or {}))) for f in files])
    for key in ("arch", "workload"):
        if key not in merged:
            raise SpecError(
                f"no '{key}:' section in the spec files", file=", ".join(files), field=key
            )


def _candidates(
    files: tuple[str, ...],
    jinja: str,
    objectives: tuple[str, ...],
    store: ResultCache,
    on_line: Callable[[str], None] | None,
) -> dict:
    """AccelForge's Pareto set, from the cache or its mapper (minutes even for a small spec).

    Keyed by the spec files' bytes, the Jinja data, the objectives, the runner script and
    AccelForge's environment (an upgrade of accelforge runs the mapper again), not by
    cyclesim's source: a change in the simulator does not change what the mapper finds.
    """
    from cyclesim.checks.accelforge import peer
    from cyclesim.checks.peer_python import environment_stamp

    python = peer.accelforge_python()
    key = hashlib.sha256(
        json.dumps(
            [
                "af-candidates",
                [file_digest(f) for f in files],
                jinja,
                objectives,
                file_digest(str(peer.RUNNER)),
                environment_stamp(python),
            ]
        ).encode()
    ).hexdigest()[:32]
    found = store.get(key)
    if found is not None:
        return found
    if on_line:
        on_line(f"running accelforge's mapper (FFM, objectives: {', '.join(objectives)})")
    found = peer.mapper_candidates(files, json.loads(jinja), objectives)
    store.put(key, found)
    return found


def _explain_tasks(
    layer: str,
    order: list[dict],
    rows: dict[tuple[str, int], dict],
    pick: int,
    timed: list[CandidateReplay],
) -> list[CandidateReplay]:
    """The pick and the replay's winner (fewest cycles, AccelForge's better rank among
    equals), to replay again with explanations."""
    replayed = [
        (rows[(layer, c["order"])]["replay_cycles"], rank, c["order"])
        for rank, c in enumerate(order)
        if rows.get((layer, c["order"]), {}).get("replay_cycles") is not None
    ]
    if not replayed:
        return []
    winner = min(replayed)[2]
    by_order = {t.candidate["order"]: t for t in timed}
    tasks = []
    for order_id in dict.fromkeys((pick, winner)):
        t = by_order[order_id]
        tasks.append(replace(t, key=content_key("af-explain", t.key), explain=True))
    return tasks


def _replay(
    tasks: list[CandidateReplay],
    rows: dict[tuple[str, int], dict],
    store: ResultCache,
    parallel: dict,
    on_line: Callable[[str], None] | None,
    desc: str,
) -> int:
    """The replays not in the cache, through the one parallel runner. Return how many ran."""
    return run_replays(replay_candidate, tasks, rows, store, parallel, on_line, desc, status_of)
