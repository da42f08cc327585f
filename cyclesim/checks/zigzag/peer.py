"""Run the real zigzag-dse (3.9.1) on ZigZag input files and return its terms as `ZigZagLatency`.

Two routes: a fixed temporal mapping (tm_*_setting file) is evaluated directly through
ZigZag's Python classes (docs/reference/zigzag.md §5.2); without one, ZigZag's own search (LOMA, or
its allocator on a complete `temporal_ordering`) chooses the mapping and the chosen loops come
back as a `TemporalMapping`. Nothing is written to disk and ZigZag's logging is silenced.
zigzag-dse is imported lazily; `PeerUnavailable` says why it cannot be used.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from cyclesim.checks.zigzag.inputs import DataDirection, TemporalMapping
from cyclesim.checks.zigzag.latency import (
    DoubleBuffer,
    LinkLoad,
    LinkSharing,
    LoadingEntry,
    OnloadingParts,
    PortStall,
    Transfer,
    WordAccess,
    ZigZagLatency,
)
from cyclesim.errors import CyclesimError, PeerUnavailable

EXPECTED_VERSION = "3.9.1"


class ZigZagPeerError(CyclesimError):
    """zigzag-dse itself refused or failed on the inputs; the message carries its reason."""


@dataclass(frozen=True, slots=True)
class PeerResult:
    """ZigZag's terms, the temporal mapping it evaluated (chosen or given) and its version."""

    latency: ZigZagLatency
    temporal_mapping: TemporalMapping
    spatial: tuple[tuple[str, tuple[tuple[str, int], ...]], ...]
    version: str


def zigzag_version() -> str:
    """The installed zigzag-dse version. Raise PeerUnavailable if it cannot be imported."""
    require_zigzag()
    import importlib.metadata

    return importlib.metadata.version("zigzag-dse")


def require_zigzag() -> None:
    """Import zigzag-dse's API once, turning a failure into PeerUnavailable with the reason."""
    try:
        with _quiet():
            import zigzag.api  # noqa: F401
    except ImportError as exc:
        hint = " (zigzag-dse 3.9.1 imports 'six' without declaring it)" if "six" in str(exc) else ""
        raise PeerUnavailable(f"zigzag-dse is not importable: {exc}{hint}") from None


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Silence ZigZag's loggers (and the warnings it logs at import) for the duration."""
    logger = logging.getLogger("zigzag")
    level, propagate = logger.level, logger.propagate
    logger.setLevel(logging.CRITICAL + 1)
    logger.propagate = False
    try:
        yield
    finally:
        logger.setLevel(level)
        logger.propagate = propagate


def run_zigzag(
    accelerator: str,
    workload: str,
    mapping: str,
    temporal_mapping: str | None = None,
    *,
    layer_name: str | None = None,
    lpf_limit: int = 6,
) -> PeerResult:
    """Evaluate one layer with zigzag-dse. Raise PeerUnavailable, or ZigZagPeerError if ZigZag fails."""
    require_zigzag()
    try:
        with _quiet():
            cme = _evaluate(accelerator, workload, mapping, temporal_mapping, layer_name, lpf_limit)
            return _result(cme)
    except CyclesimError:
        raise
    except Exception as exc:  # ZigZag signals bad input with assert/ValueError/KeyError
        if type(exc).__name__ == "NoValidLoopOrderingFoundException":  # its search found none
            raise ZigZagPeerError(_no_mapping(exc)) from None
        inputs = ", ".join(f for f in (accelerator, workload, mapping, temporal_mapping) if f)
        raise ZigZagPeerError(
            f"zigzag-dse refused the inputs ({inputs}), which cyclesim's own reader accepted: "
            f"{type(exc).__name__}: {exc}; rerun with --no-peer to compare with cyclesim's model only"
        ) from None


