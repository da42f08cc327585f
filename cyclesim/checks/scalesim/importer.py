"""A SCALE-Sim layer as our three inputs: a GEMM workload, a systolic architecture, a mapping.

The layer is SCALE-Sim's im2col GEMM, Z[m, n] += A[m, k] * B[k, n] with m the output pixels
(P), n the filters (F) and k the window (W), every value one 8-bit word as in SCALE-Sim. The
dataflow puts two ranks on the array's rows and columns and streams the third, as
`model.spatio_temporal` says; a rank larger than its array dimension is tiled in folds (and
padded up to a multiple of it: the extra PEs idle, as in SCALE-Sim's partial folds), and the
stationary tensor sits in a register per PE, refilled at every fold.

CALC mode (every access hits): the three SRAMs are the backing stores, so the replay has no
DRAM and no onload beyond the first preload. USER mode: a DRAM with one private port per
operand (SCALE-Sim's model: ifmap and filter read at their [layout] bandwidths, ofmap written
at `Bandwidth`; partial sums that leave the SRAM come back through a read port of the ofmap
bandwidth), one-cycle latency, and SRAMs of the configured sizes: an operand that fits its
SRAM whole is loaded once; any other is held per fold in two halves (double-buffered, as
SCALE-Sim's SRAMs are), the stream cut into chunks so that two tiles fit.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil, prod

from cyclesim.checks.scalesim.model import spatio_temporal
from cyclesim.checks.scalesim.read import Layer, ScaleConfig
from cyclesim.errors import SpecError
from cyclesim.spec.systolic import Dataflow

WORD_BITS = 8  # SCALE-Sim's word is one byte for every operand
STATIONARY = {
    Dataflow.WEIGHT_STATIONARY: "B",
    Dataflow.OUTPUT_STATIONARY: "Z",
    Dataflow.INPUT_STATIONARY: "A",
}
RANKS = {"A": ("m", "k"), "B": ("k", "n"), "Z": ("m", "n")}
SRAM = {"A": "ifmap_sram", "B": "filter_sram", "Z": "ofmap_sram"}


@dataclass(frozen=True, slots=True)
class ImportedLayer:
    """Our inputs for one layer, as dicts (validated by the spec loaders), and how they map it."""

    layer: Layer
    arch: dict
    workload: dict
    mapping: dict
    rank_sizes: dict[str, int]  # padded m, n, k
    stream_chunks: int  # parts the stream is cut into so each SRAM holds two tiles


def _ranks(dataflow: Dataflow) -> tuple[str, str, str]:
    """(rank on the rows, rank on the columns, streamed rank)."""
    return {
        Dataflow.OUTPUT_STATIONARY: ("m", "n", "k"),
        Dataflow.WEIGHT_STATIONARY: ("k", "n", "m"),
        Dataflow.INPUT_STATIONARY: ("k", "m", "n"),
    }[dataflow]


def import_layer(layer: Layer, config: ScaleConfig) -> ImportedLayer:
    """Build the architecture, workload and mapping that replay `layer` under `config`."""
    flow, rows, cols = config.dataflow, config.rows, config.cols
    st = spatio_temporal(layer, flow)
    row_rank, col_rank, stream_rank = _ranks(flow)
    spatial = {}  # rank -> (folds, spatial bound)
    for rank, size, dim in ((row_rank, st.rows_dim, rows), (col_rank, st.cols_dim, cols)):
        spatial[rank] = (ceil(size / dim), min(size, dim))
    sizes = {rank: f * b for rank, (f, b) in spatial.items()}
    sizes[stream_rank] = st.stream
    words = _sram_words(config)
    whole = {  # operands kept whole in their SRAM (loaded once); the others per fold
        t: config.calc or prod(sizes[r] for r in ranks) <= words[t] for t, ranks in RANKS.items()
    }
    tiled = [t for t in "ABZ" if not whole[t]]
    chunks = _stream_chunks(config, tiled, spatial, stream_rank, st.stream) if tiled else 1
    workload = {
        "name": layer.name,
        "tensors": {
            "A": {"bits_per_value": WORD_BITS},
            "B": {"bits_per_value": WORD_BITS},
            "Z": {"bits_per_value": WORD_BITS, "partial_sum_bits": WORD_BITS},
        },
        "einsums": [
            {
                "name": layer.name,
                "expression": "Z[m,n] += A[m,k] * B[k,n]",
                "ranks": dict(sizes),
                "inputs": [
                    {"tensor": "A", "projection": ["m", "k"]},
                    {"tensor": "B", "projection": ["k", "n"]},
                ],
                "outputs": [{"tensor": "Z", "projection": ["m", "n"]}],
            }
        ],
    }
    stationary = STATIONARY[flow]
    tree: list[dict] = []
    if not config.calc:
        tree.append({"type": "storage", "memory": "DRAM", "tensors": ["A", "B", "Z"]})
    tree += [{"type": "storage", "memory": SRAM[t], "tensors": [t]} for t in "ABZ" if whole[t]]
    for rank in (col_rank, row_rank):
        tree.append({"type": "temporal", "rank": rank, "bound": spatial[rank][0]})
    if chunks > 1:
        tree.append({"type": "temporal", "rank": stream_rank, "bound": chunks})
    tree += [{"type": "storage", "memory": SRAM[t], "tensors": [t]} for t in tiled]
    tree.append({"type": "spatial", "rank": col_rank, "bound": spatial[col_rank][1], "dim": "cols"})
    tree.append({"type": "spatial", "rank": row_rank, "bound": spatial[row_rank][1], "dim": "rows"})
    tree.append({"type": "storage", "memory": "preg", "tensors": [stationary]})
    tree.append({"type": "temporal", "rank": stream_rank, "bound": st.stream // chunks})
    tree.append({"type": "compute", "einsum": layer.name})
    mapping = {"name": f"{flow.value}_{rows}x{cols}", "loop_tree": tree}
    return ImportedLayer(layer, _arch(config, stationary, tiled), workload, mapping, sizes, chunks)


def _sram_words(config: ScaleConfig) -> dict[str, int]:
    return {
        "A": config.ifmap_sram_kib * 1024,
        "B": config.filter_sram_kib * 1024,
        "Z": config.ofmap_sram_kib * 1024,
    }


def _stream_chunks(
    config: ScaleConfig, tiled: list[str], spatial: dict, stream_rank: str, stream: int
) -> int:
    """The fewest equal parts of the stream for which two tiles of each tiled operand fit."""
    words = _sram_words(config)
    for parts in range(1, stream + 1):
        if stream % parts:
            continue
        fits = True
        for tensor in tiled:
            ranks = RANKS[tensor]
            extent = [stream // parts if r == stream_rank else spatial[r][1] for r in ranks]
            fits = fits and 2 * prod(extent) <= words[tensor]
        if fits:
            return parts
    raise SpecError(
        "no tiling of the stream fits the SRAMs: two tiles of rows x cols words must fit each",
        file=config.source,
        field="[architecture_presets] *SramSzkB",
    )


def _ports(width: int, latency: int = 0) -> list[dict]:
    return [
        {"name": "rd", "kind": "read", "width_bits": width, "latency_cycles": latency},
        {"name": "wr", "kind": "write", "width_bits": width, "latency_cycles": latency},
    ]


def _arch(config: ScaleConfig, stationary: str, tiled: list[str]) -> dict:
    """Systolic array, SRAMs wide enough for a whole array edge per cycle, per-PE registers."""
    rows, cols = config.rows, config.cols
    wide = WORD_BITS * rows * cols  # SCALE-Sim: SRAM to array bandwidth is never a limit
    memories = []
    if not config.calc:
        memories.append(
            {
                "name": "DRAM",
                "size_bits": None,
                "tensors": ["A", "B", "Z"],
                "ports": [
                    _private("rd_ifmap", "read", config.ifmap_bandwidth, "A", "read_to_below"),
                    _private("rd_filter", "read", config.filter_bandwidth, "B", "read_to_below"),
                    _private("wr_ofmap", "write", config.ofmap_bandwidth, "Z", "write_from_below"),
                    _private("rd_ofmap", "read", config.ofmap_bandwidth, "Z", "read_to_below"),
                ],
            }
        )
    for tensor, kib in (
        ("A", config.ifmap_sram_kib),
        ("B", config.filter_sram_kib),
        ("Z", config.ofmap_sram_kib),
    ):
        memories.append(
            {
                "name": SRAM[tensor],
                "size_bits": None if config.calc else kib * 1024 * WORD_BITS,
                "tensors": [tensor],
                "double_buffered": tensor in tiled,
                "ports": _ports(wide),
            }
        )
    memories.append(
        {
            "name": "preg",
            "size_bits": 2 * WORD_BITS,
            "shared_across": [],
            "tensors": [stationary],
            "double_buffered": True,
            # twice a value per cycle: the PE array's read-modify-write of a stationary output
            # leaves room for the previous fold's write-back (SCALE-Sim drains it for free);
            # bursts of the SRAM's width: a fold's registers load (or drain) in one burst on
            # the SRAM port, each register's own port taking its value in parallel (bursts
            # are counted where the bits meet, DESIGN: narrower ones would serialise them)
            "ports": [dict(p, burst_bits=wide) for p in _ports(2 * WORD_BITS)],
        }
    )
    return {
        "name": f"scalesim_{config.run_name}",
        "pe_array": {
            "dims": {"rows": rows, "cols": cols},
            "systolic": {"dataflow": config.dataflow.value},
        },
        "memories": memories,
    }


def _private(name: str, kind: str, words: int, tensor: str, direction: str) -> dict:
    """A DRAM port of its own for one operand and direction, one-cycle latency (SCALE-Sim)."""
    return {
        "name": name,
        "kind": kind,
        "width_bits": words * WORD_BITS,
        "latency_cycles": 1,
        "serves": [{"tensor": tensor, "direction": direction}],
    }
