"""`cyclesim rank zigzag`: replay the mappings zigzag-dse's search ranks best, and rank them again.

Per layer, ZigZag's own search (LOMA) runs once and every candidate it evaluates is kept
(`checks.zigzag.candidates`); the K best by ZigZag's latency (then energy, then ZigZag's
evaluation order, which is how its reduce stage keeps the first of equals), plus its pick,
are replayed. Searches and replays are tasks of the one parallel runner, cached on disk by
content hash (input files' bytes, layer, candidate loops, cyclesim's source, zigzag-dse's
version), so a rerun with a larger K replays only the new candidates.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from cyclesim.analysis.parallel import TaskOutcome, map_tasks
from cyclesim.analysis.rank import (
    NOT_REPLAYED,
    OK,
    RankRun,
    candidate_table,
    layer_table,
)
from cyclesim.analysis.rank_cache import ResultCache, content_key, file_digest
from cyclesim.analysis.rank_replays import run_replays

TOP_CAUSES = 8  # mechanisms kept per explained candidate (largest gap first)
# bump when what an explained row holds changes (the timed rows keep their cache)
EXPLAIN_VERSION = 2


@dataclass(frozen=True, slots=True)
class LayerSearch:
    """One layer's search (plain data, pickles to a worker)."""

    index: int
    layer: str
    accelerator: str
    workload: str
    mapping: str
    lpf_limit: int
    key: str


@dataclass(frozen=True, slots=True)
class CandidateReplay:
    """One candidate's replay (plain data, pickles to a worker)."""

    layer: str
    accelerator: str
    workload: str
    mapping: str
    candidate: dict  # Candidate.to_json()
    key: str
    explain: bool = False  # False: the cycles only; True: terms, causes and mechanisms too


def search_layer(task: LayerSearch) -> dict:
    """ZigZag's candidates of one layer as JSON: {'candidates': [...], 'pick': i}."""
    from cyclesim.checks.zigzag.candidates import search_candidates

    found = search_candidates(
        task.accelerator,
        task.workload,
        task.mapping,
        layer_name=task.layer,
        lpf_limit=task.lpf_limit,
    )
    return {"candidates": [c.to_json() for c in found.candidates], "pick": found.pick}


def replay_candidate(task: CandidateReplay) -> dict:
    """Replay one candidate and evaluate it again with zigzag-dse; with `task.explain`, also the
    replay's terms, its stall causes and the mechanisms `check zigzag` names.

    Without explain only the engine runs (no stall attribution, which costs most of a replay
    with it): every candidate is timed that way, and only each layer's pick and winner are
    explained. A mapping the replay cannot represent is a row 'not replayed' with its reason.
    """
    from cyclesim.checks.zigzag.candidates import Candidate, evaluate_candidate
    from cyclesim.checks.zigzag.check import compare, replay_case
    from cyclesim.checks.zigzag.inputs import ZigZagInputs
    from cyclesim.checks.zigzag.to_spec import import_zigzag
    from cyclesim.engine import replay_plan
    from cyclesim.errors import SpecError
    from cyclesim.schedule import ReusePolicy, build_plan

    candidate = Candidate.from_json(task.candidate)
    inputs = _inputs(task.accelerator, task.workload, task.mapping, task.layer, _stamps(task))
    mapping = replace(inputs.mapping, spatial=candidate.spatial, spatial_complete=True)
    inputs = ZigZagInputs(inputs.accelerator, inputs.layer, mapping, candidate.temporal_mapping)
    theirs = evaluate_candidate(
        task.accelerator, task.workload, task.mapping, task.layer, candidate
    )
    row: dict = {
        "zigzag_reevaluated": float(theirs.latency.latency_total_cycles),
        "status": OK,
        "error": "",
    }
    try:
        if not task.explain:
            spec = import_zigzag(inputs)  # as replay_case, without building the Result
            plan = build_plan(spec.architecture, spec.workload, spec.mapping, ReusePolicy("retain"))
            return row | {"replay_cycles": int(replay_plan(plan, progress=False).cycles)}
        check = compare(inputs, replay_case(inputs), theirs, None)
    except SpecError as exc:
        return row | {"status": NOT_REPLAYED, "error": f"{type(exc).__name__}: {exc}"}
    r = check.replay
    return row | {
        "replay_cycles": int(r.latency_total),
        "replay_ideal": int(r.ideal_cycles),
        "replay_stall": int(r.stall),
        "replay_onload": int(r.onloading),
        "replay_offload": int(r.offloading),
        "causes": {f"{phase}/{cause}": int(c) for phase, cause, c in check.stall_causes},
        "mechanisms": top_mechanisms(check),
    }


