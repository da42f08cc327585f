"""Fast-forward with a DRAM model: it fires where a period issues no DRAM request.

The DRAM timer's state is absolute (open rows, bank ready cycles, calendars, each rank's next
refresh) and does not shift by a period; but it changes only when a request reaches it, and a
refresh is applied lazily, when a request arrives past its due cycle. So a period between two
equal snapshots that issued no DRAM request, with no DRAM transfer under way at either end,
leaves the timer untouched, and so do the periods it stands for: the first request after the
jump finds the timer as the full replay leaves it (engine/fastforward_dram.py).

Each case replays with and without fast-forward and compares every record, the Result and the
VCD (bank signals included) and Perfetto files byte for byte; only SimPy's event counts differ.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from replay_helpers import arch_with_dram, gemm_einsum, inputs_from_dicts
from test_fast_forward import (
    _arch,
    _plan,
    assert_identical,
    assert_same_result,
    reduction,
    streaming,
)
from test_fast_forward_identity import PROPERTY, _identical_raw
from test_replay_properties import schedules

from cyclesim.engine import fastforward, replay_plan
from cyclesim.engine.verify import run_differences

# HBM2 (preset HBM2_8Gb_x128) on one channel at tCK = 1 ns with a 1000 MHz accelerator: one
# accelerator cycle per DRAM cycle; 64 B requests, 2 KiB rows; tREFI = 3900, one rank (its
# refreshes fall due at 3900, 7800, ...)
HBM = {"config": "HBM2_8Gb_x128", "channels": 1}


def with_dram(case: tuple[dict, dict, dict], dram: dict = HBM, clock_mhz: int = 1000):
    """The same case with a DRAM model behind its memory `DRAM`."""
    arch, workload, mapping = case
    return arch_with_dram(arch, dram, clock_mhz), workload, mapping


def loaded_once(m: int) -> tuple[dict, dict, dict]:
    """Z[m,n] += A[m,k] * B[k,n], n = 4, k = 64, 8 bits: A, B and Z live in buf whole.

    A (m x 64 B) and B (256 B) are read from DRAM once, before the first PE segment; Z (m x 4
    B) is written back once, after the last. In between, every m iteration runs the same 64
    steps from buf: per step the one-value fills of A (multicast) and of B (a value per PE)
    take turns on buf's 64-bit read port, a cycle each, so a step takes 2 cycles and an m
    iteration P = 128. No DRAM request falls between the first and the last iteration.
    """
    tree = [
        {"type": "storage", "memory": "DRAM", "tensors": ["A", "B", "Z"]},
        {"type": "storage", "memory": "buf", "tensors": ["A", "B", "Z"]},
        {"type": "temporal", "rank": "m", "bound": m},
        {"type": "temporal", "rank": "k", "bound": 64},
        {"type": "spatial", "rank": "n", "bound": 4, "dim": "X"},
        {"type": "storage", "memory": "reg", "tensors": ["A", "B"]},
        {"type": "compute", "einsum": "gemm"},
    ]
    workload = {
        "tensors": {
            "A": {"bits_per_value": 8},
            "B": {"bits_per_value": 8},
            "Z": {"bits_per_value": 8, "partial_sum_bits": 8},
        },
        "einsums": [gemm_einsum(m, 4, 64)],
    }
    return with_dram((_arch(64), workload, {"loop_tree": tree}))


def test_a_loop_without_dram_requests_is_skipped_and_the_dram_sees_the_same(tmp_path):
    plan, inputs = _plan(loaded_once(64))
    full = replay_plan(plan, trace=True, progress=False, fast_forward=False)
    fast = replay_plan(plan, trace=True, progress=False)
    ff = fast.fast_forward
    # snapshots at the starts of m iterations 1 and 2 (iteration 0, where the DRAM reads end,
    # is never a reference) are equal; the jump goes up to the start of the last iteration,
    # which is simulated: 64 - 3 = 61 periods of one iteration, 128 cycles and 64 segments
    assert (ff.jumps, ff.periods) == (1, 61)
    assert ff.cycles_skipped == 61 * 128 and ff.segments_skipped == 61 * 64
    segments = list(full.rec.pe_segments)
    assert segments[128][0] - segments[64][0] == 128  # P, as derived above
    assert fast.env_events < full.env_events / 10
    # requests: A 64 x 64 B = 64, B 256 B = 4, Z 256 B = 4 (its write-back after the jump);
    # activates: A's two rows, B's and Z's. The write-back at cycle 8,771 is the first request
    # past the refreshes due at 3,900 and 7,800: the timer applies both then, in either replay
    assert fast.rec.dram_counts == full.rec.dram_counts
    assert full.rec.dram_counts["DRAM"] == {
        "requests": 72,
        "row_hits": 68,
        "activates": 4,
        "refreshes": 2,
    }
    assert fast.rec.dram_banks == full.rec.dram_banks and fast.rec.dram_banks
    assert_identical(full, fast)
    assert_same_result(full, fast, tmp_path)  # the VCD and Perfetto files, bytes
    assert "open_row" in (tmp_path / "fast" / "run.vcd").read_text()  # with the bank signals


def test_explains_remedy_replays_fast_forward_with_dram_and_stay_exact(monkeypatch):
    # explain replays remedies (another address mapping, a layout, a tile order) of the layer
    # loaded once: each replay skips its m loop too, and the suite's verification replays every
    # one that jumped once more in full and compares every record (tests/conftest.py)
    from cyclesim.analysis.explain import explain
    from cyclesim.analysis.simulate import replay

    jumps = []
    count = fastforward.FastForward._count
    monkeypatch.setattr(
        fastforward.FastForward, "_count", lambda self, *a: jumps.append(a) or count(self, *a)
    )
    a, w, m = inputs_from_dicts(*loaded_once(64))
    res = replay(a, w, m, progress=False)
    first = len(jumps)
    assert first == 1  # the m loop, once (the verification's full replay never jumps)
    ex = explain(res, a, w, m, top=10, workers=1, progress=False)
    replayed = {r.change for c in ex.causes for r in c.remedies if r.cycles_after is not None}
    dram_remedies = {c for c in replayed if c.startswith(("address mapping", "lay "))}
    assert dram_remedies  # another address mapping, another layout of A or Z: DRAM replays
    assert len(jumps) - first >= len(dram_remedies)  # (9 when measured)


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(reduction, id="reduction: Z reloaded and written back per iteration"),
        pytest.param(streaming, id="streaming: A and B tiles read per iteration"),
    ],
)
def test_a_period_with_dram_requests_is_never_skipped(case):
    # both cases fast-forward without a DRAM model (tests/test_fast_forward.py); with one,
    # every iteration of their loops reads (or writes) DRAM: the timer's state moves on with
    # every period, no pair of snapshots may match, and off_because says why
    plan, _ = _plan(with_dram(case()))
    fast = replay_plan(plan, progress=False)
    full = replay_plan(plan, progress=False, fast_forward=False)
    assert fast.fast_forward.jumps == 0
    assert fast.fast_forward.off_because == "DRAM requests in every period"
    assert not run_differences(fast, full)
    bandwidth_only, _ = _plan(case())
    assert replay_plan(bandwidth_only, progress=False).fast_forward.jumps > 0


def test_without_the_dram_rule_a_jump_over_dram_requests_changes_the_replay(monkeypatch):
    # the rule is what keeps `streaming` exact: with it switched off (the timers' calls never
    # change, no transfer is ever under way, no loop is left out) the snapshots of its steady
    # loop match, the jump skips A's and B's DRAM reads as if they had been issued: the full
    # replay sends 33 DRAM requests, the jumping one 13 (both end at 751 since grants are
    # decided at the end of each cycle; before, the jump also ended 2 cycles early, 749):
    # the verification catches it
    from cyclesim.engine import fastforward_dram
    from cyclesim.engine.verify import FastForwardMismatch

    monkeypatch.setattr(fastforward_dram.DramWatch, "calls", lambda self: ())
    monkeypatch.setattr(fastforward_dram.DramWatch, "under_way", lambda self: False)
    monkeypatch.setattr(fastforward_dram.DramWatch, "every_iteration", lambda self, below: False)
    plan, _ = _plan(with_dram(streaming()))
    with pytest.raises(FastForwardMismatch, match="'requests': 13.* vs .*'requests': 33"):
        replay_plan(plan, progress=False, verify_fast_forward=True)


def test_the_cli_says_why_it_stayed_off_with_dram(tmp_path, capsys):
    import yaml

    from cyclesim.cli import main

    paths = []
    for name, doc in zip(("arch", "workload", "mapping"), with_dram(reduction()), strict=True):
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(doc))
        paths.append(str(path))
    assert main(["-v", "run", *paths]) == 0  # the default path: progress bar on
    err = capsys.readouterr().err
    assert "fast-forward stayed off: this replay has DRAM requests in every period" in err


# ---------------------------------------------------------------- random DRAM-backed GEMMs
# DDR4 with a refresh every 300 cycles of tCK = 1 ns (tRFC 60): random runs of a few thousand
# cycles cross many refreshes, so jumps skip over refreshes that fall due and are applied late
SHORT_REFRESH = Path(tempfile.mkdtemp(prefix="cyclesim-ff-dram-")) / "ddr4_short_refresh.ini"
SHORT_REFRESH.write_text(
    "[dram_structure]\nprotocol = DDR4\nbankgroups = 4\nbanks_per_group = 4\nrows = 65536\n"
    "columns = 1024\ndevice_width = 8\nBL = 8\n\n[timing]\ntCK = 1.0\nAL = 0\nCL = 17\n"
    "CWL = 12\ntRCD = 17\ntRP = 17\ntRAS = 39\ntRFC = 60\ntREFI = 300\ntRRD_S = 4\n"
    "tRRD_L = 6\ntWTR_S = 3\ntWTR_L = 9\ntFAW = 26\ntWR = 18\ntRTP = 9\ntCCD_S = 4\n"
    "tCCD_L = 6\ntRTRS = 1\n\n[system]\nchannel_size = 16384\nchannels = 1\n"
    "bus_width = 64\naddress_mapping = rochrababgco\n"
)
DRAMS = st.fixed_dictionaries(
    {
        "config": st.sampled_from(["DDR4_8Gb_x8_2400", "HBM2_8Gb_x128", str(SHORT_REFRESH)]),
        "channels": st.sampled_from([1, 2]),
        "address_mapping": st.sampled_from(["rochrababgco", "rorabgbachco"]),
    }
)


@st.composite
def dram_gemms(draw):
    """A random small GEMM schedule (tests/test_replay_properties.py) with a long steady loop
    and a DRAM model: as drawn (the steady loop outermost, buf refilled from DRAM in every
    iteration) or with every tensor kept whole in buf above it (read from DRAM once, the steady
    loop runs from buf, written back once); DDR4 or HBM2 or DDR4 refreshed every 300 cycles,
    one or two channels, either address mapping, an accelerator clock slower or faster than
    the DRAM's."""
    arch, workload, mapping, reuse, _ = draw(schedules(steady=(5, 14), shared_ports=True))
    if draw(st.booleans()):
        tree = [n for n in mapping["loop_tree"] if n.get("memory") != "buf"]
        tree.insert(1, {"type": "storage", "memory": "buf", "tensors": ["A", "B", "Z"]})
        mapping = dict(mapping, loop_tree=tree)
    clock_mhz = draw(st.sampled_from([100, 700, 2000]))
    return with_dram((arch, workload, mapping), draw(DRAMS), clock_mhz), reuse


@PROPERTY
@given(dram_gemms(), st.booleans())
def test_random_dram_backed_gemms_are_identical_with_and_without_fast_forward(
    look_at_every_loop, case, trace
):
    inputs, reuse = case
    _identical_raw(*inputs, reuse, trace)


def test_the_random_dram_backed_gemms_do_exercise_fast_forward(look_at_every_loop):
    """The property above is not won by never skipping: a share of the drawn cases skip (the
    steady loop below a buffer that DRAM fills once; 15 of 40 when measured)."""
    fired = []

    @settings(max_examples=40, deadline=None, database=None, derandomize=True)
    @given(dram_gemms())
    def sample(case):
        inputs, reuse = case
        fired.append(_identical_raw(*inputs, reuse, False) > 0)

    sample()
    assert 5 * sum(fired) >= len(fired), f"fast-forward fired in {sum(fired)} of {len(fired)}"
