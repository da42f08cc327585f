"""`cyclesim explain`: causes ranked, located, remedies verified; totals add up on random schedules."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, event, given, settings
from random_cases import schedules
from replay_helpers import ROOT, case_files, inputs_from_dicts, inputs_from_folder
from test_fused_properties import chains
from view_cases import CASES, load_case

from cyclesim.analysis.explain import explain, format_explanation, rank_causes
from cyclesim.analysis.explain.arch_changes import with_port
from cyclesim.analysis.simulate import replay
from cyclesim.cli import main
from cyclesim.spec.override import architecture_with_field
from cyclesim.vocabulary import Wait


def test_single_buffer_top_cause_and_its_verified_remedies(traced):
    arch, workload, mapping = load_case("03_single_buffer")
    ex = explain(traced("03_single_buffer"), arch, workload, mapping)
    top = ex.causes[0]
    assert (top.cause, top.tensor, top.memory, top.port_memory, top.port) == (
        "bandwidth",
        "A",
        "abuf",
        "DRAM",
        "dram_rd",
    )
    assert top.cycles == 32 and top.by_phase == {"onload": 8, "compute": 24}
    assert top.ranges == [(0, 8), (12, 20), (24, 32), (36, 44)]
    # the m loop walks acc's tiles (acc's storage node is the nearest above it)
    assert top.iterations == [
        "matvec acc: m=0",
        "matvec acc: m=1",
        "matvec acc: m=2",
        "matvec acc: m=3",
    ]
    saved = {r.change: r.saved for r in top.remedies}
    assert saved["widen port DRAM.dram_rd from 4 to 8 bits/cycle"] == 16  # 4 fills of 8 cycles -> 4
    assert (
        saved["double-buffer A in abuf and grow abuf from 32 to 64 bits"] == 12
    )  # fill overlaps compute
    assert sum(c.cycles for c in ex.causes) == ex.non_compute_cycles == 36


def test_spatial_stall_remedy_widens_to_the_operand_demand(traced):
    arch, workload, mapping = load_case("05_narrow_innermost_port")
    top = explain(traced("05_narrow_innermost_port"), arch, workload, mapping, top=1).causes[0]
    assert top.cause == "spatial" and top.cycles == 24
    assert [(r.change, r.saved) for r in top.remedies] == [
        ("widen port arf.arf_rd from 8 to 32 bits/cycle (the operand's demand per step)", 24)
    ]


def test_dma_remedies_are_replayed(traced):
    arch, workload, mapping = load_case("dma_two_tensors")
    ex = explain(traced("dma_two_tensors"), arch, workload, mapping, top=10)
    changes = {r.change: r.saved for c in ex.causes for r in c.remedies}
    assert changes["cut the setup of DMA engine dma0 from 2 to 0 cycles"] > 0
    assert "cut the latency of port DRAM.dram_rd from 3 to 0 cycles" in changes
    text = format_explanation(ex, "t", 10)
    assert "saves" in text and "delays: dot acc: m=0; dot acc: m=1" in text


def test_widening_a_port_widens_the_far_sides_burst_too(traced):
    """03's Z write-back: 32 bits from acc (burst 8) to DRAM.dram_wr (8 b/cycle), 4 bursts of
    1 cycle each: 4 offload cycles. A transfer moves bursts of the smaller of its two ports'
    bursts, so widening dram_wr to 16 b/cycle (burst 16) alone still moves 4 bursts of 8 bits,
    1 cycle each, and saved 0; with acc.acc_rd's burst at 16 too: 2 bursts, 1 cycle each,
    saves 2 (52 -> 50). The explanation had said 'saves 0 cycles' for this remedy.
    Each burst takes 1 cycle on either port, a tie, so the write-back's cycles name acc.acc_rd,
    the port the data leaves (DESIGN "Naming a stalled transfer's port"), and the remedy widens
    that port together with the far side."""
    arch, workload, mapping = load_case("03_single_buffer")
    ex = explain(traced("03_single_buffer"), arch, workload, mapping, top=2, workers=1)
    (z,) = [c for c in ex.causes if c.tensor == "Z"]
    widen = {r.change: r.saved for r in z.remedies if r.change.startswith("widen")}
    assert widen == {
        "widen ports acc.acc_rd and DRAM.dram_wr together from 64 and 8 to 128 and 16 "
        "bits/cycle, bursts 8 and 8 -> 16 and 16 bits (each burst holds both ports for the "
        "slower side's cycles; acc.acc_rd alone: 8 b/cycle per acc instance, as now)": 2
    }


def test_a_remedy_that_saves_little_says_what_grew_most(traced):
    """Where the cycles went: the place that gained most over the run before the change. On
    the Eyeriss memory-size case, widening I's 8-bit port removes 100,000 spatial cycles at
    I@rf_64B_I but saves 1,700: 'grew most: spatial at O@rf_16B, port rf_16B.r_port_1
    (+50,000)'. Here 03's places (A: 32 cycles at DRAM.dram_rd, Z: 4 at acc.acc_rd) against
    hand-made 'before' runs. (Z's write-back bursts tie, 1 cycle on either port: its cycles
    name acc.acc_rd, the port the data leaves, DESIGN "Naming a stalled transfer's port".)"""
    from cyclesim.analysis.explain.replays import cycles_by_place, grew_most

    ranked = rank_causes(traced("03_single_buffer")).causes
    a, z = "bandwidth at A@abuf, port DRAM.dram_rd", "bandwidth at Z@acc, port acc.acc_rd"
    assert cycles_by_place(ranked) == {a: 32, z: 4}
    assert grew_most(ranked, {}) == f"{a} (+32)"
    assert grew_most(ranked, {a: 30}) == f"{z} (+4)"  # A gained 2, Z (absent before) 4
    assert grew_most(ranked, {a: 32, z: 4}) == grew_most(ranked, {a: 40, z: 9}) == ""


def test_a_latency_paid_at_both_ends_of_a_transfer_is_cut_at_both():
    """03 with a latency of 3 on both DRAM.dram_rd and abuf.abuf_wr: each of A's 4 fills waits
    max(3, 3) = 3 cycles once, charged to the parent's port: 4 x 3 = 12 latency cycles, 52 + 12
    = 64 in all. Cutting only DRAM.dram_rd leaves max(0, 3) = 3 per fill and saves nothing
    (explain on the Eyeriss memory-size case said "saves 0 cycles" for 59,961 latency cycles);
    cutting both gives back the 52 cycles of 03: saves 12."""
    from dataclasses import replace

    arch, workload, mapping = load_case("03_single_buffer")

    def slow(memory, port):
        return tuple(replace(p, latency_cycles=3) if p.name == port else p for p in memory.ports)

    memories = tuple(
        replace(m, ports=slow(m, {"DRAM": "dram_rd", "abuf": "abuf_wr"}.get(m.name)))
        for m in arch.memories
    )
    arch = replace(arch, memories=memories)
    res = replay(arch, workload, mapping, progress=False)
    assert res.cycles == 64
    ex = explain(res, arch, workload, mapping, top=10, workers=1)
    (latency,) = [c for c in ex.causes if c.cause == "latency" and c.tensor == "A"]
    assert (latency.port_memory, latency.port, latency.cycles) == ("DRAM", "dram_rd", 12)
    assert [(r.change, r.saved) for r in latency.remedies if "latency" in r.change] == [
        (
            "cut the latency of ports DRAM.dram_rd and abuf.abuf_wr from 3 and 3 to 0 cycles "
            "(a transfer waits the larger of its two ports' latencies)",
            12,
        )
    ]


def test_a_transfer_as_narrow_at_both_ends_is_widened_at_both():
    """03 with abuf.abuf_wr as narrow as DRAM.dram_rd (4 b/cycle, bursts of 8): each 8-bit
    burst of A's fills holds both ports 8 / 4 = 2 cycles, a tie charged to the parent's port,
    so the run is 03's 52 cycles. Widening dram_rd alone (8 b/cycle, burst 8) leaves abuf_wr's
    2 cycles per burst: 4 b/cycle, saves 0 (explain said "saves 0" for two such causes on the
    Eyeriss memory-size case). Widening both, with bursts of 16: 16 / 8 = 2 cycles per burst
    on each side, 8 b/cycle, each fill 32 / 8 = 4 cycles instead of 8: saves 4 x 4 = 16."""
    from dataclasses import replace

    arch, workload, mapping = load_case("03_single_buffer")
    abuf = arch.memory("abuf")
    ports = tuple(replace(p, width_bits=4) if p.name == "abuf_wr" else p for p in abuf.ports)
    arch = replace(
        arch, memories=tuple(replace(m, ports=ports) if m is abuf else m for m in arch.memories)
    )
    res = replay(arch, workload, mapping, trace=True, progress=False)
    assert res.cycles == 52
    ex = explain(res, arch, workload, mapping, top=1, workers=1)
    top = ex.causes[0]
    assert (top.cause, top.tensor, top.port_memory, top.port) == (
        "bandwidth",
        "A",
        "DRAM",
        "dram_rd",
    )
    assert [(r.change, r.saved) for r in top.remedies if r.change.startswith("widen")] == [
        (
            "widen ports DRAM.dram_rd and abuf.abuf_wr together from 4 and 4 to 8 and 8 "
            "bits/cycle, bursts 8 and 8 -> 16 and 16 bits (each burst holds both ports for the "
            "slower side's cycles; DRAM.dram_rd alone: 4 b/cycle per abuf instance, as now)",
            16,
        )
    ]


def test_a_tensor_contending_at_both_ends_gets_its_own_ports_at_both():
    """tpu_gemm: A and B (1024 x 1024 x 8 b = 8,388,608 b each) fill UB from DRAM through
    DRAM.rd and UB.wr, both 512 b/cycle and both shared: B waits 8,388,608 / 512 = 16,384
    cycles behind A's fill (contention in the onload). Splitting B off DRAM.rd alone left
    UB.wr shared, where A's fill still went first: 'saves 0'. With its own port at both ends
    the two fills run side by side: saves the 16,384."""
    from cyclesim.spec import load_architecture, load_mapping, load_workload

    arch = load_architecture(str(ROOT / "hw_models/tpu_like.yaml"))
    workload = load_workload(str(ROOT / "examples/tpu_gemm/workload.yaml"))
    mapping = load_mapping(str(ROOT / "examples/tpu_gemm/mapping.yaml"), arch, workload)
    res = replay(arch, workload, mapping, trace=True, progress=False)
    ex = explain(res, arch, workload, mapping, top=4, workers=1, progress=False)
    (contention,) = [c for c in ex.causes if c.cause == "contention" and c.tensor == "B"]
    assert contention.cycles == 16_384
    own = [(r.change, r.saved) for r in contention.remedies if r.change.startswith("give")]
    assert own == [("give B its own ports at DRAM and UB (split from rd and wr)", 16_384)]


@pytest.mark.slow
def test_memsize_bandwidth_causes_at_two_narrow_ends_get_remedies_that_save():
    """The Eyeriss memory-size case (README: `cyclesim explain` on mapping_small): W's fills
    into the 16 rf_64B_W move 16 x 8 bits per cycle out of sram_64KB's 128-bit port and 8 into
    each rf_64B_W, so widening sram_64KB.r_port_1 alone saved 0 of W's 500 bandwidth cycles;
    likewise O between sram_8KB (128) and the 16 rf_16B (24 each, 4 positions reduced).
    Widening both ends now saves cycles in both. O's write-back bursts tie (1 cycle on either
    port), so its cycles name rf_16B.rw_port_1, the port the data leaves (DESIGN "Naming a
    stalled transfer's port"), and the far end is sram_8KB.rw_port_2."""
    from cyclesim.analysis.explain import candidates, verify
    from cyclesim.analysis.explain.transfer import transfer_ends
    from cyclesim.spec import load_architecture, load_mapping, load_workload

    arch = load_architecture(str(ROOT / "hw_models/eyeriss_like_small.yaml"))
    workload = load_workload(str(ROOT / "examples/eyeriss_memsize/workload.yaml"))
    mapping = load_mapping(
        str(ROOT / "examples/eyeriss_memsize/mapping_small.yaml"), arch, workload
    )
    res = replay(arch, workload, mapping, trace=True, progress=False)
    causes = {(c.cause, c.tensor, c.memory): c for c in rank_causes(res, mapping).causes}
    for key, port in [
        (("bandwidth", "W", "rf_64B_W"), "rf_64B_W.w_port_1"),
        (("bandwidth", "O", "rf_16B"), "sram_8KB.rw_port_2"),
    ]:
        c = causes[key]
        (change, changed), *_ = [
            x for x in candidates(c, arch, workload, 0, transfer_ends(res, c)) if "widen" in x[0]
        ]
        assert change.startswith(f"widen ports {c.port_memory}.{c.port} and {port} together")
        assert verify(arch, workload, mapping, res, change, changed).saved > 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schedules())
