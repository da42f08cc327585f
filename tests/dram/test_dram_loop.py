"""The DRAM controller in the replay's loop (`timing: controller`, engine/dram_loop.py): the
replay gives every request the completion `cyclesim dram` gives it on the recorded trace, and
DMA streams through it land on DRAMsim3's recorded cycles."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
from patterns import PATTERNS  # noqa: E402
from replay_helpers import arch_with_dram, inputs_from_dicts  # noqa: E402
from test_replay_properties import schedules  # noqa: E402

from cyclesim.dram.load import load_dram_config  # noqa: E402
from cyclesim.dram.trace import completion_cycles, read_trace, simulate_trace  # noqa: E402
from cyclesim.engine.dram_loop import DramLoop, request_offsets, write_dram_trace  # noqa: E402
from cyclesim.engine.environment import ReplayEnvironment  # noqa: E402
from cyclesim.engine.run import replay_plan  # noqa: E402
from cyclesim.results import build_result  # noqa: E402
from cyclesim.schedule import ReusePolicy, build_plan  # noqa: E402
from cyclesim.spec import architecture_from_dict, mapping_from_dict, workload_from_dict  # noqa: E402

ROOT = HERE.parents[1]
REFERENCE = json.loads((HERE / "dramsim3_reference.json").read_text())["results"]
CONFIGS = ("DDR4_8Gb_x8_2400", "HBM2_8Gb_x128")


def replay_in_loop(case, config, clock_mhz, mapping, refresh_every, tmp_path):
    """Replay a schedule with the controller in the loop; (its requests in entry order, the
    trace it records, the config, the result)."""
    arch, workload, tree, reuse, _ = case
    block = {"config": config, "address_mapping": mapping, "timing": "controller"}
    a, w, m = inputs_from_dicts(arch_with_dram(arch, block, clock_mhz), workload, tree)
    plan = build_plan(a, w, m, ReusePolicy(reuse), False)
    if refresh_every is not None:  # refresh every few hundred DRAM cycles
        dram = tuple(
            (name, c.with_changes(tREFI=refresh_every, tRFC=60), p, mhz)
            for name, c, p, mhz in plan.dram
        )
        plan = dataclasses.replace(plan, dram=dram)
    # fast-forward may skip only periods that push no request (engine/fastforward_dram.py):
    # verify_fast_forward replays once more in full and compares every record when it fired
    raw = replay_plan(plan, progress=False, verify_fast_forward=True)
    ((name, c, _, _),) = plan.dram
    # the same requests as the timer issues (a line's requests are its own, a cut run's later
    # bursts taken back): the requests of the lines the transfers moved
    timer_plan = dataclasses.replace(
        plan, dram=tuple((n, c.with_changes(replay_controller=False), p, mhz)
                         for n, c, p, mhz in plan.dram)
    )  # fmt: skip
    timed = replay_plan(timer_plan, progress=False).rec.dram_counts[name]["requests"]
    assert len(raw.rec.dram_requests[name]) == timed
    requests = raw.rec.dram_requests[name]
    path = tmp_path / "dram.trace"
    write_dram_trace(path, requests)
    return requests, path, c, build_result(raw)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture])  # fmt: skip
@given(
    st.one_of(schedules(shared_ports=True), schedules(steady=(2, 8), shared_ports=True)),
    st.sampled_from(CONFIGS),
    st.sampled_from([100, 700, 2000]),
    st.sampled_from(["rochrababgco", "rorabgbachco"]),
    st.sampled_from([None, 300, 700]),
)
def test_the_replay_gives_each_request_the_completion_of_its_trace(
    tmp_path, case, config, clock_mhz, mapping, refresh_every
):
    """The defining equality: `cyclesim dram` on the trace the replay records (every request
    with its arrival cycle, in entry order) gives every request the completion cycle the
    replay gave it; and the replay's causes still add up to each phase's total."""
    entered, path, c, res = replay_in_loop(
        case, config, clock_mhz, mapping, refresh_every, tmp_path
    )
    ours = [complete for _, _, _, _, complete in entered]
    assert all(x >= 0 for x in ours)
    if ours:  # else the PE array reads the DRAM directly: nothing is DRAM-timed
        assert completion_cycles(c, read_trace(path)) == ours
    else:
        assert path.read_text() == ""
    by_phase = res.stall_spans.groupby("phase").cycles.sum().to_dict()
    assert by_phase.get("onload", 0) == res.onload_cycles
    assert by_phase.get("offload", 0) == res.offload_cycles


def one_event_per_advance(self, waiters):
    """DramLoop._next_fire without its look-ahead: the next advance, queued as a SimPy event
    (as every advance was before FrontEnd.fire_until)."""
    return self.to_accel(self.front.resume_at)


def streams_woken(config: str, clock_mhz: int, streams, per_run: int) -> tuple[list, list]:
    """DMA-like streams through one DramLoop, each pushing runs of `per_run` requests and
    waiting for all its requests at its end: (each stream's (accelerator cycle it was woken,
    the DRAM cycle it was done), every request's (entered, completed))."""
    c = load_dram_config(config)
    env = ReplayEnvironment()
    loop = DramLoop(env, c, clock_mhz, record=True)
    woken = []

    def stream(name, requests):
        mine = []
        for lo in range(0, len(requests), per_run):
            run = requests[lo : lo + per_run]
            mine += [loop.push(a, w, at, name) for a, w, at in run]
            if run[-1][2] + 1 > env.now:
                yield env.timeout(run[-1][2] + 1 - env.now)
        done, _ = yield from loop.wait(mine, False)
        woken.append((name, env.now, done))

    for k, requests in enumerate(streams):
        env.process(stream(k, requests))
    env.run()
    return woken, [(e, done) for _, _, _, e, done in loop.requests()]


