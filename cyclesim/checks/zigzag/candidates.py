"""Every temporal mapping zigzag-dse's own search (LOMA) evaluates for a layer, not only its pick.

ZigZag's search is run exactly as `peer.run_zigzag` runs it (its spatial mapping generator,
`MinimalLatencyStage` over spatial and over temporal mappings, LOMA with `lpf_limit`); the only
change is the leaf: `RecordingCostModelStage` is ZigZag's `CostModelStage` that also records
each evaluation's latency, energy and loops before handing it on. ZigZag's pick is what its
reduce stages return, found among the records. `evaluate_candidate` evaluates one recorded
candidate again (its spatial and temporal mapping fixed) for ZigZag's full terms.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from cyclesim.checks.zigzag.inputs import TemporalMapping
from cyclesim.checks.zigzag.peer import (
    N_SPATIAL_MAPPINGS,
    PeerResult,
    ZigZagPeerError,
    _no_mapping,
    _quiet,
    _result,
    loma_search,
    one_layer,
    require_zigzag,
)

Spatial = tuple[tuple[str, tuple[tuple[str, int], ...]], ...]
Levels = tuple[tuple[str, tuple[tuple[tuple[str, int], ...], ...]], ...]


@dataclass(frozen=True, slots=True)
class Candidate:
    """One mapping ZigZag's search evaluated: its loops and ZigZag's latency and energy.

    `order` is the evaluation order (ZigZag keeps the first of equal (latency, energy)).
    """

    order: int
    spatial: Spatial
    levels: Levels  # per layer operand, per memory level, loops innermost first
    latency: float
    energy: float

    @property
    def temporal_mapping(self) -> TemporalMapping:
        return TemporalMapping(self.levels, file=f"<zigzag-dse candidate {self.order}>")

    def to_json(self) -> dict:
        return {
            "order": self.order,
            "spatial": [[a, [list(loop) for loop in loops]] for a, loops in self.spatial],
            "levels": [
                [op, [[list(loop) for loop in level] for level in levels]]
                for op, levels in self.levels
            ],
            "latency": self.latency,
            "energy": self.energy,
        }

    @classmethod
    def from_json(cls, data: dict) -> Candidate:
        return cls(
            int(data["order"]),
            tuple((a, tuple((d, int(f)) for d, f in loops)) for a, loops in data["spatial"]),
            tuple(
                (op, tuple(tuple((d, int(f)) for d, f in level) for level in levels))
                for op, levels in data["levels"]
            ),
            float(data["latency"]),
            float(data["energy"]),
        )


@dataclass(frozen=True, slots=True)
class SearchResult:
    """All distinct candidates in evaluation order, and the index of ZigZag's pick among them."""

    candidates: tuple[Candidate, ...]
    pick: int


def _spatial_of(layer: Any) -> Spatial:
    return tuple(
        (str(array_dim), tuple((str(dim), int(factor)) for dim, factor in loops.items()))
        for array_dim, loops in layer.spatial_mapping.items()
    )


def _levels_of(cme: Any) -> Levels:
    origin = cme.temporal_mapping.mapping_dic_origin
    return tuple(
        (
            str(op),
            tuple(tuple((str(dim), int(factor)) for dim, factor in level) for level in origin[op]),
        )
        for op in cme.layer.layer_operands
    )


def _recording_stage() -> type:
    """ZigZag's CostModelStage, recording each evaluation into the `candidate_sink` list."""
    from zigzag.stages.evaluation.cost_model_evaluation import CostModelStage

    class RecordingCostModelStage(CostModelStage):
        def __init__(self, list_of_callables, *, candidate_sink: list, **kwargs):
            super().__init__(list_of_callables, **kwargs)
            self.sink = candidate_sink

        def run(self):
            for cme, extra in super().run():
                self.sink.append(
                    (_spatial_of(cme.layer), _levels_of(cme), cme.latency_total2, cme.energy_total)
                )
                yield cme, extra

    return RecordingCostModelStage


