"""Replay every layer of a SCALE-Sim topology and put it next to SCALE-Sim, term by term.

Terms per layer: compute cycles (the replay's ideal steps plus its systolic fill and drain;
SCALE-Sim's Total - Stall, counted from 1), stall cycles, their total, utilisation, DRAM words
per operand and the wall time. `source` says who gave the number: the replay, the closed-form
model (model.py) or the real SCALE-Sim. Every difference gets a sentence naming its mechanism.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from cyclesim.checks.scalesim.importer import import_layer
from cyclesim.checks.scalesim.model import compute_cycles
from cyclesim.checks.scalesim.peer import ScaleSimLayer, ScaleSimRun, run_scalesim
from cyclesim.checks.scalesim.read import Layer, ScaleConfig, read_config, read_topology
from cyclesim.errors import PeerUnavailable, SpecError
from cyclesim.results import Result
from cyclesim.vocabulary import Cause

TERMS = (
    "compute_cycles",
    "stall_cycles",
    "outside_cycles",
    "total_cycles",
    "utilisation_percent",
    "dram_reads_ifmap",
    "dram_reads_filter",
    "dram_reads_ofmap",
    "dram_writes_ofmap",
    "wall_seconds",
)


@dataclass(frozen=True, slots=True, eq=False)
class LayerOutcome:
    layer: Layer
    replay: Result
    replay_seconds: float
    model_compute_cycles: int
    peer: ScaleSimLayer | None


@dataclass(frozen=True, slots=True, eq=False)
class ScaleSimCheck:
    config: ScaleConfig
    topology: str
    layers: tuple[LayerOutcome, ...]
    peer_run: ScaleSimRun | None
    peer_note: str | None  # why SCALE-Sim did not run

    def table(self) -> pd.DataFrame:
        """Long table: layer, term, source (replay | model | scalesim), value."""
        rows = []
        for o in self.layers:
            for term, source, value in _terms(o, self.config):
                rows.append({"layer": o.layer.name, "term": term, "source": source, "value": value})
        return pd.DataFrame(rows, columns=["layer", "term", "source", "value"])

    def parity(self) -> dict[str, bool | None]:
        """Per layer: the replay's compute cycles equal SCALE-Sim's (None without the peer)."""
        return {
            o.layer.name: None
            if o.peer is None
            else replay_compute(o.replay) == o.peer.compute_cycles
            for o in self.layers
        }

    def notes(self) -> list[str]:
        """One sentence per kind of difference, naming its mechanism."""
        return _notes(self)


def wavefront_cycles(res: Result) -> int:
    """Cycles the systolic wavefront added (fill and drain of the folds)."""
    return sum(
        s.cycles for s in res.spans if s.cause in (Cause.SYSTOLIC_FILL, Cause.SYSTOLIC_DRAIN)
    )


def replay_compute(res: Result) -> int:
    """The replay's compute cycles in SCALE-Sim's sense: steps plus the systolic wavefront."""
    return res.ideal_compute_cycles + wavefront_cycles(res)


def _dram(res: Result, tensor: str, action: str) -> int | None:
    acc = res.accesses
    rows = acc[(acc.memory == "DRAM") & (acc.tensor == tensor) & (acc.action == action)]
    return int(rows["values"].sum()) if len(rows) else 0


def _terms(o: LayerOutcome, config: ScaleConfig):
    res, peer, pes = o.replay, o.peer, config.rows * config.cols
    compute = replay_compute(res)
    yield "compute_cycles", "replay", compute
    yield "compute_cycles", "model", o.model_compute_cycles
    # stalls between the first and the last step; before and after them: onload and offload
    yield "stall_cycles", "replay", res.stall_cycles - wavefront_cycles(res)
    yield "outside_cycles", "replay", res.onload_cycles + res.offload_cycles
    yield "total_cycles", "replay", res.cycles
    inside = res.cycles - res.onload_cycles - res.offload_cycles  # like SCALE-Sim's Total Cycles
    yield "utilisation_percent", "replay", 100 * o.layer.macs / (inside * pes)
    if not config.calc:
        yield "dram_reads_ifmap", "replay", _dram(res, "A", "read")
        yield "dram_reads_filter", "replay", _dram(res, "B", "read")
        yield "dram_reads_ofmap", "replay", _dram(res, "Z", "read")
        yield "dram_writes_ofmap", "replay", _dram(res, "Z", "write")
    yield "wall_seconds", "replay", o.replay_seconds
    if peer is None:
        return
    yield "compute_cycles", "scalesim", peer.compute_cycles
    yield "stall_cycles", "scalesim", peer.stall_cycles
    inside = peer.compute_cycles + peer.stall_cycles
    total = max(peer.total_cycles_incl_prefetch, inside)  # CALC: only its estimated prefetch
    yield "outside_cycles", "scalesim", total - inside
    yield "total_cycles", "scalesim", total
    yield "utilisation_percent", "scalesim", peer.overall_util_percent
    yield "dram_reads_ifmap", "scalesim", peer.dram_reads_ifmap
    yield "dram_reads_filter", "scalesim", peer.dram_reads_filter
    yield "dram_reads_ofmap", "scalesim", 0
    yield "dram_writes_ofmap", "scalesim", peer.dram_writes_ofmap
    yield "wall_seconds", "scalesim", peer.seconds


def run_check(
    config_path: str | Path,
    topology_path: str | Path,
    *,
    layer: str | None = None,
    gemm: bool | None = None,
    use_peer: bool = True,
    progress: bool | None = None,
) -> ScaleSimCheck:
    """Read the two files, replay each layer (or the named one), then run SCALE-Sim on them."""
    from cyclesim.analysis.simulate import replay
    from cyclesim.spec import architecture_from_dict, mapping_from_dict, workload_from_dict

    config = read_config(config_path)
    layers = read_topology(topology_path, gemm)
    if layer is not None:
        chosen = tuple(x for x in layers if x.name == layer)
        if not chosen:
            raise SpecError(
                "no layer of that name in the topology",
                file=str(topology_path),
                found=layer,
                expected=f"one of {[x.name for x in layers]}",
            )
        layers = chosen
    replays = []
    for x in layers:
        imported = import_layer(x, config)
        where = f"{x.name} (line {x.line})"
        try:
            arch = architecture_from_dict(imported.arch, f"<architecture of {where}>")
            work = workload_from_dict(imported.workload, f"<workload of {where}>")
            mapping = mapping_from_dict(imported.mapping, arch, work, f"<mapping of {where}>")
        except SpecError as exc:  # a limit of the imported spec: the user wrote the file
            # the architecture comes from the .cfg, the workload and mapping from the row
            from_config = str(exc.file).startswith("<architecture")
            raise SpecError(
                f"layer {x.name} cannot be replayed: {exc.detail}"
                + (f" (in the imported {exc.field})" if exc.field else ""),
                file=str(config_path) if from_config else str(topology_path),
                line=None if from_config else x.line,
                expected=exc.expected,
            ) from None
        t0 = time.perf_counter()
        res = replay(arch, work, mapping, progress=progress)
        seconds = time.perf_counter() - t0
        replays.append((x, res, seconds, compute_cycles(x, arch.pe_array.systolic)))
    peer_run, note = None, None
    if use_peer:
        try:
            peer_run = run_scalesim(
                config_path,
                topology_path,
                gemm=layers[0].gemm,
                layers=tuple(x.name for x in layers),
            )
        except PeerUnavailable as exc:
            note = str(exc)
    else:
        note = "SCALE-Sim not run (--no-peer)"
    by_name = {p.name: p for p in peer_run.layers} if peer_run else {}
    outcomes = tuple(
        LayerOutcome(x, res, sec, model, by_name.get(x.name)) for x, res, sec, model in replays
    )
    return ScaleSimCheck(config, str(topology_path), outcomes, peer_run, note)


def _notes(check: ScaleSimCheck) -> list[str]:
    config = check.config
    notes = [
        "compute cycles: SCALE-Sim prints the 0-based index of its last ofmap write; it is "
        "counted here from 1 (its Total Cycles - Stall Cycles + 1), like the replay's cycles.",
        f"compute cycles = folds x (fill + T + drain) on the {config.rows}x{config.cols} "
        f"{config.dataflow.value} array, folds back to back as in SCALE-Sim; the replay books "
        "fill and drain as systolic_fill / systolic_drain stall causes and counts them here.",
    ]
    if config.calc:
        notes.append(
            "CALC mode: SCALE-Sim assumes every SRAM access hits and reports no stall; the replay "
            "holds each operand in its SRAM from cycle 0 (the SRAMs are backing stores), so its "
            "only non-compute cycles are the first fold's preload transfer (onload) and, output "
            "stationary, the last fold's write-back (offload). DRAM words: SCALE-Sim's are the "
            "traffic it would need; the replay has no DRAM in this mode."
        )
    else:
        notes += [
            "USER mode, DRAM traffic: SCALE-Sim's SRAM holds im2col operand elements, so a conv's "
            "ifmap is fetched im2col-inflated and re-fetched for every pass over the stream; the "
            "replay moves the same im2col operand (A) per tile as its mapping needs it.",
            "USER mode, padding: the replay pads a rank that does not fill its last fold up to a "
            "multiple of the array (the engine takes perfect loop factorisations), so its DRAM "
            "words of a tiled operand include the padding; the cycles do not change.",
            "USER mode, partial sums: SCALE-Sim writes every row fold's partial ofmap to DRAM "
            "(weight and input stationary) and never reads it back (dram_reads_ofmap 0); the "
            "replay keeps partial sums in the ofmap SRAM when they fit, else writes them and "
            "reads them back before the next fold accumulates into them.",
            "USER mode, stalls: SCALE-Sim gives each operand a private DRAM port with one cycle of "
            "latency and stalls the whole array when a demand row misses its prefetch window; the "
            "replay also uses one private port per operand, but fetches whole tiles into "
            "double-buffered SRAMs ahead of use and waits for a tile only when its fill has not "
            "landed. pre/post: the replay's onload (first tiles) and offload (last write-back), "
            "SCALE-Sim's prefetch before cycle 0 and final ofmap drain, which its Total Cycles "
            "leaves out.",
        ]
    if check.peer_note:
        notes.append(check.peer_note)
    if not config.calc:
        notes += [_stall_causes(o) for o in check.layers]
    for o in check.layers:
        if o.peer is not None and replay_compute(o.replay) != o.peer.compute_cycles:
            notes.append(
                f"{o.layer.name}: compute cycles differ ({replay_compute(o.replay):,} vs "
                f"{o.peer.compute_cycles:,}); the fold formula does not match SCALE-Sim here."
            )
    return notes


def _stall_causes(o: LayerOutcome) -> str:
    """The replay's memory stall cycles of a layer by root cause (phase, cause, port, tensor)."""
    res = o.replay
    spans = [s for s in res.spans if s.cause not in (Cause.SYSTOLIC_FILL, Cause.SYSTOLIC_DRAIN)]
    by: dict[tuple, int] = {}
    for s in spans:
        port = f"{s.port_memory}.{s.port}" if s.port_memory else (s.port or s.memory or "-")
        key = (s.phase, s.cause, port, s.tensor or "-")
        by[key] = by.get(key, 0) + s.cycles
    top = sorted(by.items(), key=lambda kv: -kv[1])[:4]
    parts = [f"{phase} {cause} {port} ({tensor}) {c:,}" for (phase, cause, port, tensor), c in top]
    peer = f"; SCALE-Sim: {o.peer.stall_cycles:,} stall cycles, no cause" if o.peer else ""
    return (
        f"{o.layer.name}: replay's non-compute cycles by root cause: "
        + (", ".join(parts) or "none")
        + peer
    )
