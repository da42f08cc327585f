"""The sweep's extra columns: ZigZag's latency for the same point, beside the replay's.

`sweep.yaml` names `zigzag_columns.py:zigzag_latency`; the sweep calls it in the worker after
each replay with the Result and the point's axis values. The point's SRAM sizes are read from
the replayed architecture; the mapping is the one replayed (ZigZag's choice for the large or the
small setting, as a temporal mapping). ZigZag evaluates that same mapping on the same sizes:
zigzag-dse 3.9.1 when installed, else our reimplementation of its latency model (equal to it
on this case, tests/checks/test_zigzag_model.py). With zigzag-dse, `zigzag_search_latency` is
also ZigZag's best latency over its own mapping search (LOMA, lpf 6) at the point's sizes — what
a ZigZag user would read for that memory size (empty without zigzag-dse).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from memsize import zigzag_case  # noqa: E402

from cyclesim.checks.zigzag import cases as zc  # noqa: E402
from cyclesim.errors import PeerUnavailable  # noqa: E402

SRAMS = ("sram_8KB", "sram_64KB", "sram_1M")


def zigzag_latency(result, point: dict) -> dict:
    """zigzag_latency, zigzag_onloading, zigzag_offloading, zigzag_source, total_sram_kib."""
    arch = result.architecture
    bits = tuple(arch.memory(name).size_bits for name in SRAMS)
    setting = "small" if "small" in Path(result.mapping.source.split(" with ")[0]).stem else "large"
    tm = zc.MEMSIZE_TEMPORAL_MAPPINGS[setting]
    with tempfile.TemporaryDirectory() as tmp:
        files = zigzag_case("large", "issue", tmp, sram_bits=bits, temporal_mapping=tm)
        latency, source = _zigzag(files)
        search = _zigzag_search(
            zigzag_case("large", "issue", tmp, sram_bits=bits, temporal_mapping=None)
        )
    return dict(
        total_sram_kib=sum(bits) / 8192,
        zigzag_latency=float(latency.latency_total_cycles),
        zigzag_onloading=float(latency.onloading_cycles),
        zigzag_offloading=float(latency.offloading_cycles),
        zigzag_source=source,
        zigzag_search_latency=search,
    )


def _zigzag_search(files) -> float | None:
    """zigzag-dse's best latency over its own temporal-mapping search; None without it."""
    from cyclesim.checks.zigzag import peer

    try:
        result = peer.run_zigzag(files.accelerator, files.workload, files.mapping)
    except PeerUnavailable:
        return None
    return float(result.latency.latency_total_cycles)


def _zigzag(files):
    """zigzag-dse's evaluation of the fixed mapping, or our model of it when it is missing."""
    try:
        from cyclesim.checks.zigzag import peer

        result = peer.run_zigzag(
            files.accelerator, files.workload, files.mapping, files.temporal_mapping
        )
        return result.latency, f"zigzag-dse {result.version}"
    except PeerUnavailable:
        from cyclesim.checks.zigzag.model import evaluate
        from cyclesim.checks.zigzag.read import load_zigzag_inputs

        inputs = load_zigzag_inputs(
            files.accelerator, files.workload, files.mapping, files.temporal_mapping
        )
        return evaluate(inputs), "cyclesim model of ZigZag 3.9.1"