@st.composite
def dma_streams(draw):
    """One to three streams of 64-byte requests (row runs), each reading or writing a region
    of its own (a write behind an older read of its address can stall DRAMsim3 for ever), at
    0-5 accelerator cycles apart."""
    streams = []
    for k in range(draw(st.integers(1, 3))):
        at, requests, is_write = draw(st.integers(0, 50)), [], draw(st.booleans())
        for line, count in draw(
            st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(1, 80)), min_size=1,
                     max_size=3)
        ):  # fmt: skip
            for n in range(count):
                at += draw(st.integers(0, 5)) if n % 16 == 0 else 1
                requests.append((64 * ((k << 17) + line + n), is_write, at))
        streams.append(requests)
    return streams


@settings(max_examples=30, deadline=None)
@given(
    dma_streams(), st.sampled_from(CONFIGS), st.sampled_from([300, 700, 1200, 2000]),
    st.sampled_from([1, 4, 16]),
)  # fmt: skip
def test_the_look_ahead_wakes_every_stream_when_one_event_per_advance_does(
    streams, config, clock_mhz, per_run
):
    """With nothing else queued the advances run in FrontEnd.fire_until: every stream is
    woken at the accelerator cycle, and every request enters and completes at the DRAM cycle,
    of one SimPy event per advance."""
    ahead = streams_woken(config, clock_mhz, streams, per_run)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(DramLoop, "_next_fire", one_event_per_advance)
        assert streams_woken(config, clock_mhz, streams, per_run) == ahead


