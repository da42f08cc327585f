"""Every DRAM request a replay's transfers make reaches the timer once, and only theirs: the
timer's request count equals the requests of the bytes the transfers moved, counted from
their tiles' addresses, and the activates traced as bank commands equal its counted ones.

A run of bursts issued ahead (all its requests at its start) and cut by a competitor on its
port goes back to the DRAM state at its start; before the fix another port's requests issued
meanwhile were forgotten with it (docs/dram_causes.md, "Runs cut while another port issues").
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from replay_helpers import inputs_from_dicts  # noqa: E402
from test_replay_properties import schedules  # noqa: E402

from cyclesim.engine import dram_port, replay  # noqa: E402
from cyclesim.engine.record import BANK_ACTIVATE  # noqa: E402


def line_requests(runs: list[tuple[int, int, int, int]], request_bytes: int) -> int:
    """Requests covering strided byte runs [(address, bytes, stride, count)]: a DMA engine
    issues each line's requests, the first and last of a line partly used if it is unaligned."""
    total = 0
    for address, size, stride, count in runs:
        for x in range(count):
            a = address + x * stride
            total += (a + size - 1) // request_bytes - a // request_bytes + 1
    return total


def replay_counting(*inputs, **options):
    """Replay, traced; (result, {DRAM memory: requests of the tiles its transfers moved})."""
    moved: dict[str, int] = {}
    select = dram_port.DramSide.select

    def counting(side, k):  # each transfer through a DRAM side selects its tile once
        select(side, k)
        name = side.addresses.memory
        moved[name] = moved.get(name, 0) + line_requests(side.runs, side.timer.request_bytes)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dram_port.DramSide, "select", counting)
        res = replay(*inputs, trace=True, progress=False, **options)
    return res, moved


def assert_every_request_counted(res, moved: dict[str, int]) -> None:
    counts = res.raw.rec.dram_counts
    moved = {m: moved.get(m, 0) for m in counts}  # a memory no transfer reached: none
    assert {m: c["requests"] for m, c in counts.items()} == moved
    assert {s["memory"]: s["requests"] for s in res.to_json_dict()["dram"]} == moved
    traced: dict[str, int] = {}
    for _, name, _, kind, _ in res.raw.rec.dram_banks:
        if kind == BANK_ACTIVATE:
            traced[name] = traced.get(name, 0) + 1
    assert {m: traced.get(m, 0) for m in counts} == {m: c["activates"] for m, c in counts.items()}


EXACT = settings(
    max_examples=int(__import__("os").environ.get("CYCLESIM_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@EXACT
@given(
    schedules(shared_ports=True),
    st.sampled_from(["DDR4_8Gb_x8_2400", "HBM2_8Gb_x128"]),
    st.sampled_from([100, 700, 2000]),
    st.sampled_from(["rochrababgco", "rorabgbachco"]),
)
def test_every_request_of_every_transfer_reaches_the_timer_once(
    case, config, clock_mhz, address_mapping
):
    """Random small GEMM schedules (fills and write-backs on separate DRAM ports, or on one,
    a buffer's port shared, so runs are cut while the other DRAM port issues)."""
    arch, workload, mapping, reuse, _ = case
    arch = dict(arch, clock_mhz=clock_mhz)
    arch["memories"] = [dict(m) for m in arch["memories"]]
    arch["memories"][0]["dram"] = {"config": config, "address_mapping": address_mapping}
    res, moved = replay_counting(*inputs_from_dicts(arch, workload, mapping), reuse=reuse)
    assert_every_request_counted(res, moved)
