"""Every DRAM request a replay's transfers make reaches the timer once, and only theirs: the
timer's request count equals the requests of the bytes the transfers moved, counted from
their tiles' addresses, and the activates traced as bank commands equal its counted ones.

A run of bursts issued ahead (all its requests at its start) and cut by a competitor on its
port goes back to the DRAM state at its start. The timer is shared by every link of the
memory, so requests another port issued meanwhile were once forgotten with it; now another
link's issue cuts the run first (docs/dram_causes.md, "Cut runs, and another link issuing").
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from replay_helpers import arch_with_dram, gemm_einsum, inputs_from_dicts, memory, port  # noqa: E402
from test_replay_properties import schedules  # noqa: E402

from cyclesim.analysis.simulate import replay  # noqa: E402
from cyclesim.cli import main  # noqa: E402
from cyclesim.engine import dram_port  # noqa: E402
from cyclesim.vocabulary import BankCommand


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
        if kind == BankCommand.ACTIVATE:
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
    arch = arch_with_dram(arch, {"config": config, "address_mapping": address_mapping}, clock_mhz)
    res, moved = replay_counting(*inputs_from_dicts(arch, workload, mapping), reuse=reuse)
    assert_every_request_counted(res, moved)


# HBM2 (preset HBM2_8Gb_x128) on one channel at tCK = 1 ns with a 1000 MHz accelerator: one
# accelerator cycle per DRAM cycle. tRCDRD = tRCDWR = 14, CL = 14, CWL = 4, a burst 2 cycles,
# tCCD_L = 2. Mapping rorabgbachco: 64 B requests, 32 to a 2 KiB row, then bank, bank group;
# A at 0 (bank 0), B at 2048 (bank 1), Z at 4096 (bank 2).
HBM = {"config": "HBM2_8Gb_x128", "channels": 1}


def tiled_gemm(ports: tuple[int, int, int], bits: tuple[int, int], ranks, tree, **reg):
    """Z[m,n] += A[m,k] * B[k,n] (ranks m, n, k) with HBM2 behind the DRAM; ports: the widths
    of the DRAM's read and write ports and of reg's; bits: of A and B, of Z's partial sums.
    The three inputs as dicts (the YAML files' contents)."""
    dram_rd, dram_wr, reg_width = ports
    arch = {
        "name": "cut",
        "clock_mhz": 1000,
        "pe_array": {"dims": {"X": 4}, "pipeline_depth_cycles": reg.pop("pipeline", 0)},
        "memories": [
            memory("DRAM", None, None, [port("rd", "read", dram_rd), port("wr", "write", dram_wr)]),
            memory(
                "reg", None, None, [port("rd", "read", reg_width), port("wr", "write", reg_width)],
                shared_across=[], **reg,
            ),
        ],
    }  # fmt: skip
    arch["memories"][0]["dram"] = HBM
    workload = {
        "tensors": {
            "A": {"bits_per_value": bits[0]},
            "B": {"bits_per_value": bits[0]},
            "Z": {"bits_per_value": 8, "partial_sum_bits": bits[1]},
        },
        "einsums": [gemm_einsum(*ranks)],
    }
    tree = [{"type": "storage", "memory": "DRAM", "tensors": ["A", "B", "Z"]}, *tree, COMPUTE]
    return arch, workload, {"loop_tree": tree}


COMPUTE = {"type": "compute", "einsum": "gemm"}


def temporal(rank: str, bound: int) -> dict:
    return {"type": "temporal", "rank": rank, "bound": bound}


def test_a_write_back_cuts_a_fill_issued_ahead_and_keeps_its_request(monkeypatch):
    # m = 2, n = 1, k = 2, 8 bits, every port 8 b/cycle; reg holds A[m, 0..1] and Z[m] per m,
    # the PE array reads B from the DRAM directly (port-timed). Tile 0: A's fill (bytes 0-1,
    # request 0) is a run of 2 bursts issued ahead at 0: activate bank 0 at 0, read at 14, bus
    # slot to 16 (run end), data at 28 + 2 = 30. At 33 tile 1's fill (bytes 2-3: request 0
    # again, row open) is issued ahead: read at 33, slot to 35; at the same cycle Z's first
    # write-back (request 64, bank 2) issues on the write port: it cuts A's run after the burst
    # in progress (burst 0, [33, 34)), which keeps request 0 (the same read at 33), then Z
    # waits for the bus (contention with A's read until 35), opens bank 2 at 35, writes at 49,
    # slot to 51, data written at 49 + 4 + 2 = 55. A's burst 1 goes on in request 0 (no new
    # request). Z's second write-back (request 64 again: bank 2's open row) writes at 58,
    # slot to 60, written at 64.
    cuts = []
    cut = dram_port.IssuedRun.cut

    def recording(run, now):  # the cuts that roll the DRAM back (the port's then reuses it)
        if run.saved is not None and run.kept is None:
            cuts.append((run.who, now, run.i, run.j))
        return cut(run, now)

    monkeypatch.setattr(dram_port.IssuedRun, "cut", recording)
    tree = [
        temporal("m", 2),
        {"type": "storage", "memory": "reg", "tensors": ["A", "Z"]},
        temporal("k", 2),
    ]
    res, moved = replay_counting(
        *inputs_from_dicts(*tiled_gemm((8, 8, 8), (8, 8), (2, 1, 2), tree))
    )
    assert_every_request_counted(res, moved)
    assert res.raw.rec.dram_counts["DRAM"] == dict(requests=4, row_hits=2, activates=2, refreshes=0)
    assert [(now, i, j) for _, now, i, j in cuts] == [(33, 0, 2)]  # A's fill, its 2 bursts
    s = res.stall_spans
    assert [(r.start, r.end, r.cause) for r in s[s.phase == "onload"].itertuples()] == [
        (0, 14, "row_miss"),
        (14, 16, "bandwidth"),
        (16, 30, "latency"),
    ]
    assert [(r.start, r.end, r.cause) for r in s[s.phase == "offload"].itertuples()] == [
        (58, 60, "bandwidth"),
        (60, 64, "latency"),
    ]
    assert res.cycles == 64


CUT_WHILE_WRITING = tiled_gemm(
    (16, 8, 8),
    (16, 8),
    (2, 2, 3),
    [
        temporal("n", 2),
        {"type": "spatial", "rank": "m", "bound": 2, "dim": "X"},
        {"type": "storage", "memory": "reg", "tensors": ["B", "Z"]},
        temporal("k", 3),
        {"type": "storage", "memory": "reg", "tensors": ["A"]},
    ],
    double_buffered=True,
    pipeline=3,
)


def test_a_cut_fill_keeps_the_write_back_issued_meanwhile():
    # m = 2, n = 2, k = 3; A and B 16 bits, Z 8 (partial sums too); DRAM ports 16 b (read) and
    # 8 b (write), reg 8 b and double-buffered; the PE array (4 wide, pipeline 3) holds m = 2
    # spatially, reg B[0..2, n] and Z[0..1, n] per n, A[0..1, k] per k. A DMA engine issues a
    # line's requests (a line shorter than a request is one request):
    #   B at 2048, row-major [k, n]: a fill is 3 lines of 2 B at a 4 B stride, 2 fills: 6
    #   A at 0, [m, k]: 2 lines of 2 B at a 6 B stride per (n, k), 6 fills: 12
    #   Z at 4096, [m, n]: 2 lines of 1 B at a 2 B stride per n, 2 write-backs: 4
    # 22 requests, in 3 rows of 3 banks (3 activates). On main the timer counted 10: A's fill
    # issued ahead at 63 was cut by the PE array's share of its port after Z's first write-back
    # had issued its 2 requests, and the rollback erased them (and a line beginning in the
    # request the previous burst ended in was not issued).
    res, moved = replay_counting(*inputs_from_dicts(*CUT_WHILE_WRITING), reuse="retain")
    assert moved == {"DRAM": 6 + 12 + 4}
    assert_every_request_counted(res, moved)
    assert res.raw.rec.dram_counts["DRAM"]["activates"] == 3


def test_the_cli_reports_every_request_of_a_cut_run(tmp_path, capsys):
    # the case above as a user runs it: `cyclesim run ... --json`, progress bar on
    names = ("arch.yaml", "workload.yaml", "mapping.yaml")
    for name, doc in zip(names, CUT_WHILE_WRITING, strict=True):
        (tmp_path / name).write_text(yaml.safe_dump(doc))
    assert main(["run", *(str(tmp_path / n) for n in names), "--json"]) == 0
    dram = json.loads(capsys.readouterr().out)["dram"]
    assert [(d["memory"], d["requests"], d["activates"]) for d in dram] == [("DRAM", 22, 3)]