def test_the_look_ahead_changes_nothing_on_the_resnet_layer():
    """The ResNet-50 layer of examples/resnet50_dram with the controller in the loop: the
    same records with and without the look-ahead, in far fewer SimPy events."""
    from test_fast_forward import assert_identical

    from cyclesim.spec import load_architecture, load_mapping, load_workload

    arch = load_architecture(str(ROOT / "hw_models" / "tpu_like_ddr4_controller.yaml"))
    workload = load_workload(str(ROOT / "examples" / "resnet50_dram" / "workload.yaml"))
    mapping = load_mapping(str(ROOT / "examples" / "resnet50_dram" / "mapping.yaml"), arch,
                           workload)  # fmt: skip
    plan = build_plan(arch, workload, mapping)
    ahead = replay_plan(plan, progress=False)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(DramLoop, "_next_fire", one_event_per_advance)
        each = replay_plan(plan, progress=False)
    assert_identical(each, ahead)
    assert ahead.rec.events == each.rec.events and ahead.cycles == 118_277
    assert ahead.env_events < each.env_events // 10


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(schedules(shared_ports=True), schedules(steady=(2, 8), shared_ports=True)),
    st.sampled_from(CONFIGS),
    st.sampled_from([100, 700, 2000]),
    st.sampled_from([None, 300]),
)
def test_the_look_ahead_changes_nothing_but_the_simpy_events(case, config, clock_mhz, refresh):
    """The advances run in FrontEnd.fire_until while no other event comes before them end
    where one SimPy event per advance ends: every record, each request's arrival, entry and
    completion, the fast-forward's jumps; only the SimPy event count may be lower."""
    from test_fast_forward import assert_identical

    arch, workload, tree, reuse, _ = case
    block = {"config": config, "address_mapping": "rochrababgco", "timing": "controller"}
    a, w, m = inputs_from_dicts(arch_with_dram(arch, block, clock_mhz), workload, tree)
    plan = build_plan(a, w, m, ReusePolicy(reuse), False)
    if refresh is not None:
        dram = tuple(
            (name, c.with_changes(tREFI=refresh, tRFC=60), p, mhz) for name, c, p, mhz in plan.dram
        )
        plan = dataclasses.replace(plan, dram=dram)
    ahead = replay_plan(plan, progress=False)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(DramLoop, "_next_fire", one_event_per_advance)
        each = replay_plan(plan, progress=False)
    assert_identical(each, ahead)
    assert ahead.rec.events == each.rec.events
    assert ahead.fast_forward == each.fast_forward
    assert ahead.env_events <= each.env_events


# ---- DMA streams through the controller in the loop against DRAMsim3's recorded cycles ------
STREAMS = {"two_streams": 2, "same_bank_conflict": 2, "read_write_mix": 3}  # else one stream


def dma_stream(env, loop: DramLoop, requests, per_run: int, name: str):
    """One DMA transfer as engine/dram_loop.py issues one: runs of `per_run` requests (a DRAM
    row's worth), each pushed at the run's start to arrive at the cycle its burst reaches the
    port (the pattern's cycle), the run over when its last burst is; the transfer done when
    every request completed."""
    mine = []
    for lo in range(0, len(requests), per_run):
        run = requests[lo : lo + per_run]
        mine.extend(loop.push(a, op == "WRITE", cycle, name) for a, op, cycle in run)
        if run[-1][2] + 1 > env.now:
            yield env.timeout(run[-1][2] + 1 - env.now)
    done, _ = yield from loop.wait(mine, False)
    if loop.to_accel(done) > env.now:
        yield env.timeout(loop.to_accel(done) - env.now)


def cycles_through_the_loop(config_name: str, pattern: str) -> int:
    c = load_dram_config(config_name)
    env = ReplayEnvironment()  # the engine's: DramLoop queues its own calls
    loop = DramLoop(env, c, 1000 / c.tck_ns, record=True)  # one accelerator cycle a DRAM cycle
    requests = PATTERNS[pattern]()
    k = STREAMS.get(pattern, 1)
    per_run = c.row_bytes // c.request_bytes
    for s in range(k):
        env.process(dma_stream(env, loop, requests[s::k], per_run, f"stream{s}"))
    env.run()
    loop.drain()
    return max(ch.stats.last_data_cycle for ch in loop.front.channels)


# Before the controller was in the loop, the replay's closed-form timer, fed these patterns
# request by request, gave DRAMsim3's cycles times (DDR4 / HBM2): seq_read 1.003 / 0.999,
# seq_write 1.002 / 0.995, two_streams 1.009 / 1.075, row_strided 0.999 / 0.999, tile_2d
# 0.988 / 0.999, read_write_mix 5.977 / 3.161, random_reads 1.101 / 1.259, rate_limited
# 1.021 / 1.000, same_bank_conflict 0.997 / 1.081 (tests/dram/test_replay_timer.py).
@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("pattern", sorted(PATTERNS))
def test_dma_streams_through_the_loop_land_on_dramsim3s_cycles(config, pattern):
    """The nine validation patterns, one DMA transfer per stream (the mix: A, B and C; two
    streams: each operand) through the controller in the loop: DRAMsim3's recorded cycles,
    to the cycle (the issue asks for 3%; the controller is `cyclesim dram`'s, exact on them)."""
    assert cycles_through_the_loop(config, pattern) == REFERENCE[f"{config}/{pattern}"]["cycles"]