def _no_mapping(exc: Exception) -> str:
    """zigzag-dse's 'no valid loop ordering' on one line: its first sentence, then the causes it
    lists. --no-peer would not help: without zigzag-dse nothing chooses the mapping."""
    text = str(exc)
    head, _, causes = text.partition("Common causes of this error are:")
    first = " ".join(head.split()).split(". ")[0].rstrip(".")
    listed = "; ".join(
        c.strip(" -")[:1].lower() + c.strip(" -")[1:] for c in causes.splitlines() if c.strip(" -")
    )
    return f"zigzag-dse finds no mapping (NoValidLoopOrderingFoundException: {first})" + (
        f"; common causes, per ZigZag: {listed}" if listed else ""
    )


def _evaluate(
    acc_path: str,
    wl_path: str,
    map_path: str,
    tm_path: str | None,
    layer_name: str | None,
    lpf: int,
) -> Any:
    """Parse with ZigZag's parsers, then evaluate the fixed mapping or run ZigZag's search."""
    from zigzag.stages.evaluation.cost_model_evaluation import CostModelStage
    from zigzag.stages.parser.accelerator_parser import AcceleratorParserStage

    acc = AcceleratorParserStage.parse_accelerator(acc_path)
    layer = one_layer(wl_path, map_path, layer_name)
    if tm_path is None:
        return loma_search(acc, layer, lpf, CostModelStage)[0][0]
    return _evaluate_fixed(acc, layer, tm_path)


N_SPATIAL_MAPPINGS = 3  # spatial mappings ZigZag's generator offers the search


def one_layer(wl_path: str, map_path: str, layer_name: str | None) -> Any:
    """A fresh copy of the one layer named (the only one when None); ZigZagPeerError otherwise."""
    stamps = tuple(os.stat(p).st_mtime_ns if os.path.exists(p) else 0 for p in (wl_path, map_path))
    layers = _parsed_layers(wl_path, map_path, stamps)
    chosen = [n for n in layers if layer_name is None or n.name == layer_name]
    if len(chosen) != 1:
        raise ZigZagPeerError(
            f"cannot choose one layer (asked {layer_name!r}; layers {[n.name for n in layers]})"
        )
    return copy.deepcopy(chosen[0])  # ZigZag's stages set attributes on the layer


def loma_search(acc: Any, layer: Any, lpf: int, leaf: Any, **extra: Any) -> list:
    """zigzag-dse's own search (spatial generator, LOMA, minimal latency) with `leaf` costing
    each temporal mapping; its answers, ZigZag's pick first."""
    from zigzag.mapping.temporal_mapping import TemporalMappingType
    from zigzag.stages.mapping.spatial_mapping_generation import SpatialMappingGeneratorStage
    from zigzag.stages.mapping.temporal_mapping_generator_stage import TemporalMappingGeneratorStage
    from zigzag.stages.results.reduce_stages import MinimalLatencyStage

    stages = [
        SpatialMappingGeneratorStage,
        MinimalLatencyStage,
        TemporalMappingGeneratorStage,
        leaf,
    ]
    return list(
        MinimalLatencyStage(
            stages,
            accelerator=acc,
            layer=layer,
            loma_lpf_limit=lpf,
            loma_show_progress_bar=False,
            access_same_data_considered_as_no_access=True,
            temporal_mapping_type=TemporalMappingType.UNEVEN,
            nb_mappings_generated=N_SPATIAL_MAPPINGS,
            enable_mix_spatial_mapping_generation=False,
            **extra,
        ).run()
    )


@functools.lru_cache(maxsize=4)
def _parsed_layers(wl_path: str, map_path: str, stamps: tuple[int, ...]) -> tuple[Any, ...]:
    """ZigZag's layer nodes of a workload (ONNX through its ONNX parser), parsed once per process:
    a whole-network check evaluates every layer of the same file in the same worker (`stamps`,
    the files' modification times, make an edited file parse again)."""
    from zigzag.stages.evaluation.cost_model_evaluation import CostModelStage
    from zigzag.stages.parser.workload_parser import WorkloadParserStage

    if wl_path.lower().endswith(".onnx"):
        from zigzag.parser.onnx.onnx_model_parser import ONNXModelParser

        workload = ONNXModelParser(wl_path, map_path).run()
    else:
        workload = WorkloadParserStage(
            [CostModelStage], workload=wl_path, mapping=map_path
        ).parse_workload()
    return tuple(n for n in workload.topological_sort() if hasattr(n, "layer_operands"))


