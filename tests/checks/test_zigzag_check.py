"""`cyclesim check zigzag`: replay vs model vs zigzag-dse on one case; DRAM words always agree."""

from __future__ import annotations

import argparse
import json

import pytest

from cyclesim.checks.zigzag import cases as zc
from cyclesim.checks.zigzag import cli as zigzag_cli
from cyclesim.checks.zigzag.check import replay_case, run_check
from cyclesim.checks.zigzag.explain import ZigZagView, cause_sentence
from cyclesim.checks.zigzag.model import evaluate
from cyclesim.checks.zigzag.read import load_zigzag_inputs
from cyclesim.checks.zigzag.stalls import StallGroup, stall_groups
from cyclesim.checks.zigzag.to_spec import import_zigzag
from cyclesim.spec import Spatial, Storage

# GEMM B=K=C=20 (T = 20*5*5 = 500 on the 4x4 array), the small setting's loop order scaled down
SMALL_GEMM_TM = {
    "O": [[], [["B", 5], ["K", 5], ["C", 5]], [], [["B", 4]]],
    "W": [[["B", 5], ["K", 5]], [["C", 5], ["B", 4]], []],
    "I": [[["B", 5], ["K", 5]], [["C", 5]], [["B", 4]]],
}


@pytest.fixture(scope="module")
def small_case(tmp_path_factory):
    acc = zc.eyeriss_accelerator(zc.SMALL_SRAM_BITS)
    return zc.write_case(
        tmp_path_factory.mktemp("zz"),
        "g20",
        acc,
        zc.gemm_workload(20, 20, 20),
        zc.spatial_mapping(),
        SMALL_GEMM_TM,
    )


def test_import_places_spatial_loops_between_shared_and_per_pe_memories(small_case):
    files = small_case
    spec = import_zigzag(
        load_zigzag_inputs(files.accelerator, files.workload, files.mapping, files.temporal_mapping)
    )
    tree = spec.mapping.loop_tree
    kinds = [(type(n).__name__, getattr(n, "memory", getattr(n, "rank", ""))) for n in tree]
    first_spatial = next(i for i, n in enumerate(tree) if isinstance(n, Spatial))
    above = {n.memory for n in tree[:first_spatial] if isinstance(n, Storage)}
    below = {n.memory for n in tree[first_spatial:] if isinstance(n, Storage)}
    # memories shared by the whole array sit above the unrolling, the per-PE register files below it
    assert above == {"dram", "sram_1M", "sram_64KB", "sram_8KB"}, kinds
    assert below == {"rf_64B_I", "rf_64B_W", "rf_16B"}, kinds
    # the register files hold one tile per PE: their storage nodes sit below both spatial loops
    assert sum(isinstance(n, Spatial) for n in tree[: first_spatial + 2]) == 2


@pytest.fixture(scope="module")
def small_inputs(small_case):
    f = small_case
    return load_zigzag_inputs(f.accelerator, f.workload, f.mapping, f.temporal_mapping)


@pytest.fixture(scope="module")
def small_result(small_inputs):
    return replay_case(small_inputs)


@pytest.fixture(scope="module")
def small_check(small_case, small_result):
    f = small_case
    return run_check(
        f.accelerator,
        f.workload,
        f.mapping,
        f.temporal_mapping,
        use_peer=False,
        result=small_result,
    )


def test_replay_dram_words_equal_zigzag_and_latency_is_at_least_ideal(small_check):
    check = small_check
    assert (
        check.replay.latency_total
        >= check.replay.ideal_cycles
        == check.analytical.ideal_cycles
        == 500
    )
    dram = [a for a in check.accesses if a.memory == "dram"]
    assert dram and all(a.replay == a.analytical for a in dram)
    # every term adds up: onload + ideal + stall + offload = total
    r = check.replay
    assert r.onloading + r.ideal_cycles + r.stall + r.offloading == r.latency_total
    assert any("worst port" in text for text in check.explanations)


def test_check_reads_the_given_replay_and_its_causes_add_up_per_phase(small_check, small_result):
    check = small_check
    assert check.result is small_result
    assert check.replay.latency_total == small_result.cycles
    for phase, term in (("onload", "onloading"), ("compute", "stall"), ("offload", "offloading")):
        assert sum(check.causes(phase).values()) == getattr(check.replay, term)
    assert check.causes("compute") == small_result.stall_cycles_by_cause()


def test_every_stall_cause_row_has_one_sentence_naming_its_port(small_check):
    for cause in small_check.causes("compute"):
        sentences = [t for t in small_check.explanations if t.startswith(f"stall, {cause} (")]
        assert len(sentences) == 1, cause
        assert "ZigZag" in sentences[0]
    spatial = next(t for t in small_check.explanations if t.startswith("stall, spatial"))
    assert "rf_64B_I.r_port_1 at 8 b/cycle, one 32-bit value every 4 cycles" in spatial
    assert "its worst port" in spatial


def test_stall_groups_merge_the_tiles_of_one_slot_holder_and_cover_the_phase(small_result):
    for phase, total in (
        ("onload", small_result.onload_cycles),
        ("compute", small_result.stall_cycles),
        ("offload", small_result.offload_cycles),
    ):
        groups = stall_groups(small_result, phase)
        assert sum(g.cycles for g in groups) == total
        assert all(not (g.competitor or "").startswith("tile ") for g in groups)
        assert [g.cycles for g in groups] == sorted((g.cycles for g in groups), reverse=True)