def test_the_trace_and_the_loop_are_one_controller():
    # the same requests through simulate_trace and through the loop's front end, all known up
    # front: every completion and the cycle count are equal
    c = load_dram_config("DDR4_8Gb_x8_2400")
    requests = PATTERNS["read_write_mix"]()[:300]
    env = ReplayEnvironment()  # the engine's: DramLoop queues its own calls
    loop = DramLoop(env, c, 1000 / c.tck_ns, record=True)
    pushed = [loop.push(a, op == "WRITE", cycle, None) for a, op, cycle in requests]
    done = env.process(_wait_all(loop, pushed))
    env.run(done)
    loop.drain()
    from cyclesim.dram.trace import Request

    trace = [Request(a, op == "WRITE", cycle) for a, op, cycle in requests]
    assert [r.complete for r in pushed] == completion_cycles(c, trace)
    ends = max(ch.stats.last_data_cycle for ch in loop.front.channels)
    assert ends == simulate_trace(c, trace).cycles


def _wait_all(loop, pushed):
    yield from loop.wait(pushed, False)


def request_addresses(runs, request_bytes, prev):
    """(offset, address) pairs of request_offsets' two lists."""
    return list(zip(*request_offsets(runs, request_bytes, prev), strict=True))


def test_a_lines_requests_are_its_own():
    # 64 B requests; a 100 B line at 32 (bytes 32..131) covers requests 0, 64 and 128 (its last
    # 4 B, from its byte 96); the next line (stride 96: bytes 128..227, from transfer byte 100)
    # starts on request 128 again, as its own line, then 192 (its byte 64: transfer byte 164)
    assert request_addresses([(32, 100, 96, 2)], 64, None) == [
        (0, 0), (32, 64), (96, 128), (100, 128), (164, 192),
    ]  # fmt: skip
    # going on from a call whose last burst ended in request 0: it is not issued again
    assert request_addresses([(32, 20, 0, 1)], 64, 0) == []


def test_a_gemv_through_the_controller_in_the_loop():
    # tests/dram/test_replay_dram.py's GEMV on one HBM2 channel, 1 accelerator cycle per DRAM
    # cycle, with `timing: controller`: A (64 B, bank 0) and B (at 2048: bank 1 of the same
    # bank group), one request each. A's burst holds the port over [0, 1), B's [1, 2) (B:
    # `contention` first). A arrives at 0 and enters at 0; the tick of cycle 1 moves it to its
    # command queue, the tick of 2 activates bank 0. B arrives at 1, enters at 1, reaches its
    # command queue at 2, and its activate waits tRRD_L = 6 after A's: 8; its read at 8 +
    # tRCDRD 14 = 22, its data done at 22 + CL 14 + 2 (a burst) = 38. So B's wait after its
    # burst, [2, 38): its row opened after it entered (`row_miss`) until its read at 22, then
    # the data `latency`. (The timer held B's port until A's column slot: 46 cycles.)
    from test_replay_dram import HBM, gemv, spans

    from cyclesim.analysis.simulate import replay, report_text

    res = replay(*gemv(dict(HBM, timing="controller")), progress=False)
    assert spans(res, "onload") == [
        (0, 1, "contention", "B"), (1, 2, "bandwidth", "B"), (2, 22, "row_miss", "B"),
        (22, 38, "latency", "B"),
    ]  # fmt: skip
    assert res.onload_cycles == 38
    # Z's write is done once it entered the write buffer: its port cycle, then the latency
    assert spans(res, "offload") == [(102, 103, "bandwidth", "Z"), (103, 104, "latency", "Z")]
    # three requests; A's and B's rows activated; Z's one write waits in the write buffer
    # (a drain starts at more than 8 writes, or when nothing follows: after the run)
    assert res.dram_summary[0]["requests"] == 3 and res.dram_summary[0]["activates"] == 2
    # and the report says which model timed the DRAM
    assert res.dram_summary[0]["timing"] == "controller"
    assert "  timing: cyclesim dram's controller in the loop" in report_text(res)