def _evaluate_fixed(acc: Any, layer: Any, tm_path: str) -> Any:
    """docs/reference/zigzag.md §5.2: spatial mapping, TemporalMapping(tm), CostModelEvaluation."""
    from zigzag.cost_model.cost_model import CostModelEvaluation
    from zigzag.datatypes import LayerDim
    from zigzag.mapping.temporal_mapping import TemporalMapping as ZZTemporalMapping
    from zigzag.mapping.temporal_mapping import TemporalMappingType
    from zigzag.stages.evaluation.cost_model_evaluation import CostModelStage
    from zigzag.stages.mapping.spatial_mapping_conversion import SpatialMappingConversionStage
    from zigzag.stages.mapping.spatial_mapping_generation import SpatialMappingGeneratorStage

    from cyclesim.spec.yamlio import read_yaml

    generator = SpatialMappingGeneratorStage([CostModelStage], accelerator=acc, layer=layer)
    spatial = next(iter(generator.generate_spatial_mappings()))
    layer.spatial_mapping = spatial
    conversion = SpatialMappingConversionStage([CostModelStage], accelerator=acc, layer=layer)
    spatial_frac, spatial_int = conversion.convert_user_spatial_mapping(spatial)
    data, _, _ = read_yaml(tm_path)
    operands = {str(op): op for op in layer.layer_operands}
    tm_dict = {
        operands[key]: [
            [(LayerDim(str(dim)), int(factor)) for dim, factor in level] for level in levels
        ]
        for key, levels in data.items()
    }
    tm = ZZTemporalMapping(tm_dict, layer, TemporalMappingType.UNEVEN)
    return CostModelEvaluation(
        accelerator=acc,
        layer=layer,
        spatial_mapping=spatial_frac,
        spatial_mapping_int=spatial_int,
        temporal_mapping=tm,
        access_same_data_considered_as_no_access=True,
        cycles_per_op=1.0,
    )


def _direction(zz_direction: Any) -> DataDirection:
    """ZigZag's DataDirection -> ours (same values)."""
    return DataDirection(str(zz_direction.value))


