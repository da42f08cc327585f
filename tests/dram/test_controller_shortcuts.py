"""The controller's two shortcuts change nothing: the earliest ready time kept in a heap
(Channel.next_change) and no rescan for a transaction to move while nothing it reads moved
(Channel._schedule_transaction). Checked against the controller without them on dense
streams, the case that fills every queue and makes the shortcuts fire."""

from __future__ import annotations

from itertools import chain

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cyclesim.dram.frontend as frontend
from cyclesim.dram.controller import Channel
from cyclesim.dram.frontend import FrontEnd, Request
from cyclesim.dram.load import load_dram_config


class PlainChannel(Channel):
    """The controller without its shortcuts: every tick scans the transaction queue, and an
    idle stretch ends at the earliest ready time found by scanning every bank's times."""

    def _schedule_transaction(self) -> None:
        self._found_no_room = None  # no scan is ever skipped
        super()._schedule_transaction()

    def next_change(self) -> int:
        t, interval = self.clk, self.refresh_interval
        nxt = (t // interval + 1) * interval if t > 0 else interval
        if t % interval == 0 and t > 0:
            nxt = t
        nxt = min(nxt, min(filter(t.__le__, chain.from_iterable(self.ready_at)), default=nxt))
        for window in self.activation_windows:
            for v in window:
                if t <= v < nxt:
                    nxt = v
        return max(nxt, t)


def completions(config, requests, channel_class, monkeypatch):
    """Each request's (entered, completed, served) and every channel's command log."""
    monkeypatch.setattr(frontend, "Channel", channel_class)
    pushed = [Request(a, w, c) for a, w, c in requests]
    front = FrontEnd(config, keep_commands=True)
    for r in pushed:
        front.push(r)
    front.run_until(None, flush_at_end=True)
    return [(r.entered, r.complete, r.trans.served) for r in pushed], [
        c.stats.log for c in front.channels
    ]


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
    requests = []
    for line, count, is_write in streams:
        requests += [(64 * (line + n), is_write) for n in range(count)]
    arrivals = [0]
    for k in range(1, len(requests)):
        arrivals.append(arrivals[-1] + gaps[k % len(gaps)])
    requests = [(a, w, c) for (a, w), c in zip(requests, arrivals, strict=True)]
    with pytest.MonkeyPatch.context() as mp:
        fast = completions(conf, requests, Channel, mp)
        plain = completions(conf, requests, PlainChannel, mp)
    assert fast == plain