def test_dram_trace_needs_the_controller_and_writes_the_requests(tmp_path, capsys):
    from cyclesim.cli import main

    folder = ROOT / "examples" / "resnet50_dram"
    inputs = [str(ROOT / "hw_models" / "tpu_like_ddr4.yaml")]
    inputs += [str(folder / "workload.yaml"), str(folder / "mapping.yaml")]
    trace = tmp_path / "r.trace"
    assert main(["run", *inputs, "--dram-trace", str(trace), "--no-progress"]) == 2
    assert "timing: controller" in capsys.readouterr().err
    assert not trace.exists()


def test_fast_forward_skips_a_loop_without_requests_with_the_controller_in_the_loop(tmp_path):
    # tests/test_fast_forward_dram.py's layer loaded once from HBM2, with `timing: controller`:
    # no request is pushed and no transfer waits on the controller between its first and last
    # m iterations, so the same 61 periods are skipped; every record (each request's arrival,
    # entry and completion, the bank commands), the result and the VCD/Perfetto files are
    # those of the full replay; the write-back after the jump meets the refreshes the
    # controller did meanwhile
    from test_fast_forward import _plan, assert_identical, assert_same_result
    from test_fast_forward_dram import HBM, loaded_once

    arch, workload, tree = loaded_once(64)
    arch["memories"][0]["dram"] = dict(HBM, timing="controller")
    plan, inputs = _plan((arch, workload, tree))
    full = replay_plan(plan, trace=True, progress=False, fast_forward=False)
    fast = replay_plan(plan, trace=True, progress=False)
    assert (fast.fast_forward.jumps, fast.fast_forward.periods) == (1, 61)
    assert fast.rec.dram_requests == full.rec.dram_requests
    assert len(full.rec.dram_requests["DRAM"]) == 72  # A 64, B 4, Z 4 (64 B requests)
    # A's two rows and B's activated (the timer: Z's too; here Z's four writes wait in the
    # write buffer when the run ends); the refreshes due at 3,900 and 7,800 (the controller
    # does them at their cycles, the timer when a request comes)
    assert full.rec.dram_counts == fast.rec.dram_counts
    # column commands: the 72 requests less Z's four writes still in the write buffer
    assert full.rec.dram_counts["DRAM"] == {
        "requests": 72, "column_commands": 68, "row_hits": 65, "activates": 3, "refreshes": 2,
    }  # fmt: skip
    assert fast.rec.dram_banks == full.rec.dram_banks and fast.rec.dram_banks
    assert_identical(full, fast)
    assert_same_result(full, fast, tmp_path)
    assert "open_row" in (tmp_path / "fast" / "run.vcd").read_text()