def _stamps(task: CandidateReplay) -> tuple[int, ...]:
    return tuple(os.stat(p).st_mtime_ns for p in (task.accelerator, task.workload, task.mapping))


@functools.lru_cache(maxsize=8)
def _inputs(accelerator: str, workload: str, mapping: str, layer: str, stamps: tuple) -> Any:
    """The layer's inputs, read once per worker process: a worker replays many candidates of
    the same layer, and reading (an ONNX model's YAML above all) was a third of each replay.
    `stamps`, the files' modification times, make an edited file read again."""
    from cyclesim.checks.zigzag.read import load_zigzag_inputs

    return load_zigzag_inputs(accelerator, workload, mapping, layer_name=layer)


def top_mechanisms(check, n: int = TOP_CAUSES) -> list[str]:
    """The sentences of `check zigzag` behind the largest gaps between ZigZag and the replay:
    each stall cause by its cycles, onloading and offloading by their gap to ZigZag's term."""
    import re

    theirs = check.zigzag or check.analytical
    gaps = {
        "onloading": abs(check.replay.onloading - theirs.onloading),
        "offloading": abs(check.replay.offloading - theirs.offloading),
    }
    scored = []
    for text in check.explanations:
        if text.startswith("stall, "):  # 'stall, latency (100 cycles): ...'
            cycles = re.search(r"\(([\d,]+) cycles?\)", text)
            scored.append((int(cycles.group(1).replace(",", "")) if cycles else 0, text))
        elif text.startswith(("onloading", "offloading")):
            scored.append((gaps[text.split(":")[0]], text))
    scored.sort(key=lambda pair: -pair[0])
    return [text for cycles, text in scored[:n] if cycles > 0]


def _first(key: object, seen: set) -> bool:
    """False the first time `key` is seen (and remember it), True after."""
    if key in seen:
        return True
    seen.add(key)
    return False


def rank_zigzag(
    accelerator: str,
    workload: str,
    mapping: str,
    *,
    layers: list[str] | None = None,
    top: int | None = 20,
    lpf_limit: int = 6,
    distinct: bool = False,
    cache_dir: Path | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    backend: str = "processes",
    progress: bool | None = None,
    on_line: Callable[[str], None] | None = None,
) -> RankRun:
    """Search, replay the top `top` candidates (None: all) per layer, and rank both orders.

    distinct: the `top` best distinct latencies by ZigZag's model, one candidate each (the one
    its reduce would keep), instead of the top `top` candidates (which may all tie).

    Raise SpecError if the inputs cannot be read or a named layer does not exist.
    """
    from cyclesim.checks.zigzag.read import workload_layers
    from cyclesim.checks.zigzag.read_accelerator import parse_accelerator
    from cyclesim.checks.zigzag.read_workload import layers_found
    from cyclesim.errors import SpecError

    parse_accelerator(accelerator)
    names = workload_layers(workload, mapping)
    unknown = [n for n in layers or () if n not in names]
    if unknown:
        hint, listing = layers_found(names, unknown[0])
        raise SpecError(f"no layer named {unknown[0]!r}{hint}", file=workload, found=listing)
    chosen = [n for n in names if not layers or n in layers]
    files = [file_digest(p) for p in (accelerator, workload, mapping)]
    store = ResultCache(cache_dir)
    parallel = dict(workers=workers, progress=progress, backend=backend, scheduler=scheduler)
    if scheduler is not None:
        parallel["backend"] = "dask"

    # 1. ZigZag's search, one task per layer not in the cache
    searches, errors = _search(chosen, names, files, (accelerator, workload, mapping), lpf_limit,
                               store, parallel, on_line)  # fmt: skip

    # 2. the replays: ZigZag's top K and its pick per layer, the cycles only; cached ones read back
    ranked: dict[str, list[dict]] = {}
    rows: dict[tuple[str, int], dict] = {}
    timed: list[CandidateReplay] = []
    picks = {name: found["pick"] for name, found in searches.items()}
    for name in chosen:
        if name not in searches:
            continue
        order = sorted(
            searches[name]["candidates"], key=lambda c: (c["latency"], c["energy"], c["order"])
        )
        if distinct:  # one per latency: the one ZigZag's reduce would keep (least energy, first)
            seen: set[float] = set()
            order = [c for c in order if not _first(c["latency"], seen)]
        ranked[name] = order
        for rank, c in enumerate(order, start=1):
            if top is None or rank <= top or c["order"] == picks[name]:
                key = content_key("replay", files, name, c["spatial"], c["levels"])
                timed.append(CandidateReplay(name, accelerator, workload, mapping, c, key))
    ran = _replay(timed, rows, store, parallel, on_line, "candidates")

    # 3. each layer's pick and winner again, explained (terms, stall causes, mechanisms)
    explained = _explain_tasks(ranked, rows, picks, files, (accelerator, workload, mapping))
    ran_explained = _replay(explained, rows, store, parallel, on_line, "pick and winner")
    candidates = candidate_table(chosen, ranked, picks, rows)
    return RankRun(
        peer="zigzag-dse",
        candidates=candidates,
        layers=layer_table(chosen, candidates, errors, top),
        replayed=ran,
        explained=ran_explained,
        from_cache=len(timed) + len(explained) - ran - ran_explained,
    )