def search_candidates(
    accelerator: str,
    workload: str,
    mapping: str,
    *,
    layer_name: str | None = None,
    lpf_limit: int = 6,
) -> SearchResult:
    """Run ZigZag's search on one layer, keeping every candidate it evaluates.

    Raise PeerUnavailable if zigzag-dse cannot be imported, ZigZagPeerError if it fails or finds
    no mapping.
    """
    require_zigzag()
    sink: list = []
    try:
        with _quiet():
            best = _search(accelerator, workload, mapping, layer_name, lpf_limit, sink)
    except Exception as exc:  # ZigZag signals bad input with assert/ValueError/KeyError
        if type(exc).__name__ == "NoValidLoopOrderingFoundException":
            raise ZigZagPeerError(_no_mapping(exc)) from None
        raise ZigZagPeerError(
            f"zigzag-dse's search failed on layer {layer_name}: {type(exc).__name__}: {exc}"
        ) from None
    seen: dict[tuple, int] = {}
    candidates: list[Candidate] = []
    for spatial, levels, latency, energy in sink:
        if (spatial, levels) not in seen:
            seen[(spatial, levels)] = len(candidates)
            candidates.append(Candidate(len(candidates), spatial, levels, latency, energy))
    pick = seen.get(best)
    if pick is None:
        raise ZigZagPeerError("zigzag-dse's pick is not among the candidates it evaluated")
    return SearchResult(tuple(candidates), pick)


def _search(
    acc_path: str, wl_path: str, map_path: str, layer_name: str | None, lpf: int, sink: list
) -> tuple:
    """peer._evaluate's search with the recording leaf; the (spatial, levels) of ZigZag's pick."""
    from zigzag.stages.parser.accelerator_parser import AcceleratorParserStage

    acc = AcceleratorParserStage.parse_accelerator(acc_path)
    layer = one_layer(wl_path, map_path, layer_name)
    answers = loma_search(acc, layer, lpf, _recording_stage(), candidate_sink=sink)
    cme = answers[0][0]
    return (_spatial_of(cme.layer), _levels_of(cme))


def evaluate_candidate(
    accelerator: str, workload: str, mapping: str, layer_name: str | None, candidate: Candidate
) -> PeerResult:
    """ZigZag's full terms of one candidate, its spatial and temporal mapping fixed.

    Raise ZigZagPeerError if the candidate's spatial mapping is not one ZigZag generates.
    """
    require_zigzag()
    with _quiet():
        return _result(_evaluate(accelerator, workload, mapping, layer_name, candidate))


def _evaluate(acc_path: str, wl_path: str, map_path: str, layer_name: str | None, c: Candidate):
    from zigzag.cost_model.cost_model import CostModelEvaluation
    from zigzag.datatypes import LayerDim
    from zigzag.mapping.temporal_mapping import TemporalMapping as ZZTemporalMapping
    from zigzag.mapping.temporal_mapping import TemporalMappingType
    from zigzag.stages.evaluation.cost_model_evaluation import CostModelStage
    from zigzag.stages.mapping.spatial_mapping_conversion import SpatialMappingConversionStage
    from zigzag.stages.mapping.spatial_mapping_generation import SpatialMappingGeneratorStage
    from zigzag.stages.parser.accelerator_parser import AcceleratorParserStage

    acc = AcceleratorParserStage.parse_accelerator(acc_path)
    layer = one_layer(wl_path, map_path, layer_name)
    generator = SpatialMappingGeneratorStage(
        [CostModelStage],
        accelerator=acc,
        layer=layer,
        nb_mappings_generated=N_SPATIAL_MAPPINGS,
        enable_mix_spatial_mapping_generation=False,
    )
    for spatial in generator.generate_spatial_mappings():
        layer.spatial_mapping = spatial
        if _spatial_of(layer) == c.spatial:
            break
    else:
        raise ZigZagPeerError(f"zigzag-dse generates no spatial mapping {c.spatial}")
    layer = copy.copy(layer)  # as SpatialMappingGeneratorStage.run hands it on
    conversion = SpatialMappingConversionStage([CostModelStage], accelerator=acc, layer=layer)
    spatial_frac, spatial_int = conversion.convert_user_spatial_mapping(layer.spatial_mapping)
    operands = {str(op): op for op in layer.layer_operands}
    tm_dict = {
        operands[op]: [[(LayerDim(dim), factor) for dim, factor in level] for level in levels]
        for op, levels in c.levels
    }
    tm = ZZTemporalMapping(tm_dict, layer, TemporalMappingType.UNEVEN)
    return CostModelEvaluation(
        accelerator=acc,
        layer=layer,
        spatial_mapping=spatial_frac,
        spatial_mapping_int=spatial_int,
        temporal_mapping=tm,
        access_same_data_considered_as_no_access=True,
    )
