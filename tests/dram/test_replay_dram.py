"""The replay with a DRAM model behind a memory: hand-derived runs, causes, properties."""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from replay_helpers import arch_with_dram, inputs_from_dicts, memory, port  # noqa: E402
from test_replay_properties import schedules  # noqa: E402

from cyclesim.analysis.simulate import replay  # noqa: E402
from cyclesim.spec import Direction  # noqa: E402

# HBM2 (preset HBM2_8Gb_x128) on one channel at tCK = 1 ns with a 1000 MHz accelerator: one
# accelerator cycle per DRAM cycle. tRCDRD = tRCDWR = 14, CL = 14, CWL = 4, a burst 2 cycles,
# tCCD_L = 2. Mapping rorabgbachco: 64 B requests, 32 to a 2 KiB row, then bank, bank group.
HBM = {"config": "HBM2_8Gb_x128", "channels": 1}


def gemv(dram: dict | None, placements: dict | None = None):
    """Z[m] += A[m,k] * B[k], m = 1, k = 64, 8 bits: A and B are one 64 B request each."""
    block = dict(dram, placements=placements or {}) if dram is not None else None
    dram_mem = memory("DRAM", None, None, [port("rd", "read", 512), port("wr", "write", 512)])
    if block is not None:
        dram_mem["dram"] = block
    arch = {
        "name": "gemv",
        "clock_mhz": 1000,
        "pe_array": {"dims": {"X": 1}},
        "memories": [
            dram_mem,
            memory("buf", None, None, [port("rd", "read", 512), port("wr", "write", 512)]),
        ],
    }
    workload = {
        "tensors": {n: {"bits_per_value": 8} for n in "ABZ"},
        "einsums": [
            {
                "name": "gemv",
                "ranks": {"m": 1, "k": 64},
                "inputs": [
                    {"tensor": "A", "projection": ["m", "k"]},
                    {"tensor": "B", "projection": ["k"]},
                ],
                "outputs": [{"tensor": "Z", "projection": ["m"]}],
            }
        ],
    }
    mapping = {
        "loop_tree": [
            {"type": "storage", "memory": "DRAM", "tensors": ["A", "B", "Z"]},
            {"type": "storage", "memory": "buf", "tensors": ["A", "B", "Z"]},
            {"type": "temporal", "rank": "k", "bound": 64},
            {"type": "compute", "einsum": "gemv"},
        ]
    }
    return inputs_from_dicts(arch, workload, mapping)


def spans(result, phase):
    s = result.stall_spans
    s = s[s.phase == phase].sort_values("start")
    return [(r.start, r.end, r.cause, r.tensor) for r in s.itertuples()]


def test_bandwidth_only_is_unchanged_by_the_new_code():
    # without `dram:` a 512 b/cycle port moves each 64 B operand in one cycle: A 0..1, B 1..2
    res = replay(*gemv(None), progress=False)
    assert res.onload_cycles == 2 and res.cycles == 2 + 64 + 1


def test_a_gemv_with_its_operands_in_closed_rows():
    # A at 0 (bank 0), B at the next row boundary 2048 (bank 1), Z at 4096 (bank 2).
    # A's fill has the port at 0: activate 0, read at 14 (tRCDRD), bus slot to 16: the run
    # ends at 16; its data arrive at 14 + CL 14 + 2 = 30. B waits for the port (contention)
    # until 16, then: activate 16 (bank 1 idle), read at 30, slot to 32, data at 46.
    # The PE array waits for B (ready last): onload 0..16 contention, 16..30 row_miss, 30..32
    # bandwidth, 32..46 latency. 64 MACs 46..110. Z's write-back (1 B): activate bank 2 at
    # 110, write at 124 (tRCDWR), slot to 126, data written at 124 + CWL 4 + 2 = 130.
    res = replay(*gemv(HBM), progress=False)
    assert spans(res, "onload") == [
        (0, 16, "contention", "B"),
        (16, 30, "row_miss", "B"),
        (30, 32, "bandwidth", "B"),
        (32, 46, "latency", "B"),
    ]
    assert spans(res, "offload") == [
        (110, 124, "row_miss", "Z"),
        (124, 126, "bandwidth", "Z"),
        (126, 130, "latency", "Z"),
    ]
    assert res.cycles == 130


def test_the_report_gives_the_dram_timers_counts():
    # the gemv above: A, B and Z one request each, each in a closed row of its own bank (three
    # activates, no row hit); 130 cycles are far from the first refresh (tREFI 3900)
    from cyclesim.report import text_report

    res = replay(*gemv(HBM), progress=False)
    assert res.dram_summary == [
        dict(memory="DRAM", config="HBM2_8Gb_x128", timing="timer", requests=3, row_hits=0,
             activates=3, refreshes=0, row_hit_rate=0.0)
    ]  # fmt: skip
    assert res.to_json_dict()["dram"] == res.dram_summary
    assert (
        "DRAM as HBM2_8Gb_x128: 3 requests, row hits 0 (0.0%), 3 activates, 0 refreshes\n"
        "  timing: closed-form timer (fast; read/write mixes may be off several-fold: "
        "`timing: controller` is exact)" in text_report(res)
    )
    assert "dram" not in replay(*gemv(None), progress=False).to_json_dict()