def _search(
    chosen: list[str],
    names: list[str],
    files: list[str],
    inputs: tuple[str, str, str],
    lpf_limit: int,
    store: ResultCache,
    parallel: dict,
    on_line: Callable[[str], None] | None,
) -> tuple[dict[str, dict], dict[str, str]]:
    """Every chosen layer's search, from the cache or run; each layer's candidates and pick,
    and why a layer has none."""
    searches: dict[str, dict] = {}
    todo = []
    for name in chosen:
        key = content_key("search", files, name, lpf_limit)
        found = store.get(key)
        if found is not None:
            searches[name] = found
        else:
            todo.append(LayerSearch(names.index(name), name, *inputs, lpf_limit, key))
    errors: dict[str, str] = {}
    if not todo:
        return searches, errors
    if on_line:
        on_line(f"searching {len(todo)} layer(s) with zigzag-dse's LOMA")

    def searched(outcome: TaskOutcome, count: int) -> None:
        if outcome.ok:
            store.put(todo[outcome.index].key, outcome.value)

    outcomes = map_tasks(search_layer, todo, desc="searches", on_done=searched, **parallel)
    for task, outcome in zip(todo, outcomes, strict=True):
        if outcome.ok:
            searches[task.layer] = outcome.value
        else:
            errors[task.layer] = outcome.error or ""
    return searches, errors


def _explain_tasks(
    ranked: dict[str, list[dict]],
    rows: dict[tuple[str, int], dict],
    picks: dict[str, int],
    files: list[str],
    inputs: tuple[str, str, str],
) -> list[CandidateReplay]:
    """Per layer, its pick and the replay's winner (fewest cycles, ZigZag's better rank among
    equals), to replay again with explanations."""
    tasks = []
    for name, order in ranked.items():
        timed = [(rank, c, rows[(name, c["order"])]) for rank, c in enumerate(order)
                 if (name, c["order"]) in rows]  # fmt: skip
        replayed = [(row["replay_cycles"], rank, c) for rank, c, row in timed
                    if row.get("replay_cycles") is not None]  # fmt: skip
        if not replayed:
            continue
        winner = min(replayed, key=lambda t: (t[0], t[1]))[2]
        for order_id in dict.fromkeys((picks[name], winner["order"])):
            c = next(x for x in order if x["order"] == order_id)
            key = content_key("explain", EXPLAIN_VERSION, files, name, c["spatial"], c["levels"])
            tasks.append(CandidateReplay(name, *inputs, c, key, explain=True))
    return tasks


def _replay(
    tasks: list[CandidateReplay],
    rows: dict[tuple[str, int], dict],
    store: ResultCache,
    parallel: dict,
    on_line: Callable[[str], None] | None,
    desc: str,
) -> int:
    """The replays not in the cache, through the one parallel runner; a failed one's status
    as `check zigzag --network` names it. Return how many ran."""
    from cyclesim.checks.zigzag.network import status_of

    return run_replays(replay_candidate, tasks, rows, store, parallel, on_line, desc, status_of)