def test_buffer_full_sentence_says_one_slot_where_zigzag_infers_single_buffering(small_inputs):
    view = ZigZagView(small_inputs, evaluate(small_inputs))
    assert view.double_buffered("W", "sram_64KB") is False  # 12800 b tile in 16384 b
    group = StallGroup("compute", "buffer_full", "fill", "W", "sram_64KB", None, "W@sram_64KB", 42)
    text = cause_sentence("buffer_full", 42, [group], view)
    assert text.startswith(
        "stall, buffer_full (42 cycles): ZigZag lets compute hide the refill of W at sram_64KB"
    )
    assert (
        "had one slot (ZigZag's own inference: single-buffered" in text
        and "waited 42 cycles" in text
    )


@pytest.mark.peer
def test_json_has_all_three_columns(small_case, capsys):
    pytest.importorskip("zigzag.api", reason="zigzag-dse not importable")
    parser = argparse.ArgumentParser()
    zigzag_cli.register(parser.add_subparsers())
    args = parser.parse_args(
        ["zigzag", "--accelerator", small_case.accelerator, "--workload", small_case.workload,
         "--mapping", small_case.mapping, "--temporal-mapping", small_case.temporal_mapping, "--json"]
    )  # fmt: skip
    assert args.func(args) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) >= {"replay", "analytical", "zigzag", "accesses", "explanations"}
    # one naming across commands (README, machine-readable output): as `cyclesim run --json`
    assert data["schema_version"] == 1
    assert {
        "stall_cycles_by_cause",
        "onload_cycles_by_cause",
        "offload_cycles_by_cause",
    } <= set(data["replay"])
    assert sum(data["replay"]["stall_cycles_by_cause"].values()) == data["replay"]["stall_cycles"]
    assert data["zigzag"] == data["analytical"]
    terms = {"cycles", "ideal_compute_cycles", "stall_cycles", "onload_cycles", "offload_cycles"}
    assert terms <= set(data["replay"]) and terms == set(data["zigzag"])
    row = next(a for a in data["accesses"] if a["memory"] == "dram" and a["operand"] == "W")
    assert (
        row["direction"] == "read to below"
        and row["replay"] == row["analytical"] == row["zigzag"] == 200
    )


def test_cli_prints_spec_errors_without_traceback(small_case, capsys):
    parser = argparse.ArgumentParser()
    zigzag_cli.register(parser.add_subparsers())
    args = parser.parse_args(
        ["zigzag", "--accelerator", small_case.accelerator, "--workload", small_case.workload,
         "--mapping", small_case.mapping, "--temporal-mapping", "missing.json", "--no-peer"]
    )  # fmt: skip
    assert args.func(args) == 2
    err = capsys.readouterr().err
    assert "missing.json: cannot read the file" in err and "Traceback" not in err


# W's top loop at sram_64KB (C5) is relevant to W: ZigZag needs only a fifth of the tile spare
PARTIAL_DB_TM = {
    "O": [[], [["B", 5], ["K", 5]], [], [["B", 4], ["C", 5]]],
    "W": [[["B", 5], ["K", 5]], [["B", 4], ["C", 5]], []],
    "I": [[["B", 5], ["K", 5]], [["B", 4]], [["C", 5]]],
}


def test_zigzag_double_buffer_that_does_not_fit_two_whole_tiles_gets_one_slot(tmp_path):
    from cyclesim.checks.zigzag.to_spec import slot_flags

    acc = zc.eyeriss_accelerator(zc.SMALL_SRAM_BITS)  # sram_64KB: 16384 b, W tile 400 x 32 b
    f = zc.write_case(
        tmp_path, "p", acc, zc.gemm_workload(20, 20, 20), zc.spatial_mapping(), PARTIAL_DB_TM
    )
    inputs = load_zigzag_inputs(f.accelerator, f.workload, f.mapping, f.temporal_mapping)
    assert ZigZagView(inputs, evaluate(inputs)).double_buffered("W", "sram_64KB") is True
    flags, single = slot_flags(inputs)
    assert single == (("W", "sram_64KB"),) and flags[("O", "sram_8KB")] is True
    check = run_check(f.accelerator, f.workload, f.mapping, f.temporal_mapping, use_peer=False)
    assert check.explanations[0].startswith(
        "buffers: ZigZag counts W in sram_64KB as double-buffered"
    )


def test_counts_read_with_thousands_separators_never_in_exponent_form(small_check):
    """`check zigzag --layer /conv1/Conv` on eyeriss_like printed 'total latency 3.26589e+06' and
    'so 2.37082e+06 of its stall cycles' (Python's g format past six digits): counts are
    written out in full with separators, a fractional ZigZag term to two decimals."""
    from cyclesim.checks.zigzag.check import format_report
    from cyclesim.checks.zigzag.explain import count

    assert count(3265890.0) == "3,265,890" and count(2370820) == "2,370,820"
    assert count(1234.5) == "1,234.5" and count(0.125) == "0.12" and count(0) == "0"
    text = format_report(small_check)
    assert "e+" not in text
    rows = [line.split() for line in text.splitlines() if line.startswith(("W ", "I ", "O "))]
    assert rows and all(row[-3].replace(",", "").isdigit() or row[-3] == "n/a" for row in rows)
