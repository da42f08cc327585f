"""The result never depends on the progress bar; deadlock is decided from state, not time.

The progress bar only looks at the run between batches of SimPy events, so the same inputs
give the same cycles, stall spans and accesses with the bar forced on and off, however long
a timeout is (a 20,000-cycle pipeline, a 10^6-cycle port latency) and however often the bar
looks. A run is stuck only when SimPy's queue is empty while processes still wait.
"""

from __future__ import annotations

import copy
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pandas.testing import assert_frame_equal
from replay_helpers import ROOT, inputs_from_dicts, inputs_from_folder
from terminal import on_a_terminal
from test_deadlock import ARCH as DEADLOCK_ARCH
from test_deadlock import WORKLOAD as DEADLOCK_WORKLOAD
from test_deadlock import mapping as deadlock_mapping
from test_fused_properties import chains
from test_replay_properties import schedules
from test_semantics import MATVEC, STREAM_MAPPING, single_buffer_arch

from cyclesim.analysis.simulate import replay
from cyclesim.engine import loop
from cyclesim.errors import DeadlockError, EngineError

L1_REPLAY = ROOT / "examples" / "l1_replay"


def assert_same_result(shown, hidden) -> None:
    """Cycles, every stall span, every access and the engine's own records are identical."""
    assert shown.cycles == hidden.cycles
    assert_frame_equal(shown.totals.drop(columns="events"), hidden.totals.drop(columns="events"))
    assert shown.engine_events == hidden.engine_events
    assert_frame_equal(shown.stall_spans, hidden.stall_spans)
    assert_frame_equal(shown.detailed_accesses, hidden.detailed_accesses)
    a, b = shown.raw.rec, hidden.raw.rec
    assert a.grants == b.grants and a.pe_waits == b.pe_waits
    assert a.fill_tl == b.fill_tl and a.drain_tl == b.drain_tl


def both_ways(inputs, **kw):
    """The same replay with the progress bar forced on, then off."""
    return replay(*inputs, progress=True, **kw), replay(*inputs, progress=False, **kw)


@pytest.fixture
def look_often(monkeypatch):
    """The bar looks after every event: the most intrusive observer there can be."""
    monkeypatch.setattr(loop, "STEPS_PER_LOOK", 1)
    monkeypatch.setattr(loop, "REFRESH_SECONDS", 0.0)


def test_l1_replay_example_same_with_and_without_the_bar():
    # the README's run: 4,227,675 cycles; the old time-chunked loop called it a deadlock at
    # cycle 53,248 whenever the bar was on (a 4,096-cycle chunk with no recorded event)
    shown, hidden = both_ways(inputs_from_folder(L1_REPLAY))
    assert hidden.cycles == 4_227_675
    assert_same_result(shown, hidden)


def test_a_20000_cycle_pipeline_is_no_deadlock(look_often):
    # example 03 (52 cycles) with pipeline_depth_cycles 20,000: Z's write-back of the last
    # tile waits 20,000 cycles after the last step, and so does the end of the PE process:
    # 52 + 20,000, offload 4 + 20,000
    arch = single_buffer_arch(1)
    arch["pe_array"]["pipeline_depth_cycles"] = 20_000
    shown, hidden = both_ways(inputs_from_dicts(arch, MATVEC, STREAM_MAPPING))
    assert (hidden.cycles, hidden.offload_cycles) == (20_052, 20_004)
    assert_same_result(shown, hidden)


def test_a_million_cycle_port_latency_is_no_deadlock(look_often):
    # example 03 with 10^6 cycles of latency on DRAM's read port: each of the 4 A fills pays
    # it once after its 8 cycles of bursts; one slot serialises fill and compute:
    # 4 x (8 + 10^6 + 4) + 4 = 4,000,052 cycles, all but 16 + 4 of them waiting on A
    arch = single_buffer_arch(1)
    arch["memories"][0]["ports"][0]["latency_cycles"] = 1_000_000
    shown, hidden = both_ways(inputs_from_dicts(arch, MATVEC, STREAM_MAPPING))
    assert hidden.cycles == 4_000_052
    assert hidden.stall_cycles_by_cause(("onload", "compute")) == {
        "bandwidth": 32,
        "latency": 4_000_000,
    }
    assert_same_result(shown, hidden)