def test_two_operands_on_one_bank_conflict():
    # B placed one bank-row further than A in the same bank (16 banks x 2 KiB = 32 KiB): A as
    # above (read at 14, bank 0 row 0 open). B at 16: row 1 of bank 0; row 0 closes at
    # max(tRAS 34, 14 + tRTP 5) = 34, row 1 opens at 34 + tRP 14 = 48, reads at 62, slot to
    # 64, data at 78: 16..62 is a bank_conflict with A's fill.
    res = replay(*gemv(HBM, {"B": {"base": 32 << 10}, "Z": {"base": 4096}}), progress=False)
    onload = spans(res, "onload")
    assert onload[:3] == [
        (0, 16, "contention", "B"),
        (16, 62, "bank_conflict", "B"),
        (62, 64, "bandwidth", "B"),
    ]
    s = res.stall_spans
    conflict = s[s.cause == "bank_conflict"].iloc[0]
    assert conflict.competitor == "fill of A@buf"
    # the bank named as the traces name its track: memory, channel, bank group, bank
    assert (
        "bank conflict at DRAM ch0 bg0 bank0 row 1: row opened by fill of A@buf" in conflict.chain
    )


DRAM_ON = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@DRAM_ON
@given(
    schedules(),
    st.sampled_from(["DDR4_8Gb_x8_2400", "HBM2_8Gb_x128"]),
    st.sampled_from([100, 700, 2000]),
    st.sampled_from(["rochrababgco", "rorabgbachco"]),
)
def test_causes_add_up_with_dram_on(case, config, clock_mhz, address_mapping):
    """Random small GEMM schedules with DDR4 or HBM2 behind the DRAM, slow or fast against the
    accelerator's clock: the run's own checks hold (counts equal the closed form, each phase's
    causes add up to its total), and no port moves more bits than its width allows."""
    arch, workload, mapping, reuse, fanout = case
    arch = arch_with_dram(arch, {"config": config, "address_mapping": address_mapping}, clock_mhz)
    a, w, m = inputs_from_dicts(arch, workload, mapping)
    res = replay(a, w, m, reuse=reuse, progress=False)
    total = res.onload_cycles + res.ideal_compute_cycles + res.stall_cycles + res.offload_cycles
    assert total == res.cycles
    by_phase = res.stall_spans.groupby("phase").cycles.sum().to_dict()
    assert by_phase.get("onload", 0) == res.onload_cycles
    assert by_phase.get("offload", 0) == res.offload_cycles
    busy: dict[tuple[str, str], int] = {}
    for r in res.detailed_accesses.itertuples():
        p = a.memory(r.memory).port_for(r.tensor, Direction(r.direction))
        instances = fanout if r.memory == "reg" else 1
        busy[(r.memory, p.name)] = busy.get((r.memory, p.name), 0) + r.bits // instances
    for (mem, name), bits in busy.items():
        width = next(p.width_bits for p in a.memory(mem).ports if p.name == name)
        assert res.cycles >= -(-bits // width), f"{mem}.{name} moves {bits} b at {width} b/cycle"


def test_explain_replays_dram_remedies():
    # the bank conflict of B with A (above): moving B a row further puts it in bank 1, where
    # nothing is open: B's read goes at 16 + 14 = 30 as in the closed-row case, 32 cycles
    # earlier (62 -> 30); every remedy is replayed
    from cyclesim.analysis.explain import explain

    a, w, m = gemv(HBM, {"B": {"base": 32 << 10}, "Z": {"base": 4096}})
    res = replay(a, w, m, progress=False)
    ex = explain(res, a, w, m, top=10)
    conflict = next(c for c in ex.causes if c.cause == "bank_conflict")
    remedies = {r.change: r for r in conflict.remedies}
    move = remedies["move B 2048 B further in DRAM (its rows to another bank)"]
    assert move.saved == 32
    mappings = [r for change, r in remedies.items() if change.startswith("address mapping")]
    # HBM2's own mapping is one of the three tried: the other two are replayed
    assert len(mappings) == 2 and all(r.cycles_after is not None for r in mappings)
    # B is one-dimensional (no other layout) and one loop sits above buf (no other tile order)
    assert not any(change.startswith(("lay B", "tile order")) for change in remedies)


def test_overlapping_placements_are_refused_naming_the_field():
    from cyclesim.errors import SpecError

    with __import__("pytest").raises(SpecError, match="placements of A and B overlap") as e:
        replay(*gemv(HBM, {"A": {"base": 0}, "B": {"base": 32}}), progress=False)
    assert e.value.field == "memories[0].dram.placements"


def test_a_placement_beyond_the_drams_last_byte_is_refused():
    # HBM2_8Gb_x128 on one channel: its capacity is channels x ranks x banks x rows x row bytes; A (1 x 64 values of 8 bits = 64 B) placed to end exactly at the last byte
    # fits, 32 B further it would wrap onto address 0 (B's rows) and is refused; B and Z sit at
    # the start (Z packed after A would wrap as well, and is refused so)
    from cyclesim.errors import SpecError

    arch, _, _ = gemv(HBM)
    c = arch.memory("DRAM").dram.config
    capacity = c.channels * c.ranks * c.banks * c.rows * c.row_bytes
    start = {"B": {"base": 0}, "Z": {"base": c.row_bytes}}
    replay(*gemv(HBM, {"A": {"base": capacity - 64}, **start}), progress=False)
    with __import__("pytest").raises(SpecError, match="ends beyond the DRAM's") as e:
        replay(*gemv(HBM, {"A": {"base": capacity - 32}, **start}), progress=False)
    assert e.value.field == "memories[0].dram.placements.A.base"
    with __import__("pytest").raises(SpecError, match="Z .1 bytes from .*, packed after") as e:
        replay(*gemv(HBM, {"A": {"base": capacity - 64}, "B": {"base": 0}}), progress=False)
    assert e.value.field == "memories[0].dram.placements"


def test_a_placement_may_give_only_the_order():
    # `placements: {A: {order: [k, m]}}` lays A out column-major at its packed base (0: the
    # first tensor), as README's "default: packed" says; it used to demand a base
    from cyclesim.schedule.addresses import memory_placements

    arch, workload, _ = gemv(HBM, {"A": {"order": ["k", "m"]}})
    placed = memory_placements(arch, workload, arch.memory("DRAM"))
    assert (placed["A"].base, placed["A"].order) == (0, (1, 0))
    assert placed["B"].base == arch.memory("DRAM").dram.config.row_bytes  # the next row


def test_the_resnet50_example_shows_the_dram_causes():
    # examples/resnet50_dram: the same layer with and without DDR4 behind tpu_like's DRAM; the
    # DRAM only adds cycles, and its refreshes and row misses are charged
    from replay_helpers import ROOT

    from cyclesim.spec import load_architecture, load_mapping, load_workload

    folder = ROOT / "examples" / "resnet50_dram"
    cycles = {}
    for arch_file in ("tpu_like.yaml", "tpu_like_ddr4.yaml"):
        a = load_architecture(str(ROOT / "hw_models" / arch_file))
        w = load_workload(str(folder / "workload.yaml"))
        res = replay(a, w, load_mapping(str(folder / "mapping.yaml"), a, w), progress=False)
        cycles[arch_file] = res.cycles
        causes = set(res.stall_spans.cause)
    assert cycles["tpu_like.yaml"] == 59_912  # folds timed as a systolic array (tpu_like.yaml)
    # the 3.2 MB of outputs stream through one channel at a time: DDR4 binds (it was more than
    # 3x before the timer paced row streams of two bank groups together as FR-FCFS does)
    assert cycles["tpu_like_ddr4.yaml"] > 2 * cycles["tpu_like.yaml"]
    assert {"refresh", "row_miss"} <= causes


INI = (
    "[dram_structure]\nprotocol = DDR4\nbankgroups = 4\nbanks_per_group = 4\nrows = 65536\n"
    "columns = 1024\ndevice_width = 8\nBL = 8\n\n[timing]\ntCK = {tck}\nAL = 0\nCL = 17\n"
    "CWL = 12\ntRCD = 17\ntRP = 17\ntRAS = 39\ntRFC = 420\ntREFI = 9360\ntRRD_S = 4\n"
    "tRRD_L = 6\ntWTR_S = 3\ntWTR_L = 9\ntFAW = 26\ntWR = 18\ntRTP = 9\ntCCD_S = 4\n"
    "tCCD_L = 6\ntRTRS = 1\n\n[system]\nchannel_size = 16384\nchannels = 1\n"
    "bus_width = 64\naddress_mapping = rochrababgco\n"
)


def test_a_dramsim3_ini_beside_the_architecture(tmp_path):
    # `config: ddr4.ini` is read relative to the architecture file; a fault in the .ini names
    # the .ini's file, key and line
    from cyclesim.errors import SpecError
    from cyclesim.spec import load_architecture

    (tmp_path / "ddr4.ini").write_text(INI.replace("{tck}", "1.0"))
    arch = tmp_path / "arch.yaml"
    arch.write_text(
        "name: a\nclock_mhz: 1000\npe_array: {dims: {X: 1}}\nmemories:\n"
        "  - name: DRAM\n    dram: {config: ddr4.ini}\n"
        "    ports: [{name: rw, kind: read_write, width_bits: 64}]\n"
    )
    config = load_architecture(str(arch)).memory("DRAM").dram.config
    assert config.name == "ddr4" and config.tck_ns == 1.0 and config.CL == 17
    (tmp_path / "ddr4.ini").write_text(INI.replace("{tck}", "fast"))
    with __import__("pytest").raises(SpecError, match="memory 'DRAM'") as e:
        load_architecture(str(arch))
    # tCK is line 11: 8 lines of [dram_structure], a blank line, [timing], tCK
    assert e.value.file.endswith("ddr4.ini") and e.value.field == "tCK" and e.value.line == 11