def test_bank_signals_with_the_controller_equal_its_counts(tmp_path):
    # tests/views/test_dram_banks.py's GEMM (A's fills and Z's write-backs closing each other's
    # row, a refresh every 1500 cycles) with `timing: controller`: the VCD shows every
    # activate, refresh and open row the controllers did within the run
    sys.path.insert(0, str(HERE.parent / "views"))
    pytest.importorskip("pywellen")
    from test_dram_banks import bank_index, bank_waves, gemm_files

    from cyclesim.analysis.simulate import replay
    from cyclesim.views.vcd import write_vcd

    arch, workload, mapping = gemm_files(tmp_path)
    arch["memories"][0]["dram"]["timing"] = "controller"
    a = architecture_from_dict(arch, str(tmp_path / "arch.yaml"))
    w = workload_from_dict(workload, "workload.yaml")
    res = replay(a, w, mapping_from_dict(mapping, a, w, "mapping.yaml"), trace=True, progress=False)
    counts = res.raw.rec.dram_counts["DRAM"]
    assert counts["activates"] >= 32 and counts["refreshes"] >= 5
    write_vcd(res, tmp_path / "run.vcd")
    open_rows = res.raw.rec.dram_open_rows["DRAM"]
    activates, refreshes = 0, {}
    for scope, wave in bank_waves(tmp_path / "run.vcd").items():
        rows = [(t, r) for t, r in wave["open_row"] if isinstance(r, int)]
        activates += len(rows)  # an activate: the open row becomes a number, the bank active
        assert [t for t, s in wave["state"] if s == "active"] == [t for t, _ in rows], scope
        last = wave["open_row"][-1][1]  # the row open when the run ends (x: none)
        assert (last if isinstance(last, int) else -1) == open_rows[bank_index(scope)], scope
        starts = [t for t, s in wave["state"] if s == "refresh"]  # every bank of the rank
        assert refreshes.setdefault(bank_index(scope) // 16, starts) == starts, scope
    assert activates == counts["activates"]
    # (a refresh may still run when the run ends: counted here by its start)
    assert sum(len(starts) for starts in refreshes.values()) == counts["refreshes"]


def test_run_writes_the_dram_trace_that_cyclesim_dram_times_the_same(tmp_path, capsys):
    # the CLI as a user runs it: `cyclesim run ... --dram-trace FILE` writes every request the
    # replay made (reads and writes), and `cyclesim dram` on FILE with the same device times
    # them (each request's completion equal to the replay's: the property above)
    sys.path.insert(0, str(HERE.parent / "views"))
    from test_dram_banks import gemm_files

    from cyclesim.cli import main

    arch, workload, mapping = gemm_files(tmp_path)
    arch["memories"][0]["dram"]["timing"] = "controller"
    files = []
    for name, data in (("arch", arch), ("workload", workload), ("mapping", mapping)):
        files.append(tmp_path / f"{name}.yaml")
        files[-1].write_text(yaml.safe_dump(data))
    trace = tmp_path / "run.trace"
    args = ["run", *map(str, files), "--dram-trace", str(trace), "--json", "--no-progress"]
    assert main(args) == 0
    ran = json.loads(capsys.readouterr().out)
    requests = read_trace(trace)
    assert len(requests) == ran["dram"][0]["requests"] > 100
    assert {r.is_write for r in requests} == {False, True}  # A's fills and Z's write-backs
    assert main(["dram", str(tmp_path / "ddr4.ini"), str(trace), "--json"]) == 0
    timed = json.loads(capsys.readouterr().out)
    assert timed["requests"] == len(requests)


def test_dram_trace_into_a_new_folder_is_written_whole(tmp_path, capsys, monkeypatch):
    # `--dram-trace new/sub/run.trace` makes its folders, as --vcd and --events do (the CLI
    # checked beforehand that they can be made): it failed after the whole replay. And it is
    # written whole or not at all: a write that fails part way leaves no trace file.
    import errno

    sys.path.insert(0, str(HERE.parent / "views"))
    from test_dram_banks import gemm_files

    from cyclesim.cli import main

    arch, workload, mapping = gemm_files(tmp_path)
    arch["memories"][0]["dram"]["timing"] = "controller"
    files = []
    for name, data in (("arch", arch), ("workload", workload), ("mapping", mapping)):
        files.append(tmp_path / f"{name}.yaml")
        files[-1].write_text(yaml.safe_dump(data))
    trace = tmp_path / "new" / "sub" / "run.trace"
    args = ["run", *map(str, files), "--dram-trace", str(trace), "-q"]
    assert main(args) == 0
    assert len(read_trace(trace)) > 100
    capsys.readouterr()

    def half_then_full(self, text, *args, **kwargs):
        with open(self, "w") as f:  # a part written, then the disk is full
            f.write(text[: len(text) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    other = tmp_path / "other.trace"
    monkeypatch.setattr(Path, "write_text", half_then_full)
    assert main(["run", *map(str, files), "--dram-trace", str(other), "-q"]) == 2
    assert "No space left on device" in capsys.readouterr().err
    assert not other.exists()