def _result(cme: Any) -> PeerResult:
    """Read a CostModelEvaluation's attributes into our dataclasses (no recomputation).

    Over 80 lines: a CostModelEvaluation's attributes read field by field into our dataclasses,
    no computation.
    """
    acc, layer = cme.accelerator, cme.layer
    links = layer.memory_operand_links
    hierarchy = {
        str(links.layer_to_mem_op(op)): acc.mem_hierarchy_dict[links.layer_to_mem_op(op)]
        for op in layer.layer_operands
    }

    def memory_name(op: Any, level: int) -> str:
        return hierarchy[str(links.layer_to_mem_op(op))][level].name

    port_stalls = []
    for m_index, per_port in enumerate(cme.port_activity_collect):
        memory = cme.mem_level_list[m_index].name
        for port_name, activities in per_port.items():
            if not activities:
                continue
            transfers = tuple(
                Transfer(
                    str(a.served_op_lv_dir[0]),
                    memory,
                    a.served_op_lv_dir[1],
                    _direction(a.served_op_lv_dir[2]),
                    a.real_cycle,
                    a.allowed_cycle,
                    a.period,
                    a.period_count,
                )  # fmt: skip
                for a in activities
            )
            port_stalls.append(
                PortStall(
                    memory,
                    port_name,
                    transfers,
                    cme.mem_updating_window_union_collect[m_index][port_name],
                    cme.stall_slack_comb_collect[m_index][port_name],
                )  # fmt: skip
            )
    entries_in, entries_out = [], []
    for m_index, per_port in enumerate(cme.data_loading_per_mem_inst):
        memory = cme.mem_level_list[m_index].name
        for port, activities in per_port.items():
            for a in activities:
                op, level, direction = a.served_op_lv_dir
                entry = LoadingEntry(
                    str(op), memory, level, _direction(direction), port.name, a.real_cycle,
                    cme.real_data_trans_cycle[op][level].get(direction), port.port_is_shared_by_two_input_operands,
                )  # fmt: skip
                (entries_out if op == layer.output_operand else entries_in).append(entry)
    on_links = []
    for op in layer.input_operands:
        for m, cycles in enumerate(cme.data_loading_cc_pair_combined_per_op[op]):
            low = cme.data_loading_cc_per_op[op][f"{op.name}{m}_wr_in_by_high"][1]
            high = cme.data_loading_cc_per_op[op][f"{op.name}{m + 1}_rd_out_to_low"][1]
            sharing = (
                LinkSharing.SHARED
                if low and high
                else LinkSharing.SEPARATE
                if not (low or high)
                else LinkSharing.HALF_SHARED
            )
            on_links.append(
                LinkLoad(str(op), memory_name(op, m), memory_name(op, m + 1), cycles, sharing)
            )
    out = layer.output_operand
    off_links = [
        LinkLoad(
            str(out), memory_name(out, m), memory_name(out, m + 1), cycles, LinkSharing.SEPARATE
        )
        for m, cycles in enumerate(cme.data_offloading_cc_pair_combined)
    ]
    latency = ZigZagLatency(
        latency_total_cycles=cme.latency_total2,
        ideal_cycles=cme.ideal_cycle,
        ideal_temporal_cycles=cme.ideal_temporal_cycle,
        temporal_stall_cycles=cme.stall_slack_comb,
        onloading_cycles=cme.data_onloading_cycle,
        offloading_cycles=cme.data_offloading_cycle,
        systolic_drain_cycles=cme.systolic_drain_cycle,
        borrowed_cycles=cme.loading_offloading_cycles_borrowed_from_computation,
        double_buffers=tuple(
            DoubleBuffer(str(op), memory_name(op, m), m, flags[m + 1])
            for op, flags in cme.double_buffer_true.items()
            for m in range(len(flags) - 1)
        ),
        port_stalls=tuple(port_stalls),
        onloading_entries=tuple(entries_in),
        offloading_entries=tuple(entries_out),
        onloading_links=tuple(on_links),
        offloading_links=tuple(off_links),
        onloading_parts=tuple(
            OnloadingParts(
                str(op),
                cme.data_loading_individual_part[op],
                cme.data_loading_half_shared_part[op],
                cme.data_loading_shared_part[op],
            )
            for op in layer.input_operands
        ),
        word_accesses=tuple(
            WordAccess(
                str(op), memory_name(op, m), m, direction, access.get(_zz_direction(direction))
            )
            for op in layer.layer_operands
            for m, access in enumerate(cme.memory_word_access[op])
            for direction in DataDirection
        ),
    )
    origin = cme.temporal_mapping.mapping_dic_origin
    tm = TemporalMapping(
        tuple(
            (
                str(op),
                tuple(
                    tuple((str(dim), int(factor)) for dim, factor in level) for level in origin[op]
                ),
            )
            for op in layer.layer_operands
        ),
        file="<chosen by zigzag-dse>",
    )
    spatial = tuple(
        (str(array_dim), tuple((str(dim), int(factor)) for dim, factor in loops.items()))
        for array_dim, loops in layer.spatial_mapping.items()
    )
    import importlib.metadata

    return PeerResult(latency, tm, spatial, importlib.metadata.version("zigzag-dse"))


def _zz_direction(direction: DataDirection) -> Any:
    """Ours -> ZigZag's DataDirection."""
    from zigzag.hardware.architecture.memory_port import DataDirection as ZZDirection

    return ZZDirection(direction.value)
