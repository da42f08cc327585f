"""`cyclesim dram`: hand-derived DDR4 timings, DRAMsim3's recorded numbers, skipping, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from patterns import PATTERNS

from cyclesim.dram.load import load_dram_config
from cyclesim.dram.presets import PRESET_NAMES
from cyclesim.dram.trace import Request, read_trace, simulate_trace
from cyclesim.errors import SpecError

HERE = Path(__file__).parent
DDR4 = load_dram_config("DDR4_8Gb_x8_2400")
REFERENCE = json.loads((HERE / "dramsim3_reference.json").read_text())


def run(requests, config=DDR4, **kw):
    return simulate_trace(config, [Request(a, w, c) for a, w, c in requests], **kw)


# DDR4-2400: CL 17, tRCD 17, tRP 17, tRAS 39, tCCD_L 6, BL8 = 4 cycles, tRTP 9.
# A request of cycle c reaches the controller's queue at c + 1 and its command queue at the
# tick of c + 1, so its first command can issue at c + 2 (DRAMsim3's front end).


def test_one_read_to_a_closed_bank():
    # ACT at 2, READ at 2 + tRCD = 19, data ends 19 + CL 17 + burst 4 = 40.
    r = run([(0, False, 0)])
    assert (r.cycles, r.activates, r.row_hits) == (40, 1, 0)


def test_a_second_read_of_the_open_row_is_a_hit():
    # READ 19, next READ of the same bank group after tCCD_L: 25, ends 25 + 21 = 46.
    r = run([(0, False, 0), (64, False, 1)])
    assert (r.cycles, r.activates, r.row_hits, r.row_hit_rate) == (46, 1, 1, 0.5)


def test_another_row_of_the_same_bank_pays_precharge_and_activate():
    # ACT 2, READ 19; PRE at max(19 + tRTP 9, 2 + tRAS 39) = 41; ACT 41 + tRP 17 = 58;
    # READ 58 + tRCD 17 = 75; ends 75 + 21 = 96. Address 8 MiB up: same bank, next row.
    r = run([(0, False, 0), (8 << 20, False, 1)])
    assert (r.cycles, r.activates, r.precharges, r.row_hits) == (96, 2, 1, 0)


def test_refresh_takes_the_rank_for_trfc():
    # Two ranks: a refresh every tREFI / 2 = 4680 cycles, rank 0 first. It issues at 4680
    # (all banks closed); rank 0 may activate again at 4680 + tRFC 420 = 5100: READ 5117,
    # data ends 5117 + 21 = 5138.
    r = run([(0, False, 4700)])
    assert (r.cycles, r.refreshes) == (5138, 1)


@pytest.mark.parametrize("case", sorted(REFERENCE["results"]))
def test_agrees_with_dramsim3(case, tmp_path):
    """DRAMsim3's cycles, row-hit rate and column and activate counts, exactly.

    The issue's target is 3% of cycles and 0.02 of row-hit rate; the trace mode matches
    DRAMsim3 exactly on every pattern, so any difference is a regression."""
    config_name, pattern = case.split("/")
    ref = REFERENCE["results"][case]
    requests = [Request(a, op == "WRITE", c) for a, op, c in PATTERNS[pattern]()]
    ours = simulate_trace(load_dram_config(config_name), requests)
    assert ours.cycles == ref["cycles"]
    assert round(ours.row_hit_rate, 6) == ref["row_hit_rate"]
    assert (ours.read_commands, ours.write_commands, ours.activates) == (
        ref["num_read_cmds"], ref["num_write_cmds"], ref["num_act_cmds"]
    )  # fmt: skip


requests_strategy = st.lists(
    st.tuples(
        st.integers(0, (1 << 28) // 64 - 1).map(lambda line: line * 64),
        st.booleans(),
        st.integers(0, 40),
    ),
    min_size=1,
    max_size=40,
).map(lambda rows: [(a, w, sum(r[2] for r in rows[: i + 1])) for i, (a, w, _) in enumerate(rows)])


@settings(max_examples=40, deadline=None)
@given(requests=requests_strategy, config=st.sampled_from(PRESET_NAMES))
def test_skipping_idle_cycles_changes_nothing(requests, config):
    """Jumping over cycles in which nothing can happen gives the same commands at the same cycles."""
    conf = load_dram_config(config)
    fast = run(requests, conf, keep_commands=True)
    slow = run(requests, conf, keep_commands=True, skip_idle=False)
    assert fast == slow
    # every request is served: a column command per distinct pending address at least
    assert fast.read_commands + fast.write_commands >= 1
    # the last request's column command cannot issue before its cycle: its data ends later
    assert fast.cycles >= max(c for _, _, c in requests) + min(conf.read_delay, conf.write_delay)


def test_an_ini_file_reads_as_the_preset(tmp_path):
    ini = tmp_path / "ddr4.ini"
    ini.write_text(
        "[dram_structure]\nprotocol = DDR4\nbankgroups = 4\nbanks_per_group = 4\nrows = 65536\n"
        "columns = 1024\ndevice_width = 8\nBL = 8\n\n[timing]\ntCK = 0.83\nAL = 0\nCL = 17\n"
        "CWL = 12\ntRCD = 17\ntRP = 17\ntRAS = 39\ntRFC = 420\ntREFI = 9360\ntRRD_S = 4\n"
        "tRRD_L = 6\ntWTR_S = 3\ntWTR_L = 9\ntFAW = 26\ntWR = 18\ntRTP = 9\ntCCD_S = 4\n"
        "tCCD_L = 6\ntRTRS = 1 ; comment\n\n[system]\nchannel_size = 16384\nchannels = 1\n"
        "bus_width = 64\naddress_mapping = rochrababgco\nqueue_structure = PER_BANK\n"
        "refresh_policy = RANK_LEVEL_STAGGERED\nrow_buf_policy = OPEN_PAGE\n"
        "cmd_queue_size = 8\ntrans_queue_size = 32\n\n[power]\nVDD = 1.2\n"
    )
    from dataclasses import replace

    assert replace(load_dram_config(ini), name=DDR4.name) == DDR4


@pytest.mark.parametrize(
    "text, field, line",
    [
        ("[dram_structure]\nprotocol = DDR9\n", "protocol", 2),
        ("[timing]\nCL = seventeen\n", "CL", 2),
        ("[timing]\n\ntRCD = -1\n", "tRCD", 3),
        ("[system]\naddress_mapping = rorochbabgco\n", "address_mapping", 2),
        ("[dram_structure]\nrows = 1000\n", "rows", 2),
    ],
)
def test_a_bad_config_names_file_field_and_line(tmp_path, text, field, line):
    ini = tmp_path / "bad.ini"
    ini.write_text(text)
    with pytest.raises(SpecError) as info:
        load_dram_config(ini)
    assert (info.value.file, info.value.field, info.value.line) == (str(ini), field, line)


@pytest.mark.parametrize(
    "text, line, message",
    [
        # configparser says "Source contains parsing errors" with no line for these two
        ("[dram_structure]\nprotocol = DDR4\ntiming]\nCL = 17\n", 3, "neither a [section]"),
        ("[timing]\nCL = 17\ntRCD  17\n", 3, "neither a [section]"),
        ("tCK = 1\n[timing]\n", 1, "not a DRAMsim3 .ini: a line before the first [section]"),
        # a key no DRAMsim3 config has, even beyond the "did you mean" distance
        ("[timing]\nCL = 17\nCWL-x = 30\n", 3, "unknown key 'CWL-x' in [timing]; [timing] takes"),
        ("[timing]\nCL = 17\n\nCL = 18\n", 4, "key 'CL' given twice in [timing]"),
        ("[timing]\nCL = 17\n[timing]\n", 3, "section [timing] given twice"),
        # A key DRAMsim3 would silently ignore, putting its default in place of the value meant:
        # in another case, misspelt, or under another section (a missing [timing] header files the
        # timing keys under [dram_structure]). Each is refused at its line.
        ("[timing]\nCL = 17\ntrcd = 17\n", 3, "unknown key 'trcd' in [timing]: keys are case-"),
        ("[timing]\ntRPP = 17\n", 2, "unknown key 'tRPP' in [timing]: did you mean 'tRP'"),
        ("[system]\ncmd_queue_sise = 8\n", 2, "unknown key 'cmd_queue_sise' in [system]: did"),
        ("[dram_structure]\nBL = 8\ntCK = 0.83\nCL = 17\n", 3, "key 'tCK' belongs in [timing]"),
        ("[timing]\nchannels = 2\n", 2, "key 'channels' belongs in [system], not [timing]"),
    ],
)
def test_an_ini_that_is_not_ini_or_has_a_key_dramsim3_would_ignore_names_its_line(
    tmp_path, text, line, message
):
    ini = tmp_path / "bad.ini"
    ini.write_text(text)
    with pytest.raises(SpecError) as info:
        load_dram_config(ini)
    assert (info.value.file, info.value.line) == (str(ini), line)
    assert str(info.value).startswith(f"{ini}:{line}: {message}"), str(info.value)
    assert "While reading" not in str(info.value)  # the file is named once, in front


def test_keys_dramsim3_reads_for_power_or_its_configs_carry_are_not_mistakes(tmp_path):
    """DRAMsim3's DDR4_8Gb_x8_2400.ini carries tRFC2, tWR2, tXP, IDD3P, queue_size,
    refresh_strategy ... that neither tool times with; its DDR3 files spell tREFI as REFI,
    which DRAMsim3 ignores too (refreshing at its default). All of them load."""
    ini = tmp_path / "shipped.ini"
    ini.write_text(
        "[dram_structure]\nprotocol = DDR4\n[timing]\ntCK = 0.833\ntRFC = 420\n"
        "tRFC2 = 312\ntWR2 = 1\ntXP = 8\ntRPRE = 1\nREFI = 7800\ntRTP_L = 5\n"
        "[power]\nVDD = 1.2\nIDD3P = 37\n[system]\nqueue_size = 16\n"
        "refresh_strategy = RANK_LEVEL_STAGGERED\nreq_buffering_enabled = true\n"
        "[other]\nepoch_period = 1000000\n"
    )
    config = load_dram_config(ini)
    assert (config.tRFC, config.tREFI) == (420, 7800)


@pytest.mark.parametrize(
    "text, line",
    [
        ("0x40 READ 0\n0x80 FETCHX 1\n", 2),
        ("0x40 READ 5\n0x80 READ 4\n", 2),
        ("zz READ 0\n", 1),
        ("0x40 READ\n", 1),
    ],
)
def test_a_bad_trace_line_is_refused_with_its_line(tmp_path, text, line):
    trace = tmp_path / "t.trace"
    trace.write_text(text)
    with pytest.raises(SpecError) as info:
        read_trace(trace)
    assert info.value.line == line


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n"])
def test_a_trace_without_requests_is_refused(tmp_path, text):
    trace = tmp_path / "t.trace"
    trace.write_text(text)
    with pytest.raises(SpecError, match="no requests in the trace") as info:
        read_trace(trace)
    assert info.value.file == str(trace)


def test_cli_reports_and_refuses_like_a_user_sees_it(tmp_path):
    trace = tmp_path / "t.trace"
    trace.write_text("0x0 READ 0\n0x40 READ 1\n")
    cmd = [sys.executable, "-m", "cyclesim", "dram"]
    ok = subprocess.run([*cmd, "DDR4_8Gb_x8_2400", str(trace), "--json"], capture_output=True,
                        text=True)  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["cycles"] == 46
    text = subprocess.run([*cmd, "HBM2_8Gb_x128", str(trace)], capture_output=True, text=True)
    assert text.returncode == 0 and "row-hit rate" in text.stdout
    # two reads, counted in words a reader expects; a trace without reads has no read latency
    assert text.stdout.startswith(
        "2 requests (2 reads, 0 writes) on HBM2_8Gb_x128: HBM, 8 channels"
    )
    trace.write_text("0x0 WRITE 0\n")
    writes = subprocess.run([*cmd, "DDR4_8Gb_x8_2400", str(trace)], capture_output=True, text=True)
    assert writes.stdout.startswith(
        "1 request (0 reads, 1 write) on DDR4_8Gb_x8_2400: DDR4, 1 channel x 2 ranks x 16 banks"
    )
    assert "read latency (cycles)          - (no reads)" in writes.stdout
    doc = subprocess.run([*cmd, "DDR4_8Gb_x8_2400", str(trace), "--json"], capture_output=True,
                         text=True)  # fmt: skip
    assert json.loads(doc.stdout)["read_latency_cycles"] == dict.fromkeys(
        ("mean", "p50", "p95", "max")
    )  # null, not 0
    trace.write_bytes(b"\xff\xfe")
    bad = subprocess.run([*cmd, "DDR4_8Gb_x8_2400", str(trace)], capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and str(trace) in bad.stderr


@pytest.mark.parametrize(
    "option, message",
    [
        (
            ["--channels", "3"],
            "cyclesim: --channels 3: not a power of two; expected a power of two\n",
        ),
        (["--address-mapping", "foo"], "cyclesim: --address-mapping foo: not a permutation"),
    ],
)
def test_a_wrong_override_is_the_options_fault(tmp_path, capsys, option, message):
    # it was reported as "preset DDR4_8Gb_x8_2400: field 'channels'", as if the preset were wrong
    from cyclesim.cli import main

    trace = tmp_path / "t.trace"
    trace.write_text("0x0 READ 0\n")
    assert main(["dram", "DDR4_8Gb_x8_2400", str(trace), *option]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1 and "preset" not in err


@pytest.mark.parametrize("config", PRESET_NAMES)
@pytest.mark.parametrize("policy", ["RANK_LEVEL_STAGGERED", "RANK_LEVEL_SIMULTANEOUS"])
def test_a_long_idle_gap_is_skipped_whole_refresh_periods_at_a_time(config, policy, monkeypatch):
    """Idle but for refresh, a channel repeats every refresh period (tREFI / ranks per rank in
    turn, or tREFI for all ranks at once); a gap of several periods between requests is
    skipped whole periods at a time, with the same commands at the same cycles as ticking
    through it (rows left open before the gap, a write, a read of another bank after it)."""
    conf = load_dram_config(config).with_changes(refresh_policy=policy)
    period = conf.tREFI
    requests = [(0x0, False, 0), (0x40, True, 3), (0x2000, False, 5),
                (0x40000, False, 7 * period + 123), (0x0, True, 9 * period + 5),
                (0x80, False, 9 * period + 6)]  # fmt: skip
    from cyclesim.dram import frontend, native
    from cyclesim.dram.controller import Channel

    # the pure-Python controller, whose method can be wrapped (a compiled class's cannot)
    for name in ("FrontEnd", "Request", "Channel"):
        monkeypatch.setattr(native, name, getattr(frontend, name))
    skips = []
    advance = Channel.advance
    monkeypatch.setattr(Channel, "advance", lambda ch, *a: skips.append(a) or advance(ch, *a))
    fast = run(requests, conf, keep_commands=True)
    assert skips  # the gaps were skipped, not ticked through
    slow = run(requests, conf, keep_commands=True, skip_idle=False)
    assert fast == slow
    assert fast.refreshes >= 8  # one command per refresh (of one rank, or of all at once)


def test_a_trace_spanning_2_to_the_47_cycles_finishes():
    """Its refreshes are counted, not ticked: one per rank every tREFI (it used to run for
    days: 2**47 cycles / 4,680 between refreshes is 3e10 refreshes, each several ticks)."""
    cycle = 1 << 47
    result = run([(0x0, False, 0), (0x40, False, cycle)])
    interval = DDR4.tREFI // DDR4.ranks  # staggered: one rank every interval
    assert abs(result.refreshes - cycle // interval) <= 2
    assert result.cycles >= cycle
