"""The controller's shortcuts change nothing: an idle stretch ends where the last scan of the
command queues found the first command becomes ready (Channel.next_change), no rescan of a
command queue while nothing it reads moved and no time it waited on came
(Channel._command_to_issue), and a scan for a transaction to move that resumes after those it
found no room for while no command queue changed (Channel._schedule_transaction). Checked
against the controller without them on dense streams, the case that fills every queue and
makes the shortcuts fire."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cyclesim.dram.frontend as frontend
from cyclesim.dram.controller import Channel
from cyclesim.dram.frontend import FrontEnd, Request
from cyclesim.dram.load import load_dram_config
from cyclesim.errors import DeadlockError


class PlainChannel(Channel):
    """The controller without its shortcuts: every tick scans the transaction queue and every
    command queue, and an idle stretch ends at the earliest ready time found by scanning every
    bank's times."""

    def _schedule_transaction(self) -> None:
        self._no_room_moves = -1  # no scan is ever skipped or resumed
        super()._schedule_transaction()

    def _command_to_issue(self):
        self._scanned_moves = -1  # no scan is ever skipped, of all queues or of one
        self._queue_stale = [True] * self.num_queues
        return super()._command_to_issue()

    def next_change(self) -> int:
        t, interval = self.clk, self.refresh_interval
        nxt = (t // interval + 1) * interval if t > 0 else interval
        if t % interval == 0 and t > 0:
            nxt = t
        nxt = min(nxt, min(filter(t.__le__, self.ready), default=nxt))
        for window in self.activation_windows:
            for v in window:
                if t <= v < nxt:
                    nxt = v
        return max(nxt, t)


def completions(config, requests, channel_class, monkeypatch):
    """Each request's (entered, completed, served) and every channel's command log; or, where
    DRAMsim3's scheduling would loop for ever, the DeadlockError's message."""
    monkeypatch.setattr(frontend, "Channel", channel_class)
    pushed = [Request(a, w, c) for a, w, c in requests]
    front = FrontEnd(config, keep_commands=True)
    for r in pushed:
        front.push(r)
    try:
        front.run_until(None, flush_at_end=True)
    except DeadlockError as e:
        return str(e)
    return [(r.entered, r.complete, r.trans.served) for r in pushed], [
        c.stats.log for c in front.channels
    ]


def stream_requests(streams, gaps) -> list[tuple[int, bool, int]]:
    """(address, is write, arrival) of streams of consecutive 64-byte lines (first line, lines,
    is write), one after another, the k-th request gaps[k % len(gaps)] cycles after the one
    before."""
    requests = []
    for line, count, is_write in streams:
        requests += [(64 * (line + n), is_write) for n in range(count)]
    arrivals = [0]
    for k in range(1, len(requests)):
        arrivals.append(arrivals[-1] + gaps[k % len(gaps)])
    return [(a, w, c) for (a, w), c in zip(requests, arrivals, strict=True)]


# streams of consecutive 64-byte lines (a row run), each read or written, starting at a random
# line, with 0-3 cycles between requests: arrivals far faster than the DRAM serves them
streams = st.lists(
    st.tuples(st.integers(0, (1 << 26) // 64 - 1), st.integers(1, 120), st.booleans()),
    min_size=1,
    max_size=4,
)


@settings(max_examples=25, deadline=None)
@given(streams=streams, gaps=st.lists(st.integers(0, 3), min_size=1, max_size=16),
       config=st.sampled_from(["DDR4_8Gb_x8_2400", "HBM2_8Gb_x128"]),
       often=st.booleans())  # fmt: skip
def test_the_shortcuts_give_every_request_the_same_cycles(streams, gaps, config, often):
    """Same entry, completion and cause info per request, same commands at the same cycles;
    `often`: a refresh every tRFC + 200 cycles, several inside the streams."""
    conf = load_dram_config(config)
    if often:
        conf = conf.with_changes(tREFI=conf.tRFC + 200)
    requests = stream_requests(streams, gaps)
    with pytest.MonkeyPatch.context() as mp:
        fast = completions(conf, requests, Channel, mp)
        plain = completions(conf, requests, PlainChannel, mp)
    assert fast == plain


def test_a_write_behind_an_older_read_of_its_address_under_a_full_write_buffer_is_a_deadlock(
    monkeypatch,
):
    # Reads of lines 369..415, then writes of lines 408..502 (and two write streams before):
    # the writes to 408..415 have an older read of the same address still queued. Once the
    # write buffer is full, DRAMsim3's ScheduleTransaction starts a write drain every cycle,
    # meets that write first, gives the drain up (the read must go first) and never moves a
    # read: it loops for ever. The controller says so instead of hanging (hypothesis found
    # this stream in the property test above).
    conf = load_dram_config("DDR4_8Gb_x8_2400")
    streams = [(60, 29, True), (125, 102, True), (369, 47, False), (408, 95, True)]
    requests = stream_requests(streams, [3, 0, 0, 2, 2, 0, 1, 2, 0])
    message = completions(conf, requests, Channel, monkeypatch)
    assert isinstance(message, str) and "waits for an older read of the same address" in message
    assert completions(conf, requests, PlainChannel, monkeypatch) == message


def test_cyclesim_dram_on_that_stream_says_so_and_exits_3(tmp_path, capsys):
    # the same requests as a trace file: one line on stderr, exit code 3 (cannot progress)
    from cyclesim.cli import main

    streams = [(60, 29, True), (125, 102, True), (369, 47, False), (408, 95, True)]
    lines = [
        f"{a:#x} {'WRITE' if w else 'READ'} {c}\n"
        for a, w, c in stream_requests(streams, [3, 0, 0, 2, 2, 0, 1, 2, 0])
    ]
    trace = tmp_path / "deadlock.trace"
    trace.write_text("".join(lines))
    assert main(["dram", "DDR4_8Gb_x8_2400", str(trace), "--channels", "1"]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "DRAMsim3's scheduling loops" in err[0]