@settings(
    max_examples=int(os.environ.get("CYCLESIM_EXAMPLES", "30")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(schedules(), st.integers(0, 10**6), st.integers(0, 20_000))
def test_random_schedules_same_with_and_without_the_bar(look_often, case, latency, depth):
    arch, workload, mapping, reuse, _ = case
    arch = copy.deepcopy(arch)
    arch["memories"][0]["ports"][0]["latency_cycles"] = latency  # DRAM's read port
    arch["pe_array"]["pipeline_depth_cycles"] = depth
    shown, hidden = both_ways(inputs_from_dicts(arch, workload, mapping), reuse=reuse)
    assert_same_result(shown, hidden)


@settings(
    max_examples=int(os.environ.get("CYCLESIM_EXAMPLES", "30")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(chains(), st.sampled_from(["retain", "strict"]), st.integers(0, 10**6))
def test_random_fused_chains_same_with_and_without_the_bar(look_often, case, reuse, latency):
    # two Einsums sharing AO: the consumer's waits on the producer's write-backs
    arch, workload, mapping, _, _ = case
    arch = copy.deepcopy(arch)
    arch["memories"][1]["ports"][1]["latency_cycles"] = latency  # sram's write port
    shown, hidden = both_ways(inputs_from_dicts(arch, workload, mapping), reuse=reuse)
    assert_same_result(shown, hidden)


def test_a_real_deadlock_names_every_stuck_process_the_same_way_with_or_without_the_bar(
    look_often, monkeypatch
):
    # consumer branch before its producer (test_deadlock): the queue runs empty while the PE
    # array waits for AO, which only the queued producer branch would write. The message, and
    # the cycle it names, are the same whether the bar is forced on, off or left to decide.
    # The loader refuses this tree statically; with that check off the engine's detection runs.
    monkeypatch.setattr("cyclesim.spec.mapping._check_order", lambda mapping, workload: None)
    messages = []
    for progress in (True, False, None):
        with pytest.raises(DeadlockError) as info:
            replay(
                *inputs_from_dicts(
                    DEADLOCK_ARCH, DEADLOCK_WORKLOAD, deadlock_mapping(["consumer", "producer"])
                ),
                progress=progress,
            )
        assert isinstance(info.value, EngineError)
        messages.append(str(info.value))
    assert messages[0] == messages[1] == messages[2]
    text = messages[0]
    assert "cannot progress at cycle" in text and "'produced'" in text
    assert "PE array: waiting since cycle" in text and "write-back AO@sram" in text


def test_cli_runs_the_l1_replay_example_as_documented_on_a_terminal():
    # exactly the README's command, stderr on a terminal: the default path with the bar on
    code, out, err = on_a_terminal(
        "run",
        "examples/l1_replay/arch.yaml",
        "examples/l1_replay/workload.yaml",
        "examples/l1_replay/mapping.yaml",
        columns=80,
    )
    assert code == 0, err
    assert "4,227,675" in out
    assert "cannot progress" not in err


def test_cli_exits_3_for_a_real_deadlock(tmp_path, monkeypatch, capsys):
    # The command's own main() with the loader's static order check off (it refuses this
    # tree with exit 2 first): a deadlock the engine finds is exit 3, one line, no traceback.
    import yaml

    from cyclesim.cli import main

    monkeypatch.setattr("cyclesim.spec.mapping._check_order", lambda mapping, workload: None)
    for name, data in (
        ("arch", DEADLOCK_ARCH),
        ("workload", DEADLOCK_WORKLOAD),
        ("mapping", deadlock_mapping(["consumer", "producer"])),
    ):
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(data))
    code = main(["run", *(str(tmp_path / f"{n}.yaml") for n in ("arch", "workload", "mapping"))])
    err = capsys.readouterr().err
    assert code == 3
    assert "cannot progress" in err and "Traceback" not in err


def test_the_replay_bar_rates_only_what_it_saw_happen(capsys):
    """The bar appears after work is done; it read "714902112.86seg/s" because it divided every
    segment done before it appeared by the instant since. Here a process finishes 200,000
    one-cycle segments; the bar shows at the first look (progress=True, after 4,096 events,
    ~2,000 segments done). Whatever the machine's speed, no rate it prints may exceed what the
    whole loop averaged by more than 5x (the bug's first rate was ~1,000x that average)."""
    import re
    import time

    from cyclesim.engine.environment import ReplayEnvironment
    from cyclesim.engine.loop import run_to_empty_queue

    env = ReplayEnvironment()  # the replay's environment: the loop runs its events itself
    done = [0]

    def segments():
        for _ in range(200_000):
            yield env.timeout(1)
            done[0] += 1

    env.process(segments())
    t0 = time.perf_counter()
    run_to_empty_queue(env, progress=True, total=200_000, done=lambda: done[0], wall0=t0)
    average = 200_000 / (time.perf_counter() - t0)
    rates = [float(r) for r in re.findall(r"([\d.]+(?:e[+-]\d+)?)seg/s", capsys.readouterr().err)]
    assert rates, "the bar drew no rate"
    assert max(rates) <= 5 * average, (rates, average)