def test_root_causes_add_up_to_the_stall_totals_on_random_schedules(spec):
    res = replay(*spec, trace=True, progress=False)
    by_phase = {"onload": 0, "compute": 0, "offload": 0}
    for s in res.spans:
        assert s.chain and s.cause
        by_phase[s.phase] += s.cycles
    assert by_phase == {
        "onload": res.onload_cycles,
        "compute": res.stall_cycles,
        "offload": res.offload_cycles,
    }
    ex = rank_causes(res, spec[2])
    assert sum(c.cycles for c in ex.causes) == res.cycles - res.ideal_compute_cycles


@pytest.mark.parametrize("case", sorted(CASES))
def test_explain_cli_json_ranks_by_cycles(case, capsys):
    d = CASES[case]
    assert (
        main(
            [
                "explain",
                str(d / "arch.yaml"),
                str(d / "workload.yaml"),
                str(d / "mapping.yaml"),
                "--json",
                "--top",
                "2",
            ]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    cycles = [c["cycles"] for c in doc["causes"]]
    assert cycles == sorted(cycles, reverse=True) and sum(cycles) == doc["non_compute_cycles"]
    assert all(0 <= c["share"] <= 1 for c in doc["causes"])


def test_explain_a_saved_run(tmp_path, capsys):
    d = CASES["03_single_buffer"]
    files = case_files(d)
    assert main(["run", *files, "--save-run", str(tmp_path / "run.json")]) == 0
    capsys.readouterr()
    assert main(["explain", str(tmp_path / "run.json"), "-", "-"]) == 0
    out = capsys.readouterr().out
    assert "1. bandwidth" in out and "saves 16" in out
    doc = json.loads((tmp_path / "run.json").read_text())
    doc["cycles"] = 51
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    assert main(["explain", str(tmp_path / "bad.json"), "-", "-"]) == 2
    assert "saved run had 51 cycles" in capsys.readouterr().err
    doc["cycles"] = 12345  # with thousands separators, as everywhere else
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    assert main(["explain", str(tmp_path / "bad.json"), "-", "-"]) == 2
    err = capsys.readouterr().err
    assert "had 12,345 cycles" in err and len(err.strip().splitlines()) == 1, err


def test_no_verify_lists_the_remedies_not_replayed(capsys):
    """--no-verify said 'no architectural change proposed' under causes that have remedies."""
    files = case_files(CASES["03_single_buffer"])
    assert main(["explain", *files, "--no-verify", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "no architectural change proposed" not in out and "saves" not in out
    listed = re.findall(r"^   - (.*): not replayed \(--no-verify\)$", out, re.M)
    assert "widen port DRAM.dram_rd from 4 to 8 bits/cycle" in listed
    assert main(["explain", *files, "--json", "--no-progress"]) == 0
    verified = json.loads(capsys.readouterr().out)["causes"][0]["remedies"]
    # the same changes (a fallback, replayed where its first choice does not fit, extends it)
    assert all(any(r["change"].startswith(x) for x in listed) for r in verified)
    assert len(verified) == len(re.split(r"^2\. ", out, flags=re.M)[0].split(": not replayed")) - 1


def test_a_long_list_of_cycle_ranges_counts_them_with_thousands_separators(capsys):
    """'... (16384 in all)' beside numbers written 16,384 everywhere else."""
    files = [str(ROOT / "hw_models" / "tpu_like.yaml")] + [
        str(ROOT / "examples" / "tpu_gemm" / f"{p}.yaml") for p in ("workload", "mapping")
    ]
    assert main(["explain", *files, "--no-verify", "--top", "3", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "... (16,384 in all)" in out and "(16384 in all)" not in out


def test_explain_refuses_what_is_not_a_saved_run(tmp_path, capsys):
    (tmp_path / "x.json").write_text("{}")
    assert main(["explain", str(tmp_path / "x.json"), "-", "-"]) == 2
    assert "not a saved run" in capsys.readouterr().err


def test_a_remedy_that_saves_little_names_what_binds_after(traced):
    """03 with A double-buffered in abuf (grown to 64 bits): fill i+1 overlaps compute i.

    Fills take 32 / 4 = 8 cycles, compute 4: onload 8, then three waits of 8 - 4 = 4 cycles,
    then Z's 32 bits leave at 8 b/cycle in 4 cycles: 8 + 16 + 4 + 12 = 40 cycles, saving 12 of
    the cause's 32 (less than half). What binds then is bandwidth: 24 cycles, 20 of them A's
    fills through DRAM.dram_rd (8 + 12) and 4 Z's write-back.
    """
    arch, workload, mapping = load_case("03_single_buffer")
    ex = explain(traced("03_single_buffer"), arch, workload, mapping, top=1, progress=True)
    (db,) = [r for r in ex.causes[0].remedies if r.change.startswith("double-buffer A")]
    assert (db.cycles_after, db.saved) == (40, 12)
    assert db.binds_after == (
        "bandwidth (24 cycles, 60.0% of the run; most at A@abuf, port DRAM.dram_rd: 20)"
    )
    text = format_explanation(ex, "t", 1)
    assert "saves 12 cycles (52 -> 40, 23.1%)\n     saves little: then bandwidth (24 cycles" in text


def test_only_remedies_that_save_cycles_are_listed(traced):
    """A replayed change can save nothing or make the run longer (explain on resnet50_dram
    printed 'saves -298,742 cycles' for a loop swap, and 'saves 0 cycles' elsewhere): the text
    lists only what saves cycles and counts the rest in one line; --json keeps every one."""
    from cyclesim.analysis.explain import Remedy

    arch, workload, mapping = load_case("03_single_buffer")
    ex = explain(traced("03_single_buffer"), arch, workload, mapping, top=1, verify_remedies=False)
    ex.causes[0].remedies = [
        Remedy("widen a port", 52, 40),
        Remedy("swap two loops", 52, 60, binds_after="bandwidth (40 cycles)"),
        Remedy("grow a memory", 52, 52),
    ]
    text = format_explanation(ex, "t", 1)
    assert "   - widen a port: saves 12 cycles (52 -> 40, 23.1%)\n" in text
    assert "swap two loops" not in text and "grow a memory" not in text
    assert (
        "   (2 other changes replayed saved nothing, 1 made the run longer: --json lists them)"
        in text
    )
    assert "saves -" not in text and "saves 0" not in text
    cycles_after = [r["cycles_after"] for r in ex.to_json_dict()["causes"][0]["remedies"]]
    assert cycles_after == [40, 60, 52]


def test_remedies_replayed_in_workers_equal_the_serial_ones(traced):
    arch, workload, mapping = load_case("dma_two_tensors")
    res = traced("dma_two_tensors")
    serial = explain(res, arch, workload, mapping, top=10, workers=1, progress=False)
    parallel = explain(res, arch, workload, mapping, top=10, workers=2, progress=False)
    assert serial.to_json_dict() == parallel.to_json_dict()
    assert any(r.binds_after for c in parallel.causes for r in c.remedies)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schedules())
def test_a_widen_remedy_at_least_doubles_its_transfers_rate_on_random_schedules(spec):
    """What 'widen' promises, checked with the engine's burst timing on random ports (widths
    2..64, bursts 4..32): the changed ends move at least twice the bits per cycle of a full
    burst: widening one port when that does it, else both ends and both bursts x2 (each burst
    then takes the cycles it took with twice the bits)."""
    from cyclesim.analysis.explain import candidates
    from cyclesim.analysis.explain.transfer import transfer_ends

    arch, workload, mapping = spec
    res = replay(arch, workload, mapping, trace=True, progress=False)
    for c in rank_causes(res, mapping).causes:
        ends = transfer_ends(res, c)
        if c.cause not in ("bandwidth", "contention") or ends is None:
            continue
        (change, changed), *_ = [
            x for x in candidates(c, arch, workload, 0, ends) if "widen" in x[0]
        ]

        near, far = (_as_changed(ref, changed) for ref in (ends.near, ends.far))
        assert ends.rate(near, far) >= 2 * ends.rate(ends.near, ends.far), change
        event("widened both ends" if change.startswith("widen ports") else "widened one port")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schedules())
def test_a_full_buffer_held_by_a_write_back_gets_that_write_back_widened_on_random_schedules(
    spec,
):
    """A buffer_full cause of a node that writes its tiles back (a slot frees only when its
    write-back ends) gets a widen of that write-back, which at least doubles its rate, as
    'widen' promises a bandwidth cause; a node that writes nothing back gets none."""
    from cyclesim.analysis.explain import candidates
    from cyclesim.analysis.explain.transfer import write_back_ends

    arch, workload, mapping = spec
    res = replay(arch, workload, mapping, trace=True, progress=False)
    for c in rank_causes(res, mapping).causes:
        if c.cause != "buffer_full":
            continue
        ends = write_back_ends(res, c)
        widened = [x for x in candidates(c, arch, workload, 0, None, ends) if "widen" in x[0]]
        if ends is None:
            assert not widened
            event("buffer_full without a write-back")
            continue
        (change, changed), *_ = widened
        near, far = (_as_changed(ref, changed) for ref in (ends.near, ends.far))
        assert ends.rate(near, far) >= 2 * ends.rate(ends.near, ends.far), change
        event("buffer_full held by a write-back")


def _as_changed(ref, arch):
    """A PortRef with the width and burst its port has in `arch`."""
    from dataclasses import replace

    port = next(p for p in arch.memory(ref.memory).ports if p.name == ref.name)
    return replace(ref, width_bits=port.width_bits, burst_bits=port.burst_bits)


def test_a_full_buffer_held_by_a_narrow_write_back_is_remedied_by_widening_it(traced):
    """slow_write_back: Z[m] = sum_k A[m,k] B[k], m = 4 tiles of one 8-bit Z value in acc (2
    slots), k = 4 one-cycle MACs per tile; Z's write-back to DRAM moves 1 b/cycle (dram_wr), so
    8 cycles per tile. Onload: A (128 b) and B (32 b) share dram_rd, one cycle each: 2 cycles.
    Tiles compute at 2..6 and 6..10, written back 6..14 and 14..22 (one port, in turn); tile 2
    needs tile 0's slot, free at 14: waits 10..14, computes 14..18, written back 22..30; tile 3
    needs tile 1's slot, free at 22: waits 18..22, computes 22..26, written back 30..38. So 38
    cycles, 8 of them buffer_full (the 12 after the last MAC are the write-back's bandwidth).
    At 2 b/cycle a write-back takes 4: tiles at 2..6, 6..10, 10..14, 14..18 (slots free at 10
    and 14), write-backs 6..10, 10..14, 14..18, 18..22: 22 cycles, saves 16 and no buffer_full.
    The buffer_full cause carries that remedy, not only the write-back's bandwidth cause."""
    arch, workload, mapping = load_case("slow_write_back")
    res = traced("slow_write_back")
    assert res.cycles == 38
    ex = explain(res, arch, workload, mapping, workers=1)
    (full,) = [c for c in ex.causes if c.cause == "buffer_full"]
    assert (full.memory, full.tensor, full.cycles, full.ranges) == (
        "acc",
        "Z",
        8,
        [(10, 14), (18, 22)],
    )
    assert [(r.change, r.saved) for r in full.remedies] == [
        ("widen port DRAM.dram_wr from 1 to 2 bits/cycle", 16)
    ]
    assert full.held_by.startswith(
        "the write-back of Z from acc to DRAM (acc.acc_rd -> DRAM.dram_wr, 1 b/cycle per acc "
        "instance, DRAM.dram_wr binds)"
    )
    widened = replay(
        with_port(arch, "DRAM", "dram_wr", width_bits=2), workload, mapping, progress=False
    )
    assert widened.cycles == 22 and not [s for s in widened.spans if s.cause == "buffer_full"]
    (doc,) = [c for c in ex.to_json_dict()["causes"] if c["cause"] == "buffer_full"]
    assert doc["held_by"] == full.held_by
    text = format_explanation(ex)
    assert "   held by: the write-back of Z from acc to DRAM" in text
    assert "no architectural change proposed" not in text


def test_a_slot_held_by_the_pe_arrays_pipeline_names_it_and_replays_its_remedies(capsys):
    """pipeline_holds_slot, as a user runs `cyclesim explain` (progress bar on): Z[m] = sum_k
    A[m,k] B[k], m = 4 tiles of one 8-bit Z value in acc (ONE slot), k = 4 one-cycle MACs per
    tile, a PE pipeline of 6 cycles, Z's write-back 1 cycle (8 b at 8 b/cycle). Onload 2 (A
    then B through dram_rd). Tile 0 computes 2..6; its last results land at 12 (pipeline
    6..12), its write-back runs 12..13 and frees the slot at 13. Tile 1 waits for that slot
    6..13, computes 13..17, lands 23, written back 23..24; tile 2 waits 17..24, 24..28, 34..35;
    tile 3 waits 28..35, computes 35..39, lands 45, written back 45..46. So 46 cycles, 21 of
    them buffer_full, 18 of which the write-back could not start because the PE array still
    held the tile's results (its pipeline), 3 the write-back itself.
    Remedies, each replayed: without the pipeline a tile's slot frees 1 cycle after its last
    MAC: 2 + 4 x 4 + 3 waits + 1 = 22 (saves 24). One more slot: tile 1 enters at once
    (6..10); a tile's results land 6 cycles after its last MAC, whatever the write-back is
    doing then, so tile 0 lands 12, written back 12..13; tile 1 lands 16, written back 16..17;
    tile 2 (computed 13..17 once tile 0's slot frees at 13) lands 23, 23..24; tile 3 (computed
    17..21 once tile 1's frees at 17) lands 27, 27..28: 28 cycles (saves 18; 34 when the
    write-back took a tile's pipeline delay only once it reached the tile, a bug). A wider
    write-back port saves nothing: it moves 1 cycle of 7.
    Before, `held by` named only the write-back, and its widening (0 saved) was all it offered
    beside the double buffer."""
    files = case_files(CASES["pipeline_holds_slot"])
    assert main(["explain", *files]) == 0
    out = capsys.readouterr().out
    assert "cycles 46: ideal compute 16, non-compute 30" in out
    first = out.split("\n1. ")[1].split("\n2. ")[0]
    assert first.startswith("buffer_full at Z@acc, vs an earlier tile of Z@acc: 21 cycles")
    assert "   cycles: 6..13, 17..24, 28..35" in first
    assert (
        "   held by: the PE array, for 18 of these 21 cycles: the tile's last results were "
        "still in its 6-cycle pipeline, so the write-back of Z from acc to DRAM (acc.acc_rd -> "
        "DRAM.dram_wr, 8 b/cycle per acc instance, DRAM.dram_wr binds) could not start; the "
        "write-back itself for 3; 1 slot of Z in acc"
    ) in first
    remedies = [line for line in first.splitlines() if line.startswith("   - ")]
    assert remedies[:2] == [
        "   - cut the PE array's pipeline from 6 to 0 cycles (its results land as they are "
        "computed, so a tile's write-back starts at once): saves 24 cycles (46 -> 22, 52.2%)",
        "   - double-buffer Z in acc: saves 18 cycles (46 -> 28, 39.1%)",
    ]
    # widening DRAM.dram_wr saves 0 cycles here: replayed, counted, not listed as a remedy
    assert len(remedies) == 2 and "(1 other change replayed saved nothing" in first
    # --json: the same words under held_by, the remedies with their cycles
    assert main(["explain", *files, "--json"]) == 0
    (doc,) = [c for c in json.loads(capsys.readouterr().out)["causes"] if c["cause"] == "buffer_full"]  # fmt: skip
    assert doc["held_by"].startswith("the PE array, for 18 of these 21 cycles")
    assert [(r["change"].split(" (")[0], r["cycles_after"]) for r in doc["remedies"]][:2] == [
        ("cut the PE array's pipeline from 6 to 0 cycles", 22),
        ("double-buffer Z in acc", 28),
    ]


def test_a_slot_is_held_by_the_pipeline_only_for_the_cycles_its_results_are_in_it():
    """tests/cases/pipelined_write_back with a 10-cycle pipeline (derived in
    tests/test_semantics.py::test_only_the_pipeline_cycles_left_are_waited_for): tile 2 waits
    10..24 for tile 0's slot; tile 0's results are in the pipeline until 16 (its write-back
    waits 6..16), then written back 16..24: 6 of the 14 cycles the PE array's, 8 the
    write-back's. Tile 3 waits 28..32 for tile 1's slot while tile 1 is written back 24..32
    (its results landed at 20, while tile 0 was written back: no pipeline cycle). So 6 of 18.
    Cutting the pipeline gives slow_write_back: 38 cycles (saves 16)."""
    a, w, m = inputs_from_folder(ROOT / "tests" / "cases" / "pipelined_write_back")
    a = architecture_with_field(a, "pe_array.pipeline_depth_cycles", 10)
    res = replay(a, w, m, progress=False, trace=True)
    ex = explain(res, a, w, m, workers=1)
    (full,) = [c for c in ex.causes if c.cause == "buffer_full"]
    assert (full.cycles, full.ranges) == (18, [(10, 24), (28, 32)])
    assert full.held_by.startswith(
        "the PE array, for 6 of these 18 cycles: the tile's last results were still in its "
        "10-cycle pipeline"
    )
    assert "; the write-back itself for 12;" in full.held_by
    assert (full.remedies[0].change.split(" (")[0], full.remedies[0].saved) == (
        "cut the PE array's pipeline from 10 to 0 cycles",
        16,
    )


def test_the_latency_of_results_still_in_the_pipeline_offers_the_pipeline_cut(tmp_path, capsys):
    """pipelined_write_back edited to a 10-cycle pipeline, as a user runs `cyclesim explain`
    (timeline as in the test above): tile 2 computes 24..28, tile 3 waits 28..32 and computes
    32..36, the last MAC. Tile 2's results are in the pipeline until 38, so from 36 to 38
    nothing can be written back: offload `latency ... <- PE pipeline depth`, 2 cycles; then
    tile 2's write-back 38..46 and tile 3's (landed 46) 46..54, bandwidth. Cutting the
    pipeline gives slow_write_back's 38 cycles: saves 16. It said "no architectural change
    proposed for this cause" (and pipeline_holds_slot's 6 such cycles offered only a second
    slot), though the pipeline is what the chain names."""
    case = ROOT / "tests" / "cases" / "pipelined_write_back"
    for name in ("workload.yaml", "mapping.yaml"):
        (tmp_path / name).write_text((case / name).read_text())
    arch = (case / "arch.yaml").read_text()
    assert "pipeline_depth_cycles: 3" in arch
    (tmp_path / "arch.yaml").write_text(arch.replace("depth_cycles: 3", "depth_cycles: 10"))
    assert main(["explain", *case_files(tmp_path)]) == 0
    out = capsys.readouterr().out
    (latency,) = [c for c in out.split("\n\n") if "latency at Z@acc" in c.split("\n", 1)[0]]
    assert latency.splitlines()[1:] == [
        "   chain:  run ends with the write-back of Z from acc <- write-back of Z at acc <- PE "
        "pipeline depth",
        "   cycles: 36..38",
        "   - cut the PE array's pipeline from 10 to 0 cycles (its results land as they are "
        "computed, so a tile's write-back starts at once): saves 16 cycles (54 -> 38, 29.6%)",
        # 16 saved against a cause of 2: the same cut lets every tile's write-back start sooner
        "     saves more than this cause's 2 cycles: it also shortens buffer_full at Z@acc, vs "
        "an earlier tile of Z@acc (-10); bandwidth at Z@acc, port DRAM.dram_wr (-4)",
    ]
    files = case_files(CASES["pipeline_holds_slot"])
    assert main(["explain", *files]) == 0
    (latency,) = [
        c
        for c in capsys.readouterr().out.split("\n\n")
        if "latency at Z@acc" in c.split("\n", 1)[0]
    ]
    assert "   - cut the PE array's pipeline from 6 to 0 cycles" in latency  # saves 24, as above


def test_one_cycle_is_one_cycle(capsys):
    """pipelined_write_back: B's fill waits 1 cycle for A's on dram_rd (0..1) and takes 1 more
    cycle of bandwidth (1..2); B's own ports save that 1 cycle (41 -> 40). It said "1 cycles"."""
    case = ROOT / "tests" / "cases" / "pipelined_write_back"
    assert main(["explain", *case_files(case)]) == 0
    out = capsys.readouterr().out
    assert "3. bandwidth at B@buf, port DRAM.dram_rd: 1 cycle (2.4% of the run; onload 1)" in out
    assert "(split from dram_rd and buf_wr): saves 1 cycle (41 -> 40, 2.4%)" in out
    assert not re.search(r"\b1 cycles", out) and "saves 13 cycles (41 -> 28, 31.7%)" in out


def _check_what_holds_full_buffers(arch, workload, mapping) -> None:
    """Every buffer_full cause on the PE array's path is held by a tile that is written back:
    its cycles split exactly into the PE array's pipeline and the write-back. Its readers never
    hold it there: the PE array takes tiles in loop order, so by the time it waits for a tile,
    every reader of the tiles before it (itself, a child's fill, a consumer's read) has
    finished; an input tile's slot is free before the PE array can wait on it (the fill that
    wanted it is then moving, and charged as such), and so is an output tile's write-back's
    wait for its users. explain proposes no reader's remedies for that reason."""
    from cyclesim.analysis.explain.transfer import slot_holding, timeline_states

    res = replay(arch, workload, mapping, trace=True, progress=False)
    for c in rank_causes(res, mapping).causes:
        if c.cause != "buffer_full":
            continue
        holding = slot_holding(res, c)
        assert holding is not None, c.where()
        assert holding.pipeline_cycles + holding.write_back_cycles == c.cycles
        event("held partly by the PE pipeline" if holding.pipeline_cycles else "held by a write-back")  # fmt: skip
    for span in res.spans:
        if span.cause == "buffer_full" and span.holder is not None:
            node = span.holder[0]
            assert res.raw.plan.nodes[node].drain_src is not None  # an output tile
            timeline = res.raw.rec.drain_tl[node]
            states = {state for _, _, state in timeline_states(timeline, span.start, span.end)}
            assert Wait.USES not in states


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schedules())
def test_what_holds_a_full_buffers_slot_adds_up_to_its_cycles_on_random_schedules(spec):
    _check_what_holds_full_buffers(*spec)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chains())
def test_a_consumers_reads_never_hold_a_producers_slot_on_random_fused_chains(case):
    """The same on producer -> AO -> consumer chains, where the consumer's reads of AO (its
    PE array or its register's fill) are users of the producer's tile."""
    _check_what_holds_full_buffers(*inputs_from_dicts(*case[:3]))


def test_resnet50_dram_top_cause_carries_the_write_backs_dram_remedies(capsys):
    """The README's resnet50_dram case as a user runs it (progress bar on): its top cause,
    buffer_full at Z@acc, is held by Z's slow write-back to DRAM; the DRAM address mapping that
    speeds that write-back is listed under it, with the cycles it saves (before, only under
    cause 2, and cause 1 said 'no architectural change proposed')."""
    files = [
        str(ROOT / "hw_models/tpu_like_ddr4.yaml"),
        str(ROOT / "examples/resnet50_dram/workload.yaml"),
        str(ROOT / "examples/resnet50_dram/mapping.yaml"),
    ]
    assert main(["explain", *files]) == 0
    out = capsys.readouterr().out
    first = out.split("\n1. ")[1].split("\n2. ")[0]
    assert first.startswith("buffer_full at Z@acc, vs an earlier tile of Z@acc: 57,431 cycles")
    assert "held by: the write-back of Z from acc to DRAM (acc.rd -> DRAM.wr" in first
    assert (
        "- address mapping rorabgbachco for DRAM (was rochrababgco): saves 28,855 cycles "
        "(132,662 -> 103,807, 21.8%)"
    ) in first
    # the remedies are ranked by cycles saved: the address mapping first
    assert first.split("   - ")[1].startswith("address mapping rorabgbachco")
    assert "no architectural change proposed" not in first
    # the other numbers examples/resnet50_dram/README.md quotes (it said 323,272 for the tile
    # order, measured before the timer's later changes)
    # the layout and the tile order make the run longer: not listed as remedies in the text,
    # counted in one line, and in --json with their cycles
    assert "lay Z out" not in first and "made the run longer: --json lists them)" in first
    assert main(["explain", *files, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)["causes"][0]
    after = {r["change"]: r["cycles_after"] for r in doc["remedies"]}
    assert after["lay Z out in DRAM as [n, m] (was [m, n])"] == 145_004  # +9.3 %
    assert 637_801 in after.values()  # the tile order above Z@acc: 4.8x longer
    readme = (ROOT / "examples/resnet50_dram/README.md").read_text()
    assert "column-major layout of Z costs 9% more" in readme
    assert "4.8x longer (637,801 cycles)" in " ".join(readme.split())
