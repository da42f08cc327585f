"""Where a DRAM timer's row streams of two bank groups interleave (FR-FCFS at tCCD_S).

Per row visit, the request from which its column commands go at the other-bank-group pace
because a row of another bank group is queued behind it (dram/column_timing.py reads it). Part
of the timer (dram/timer.py), compiled with it by `make native`.
"""

from __future__ import annotations

from itertools import accumulate
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cyclesim.dram.column_timing import Visit
    from cyclesim.dram.timer import DramTimer


def paces(
    timer: DramTimer, visits: list[Visit], following: list[Visit], index: int, write: bool
) -> list[int]:
    """Per visit, the request index from which its row stream is paced with another bank
    group's (FR-FCFS interleaves the two: one column command every tCCD_S, each group's
    own still tCCD_L apart), or past the visit's end.

    A run of visits in one bank group (and rank) of a channel is followed, on that channel,
    by visits of other groups (in `visits` or `following`): their first request enters the
    queue once the request `queue` before it is served, their row is open `overlap_lead`
    column commands later, and from there the two interleave until either runs out: the
    run's last requests, at most as many as the other groups' requests before this group's
    next (the partners, counted up to `queue`)."""
    every = visits + following if following else visits
    group = timer.group_mask
    keys = [q & group for q, _ in every]  # channel, rank and bank group
    count = len(visits)
    if not count or keys.count(keys[0]) == len(keys):  # one bank group: nothing to pace
        return [1 << 62] * count
    sizes = [n for _, n in every]
    # the visits' groups and sizes repeat from call to call (a tile's rows cycle through
    # the banks): the paces from request 0 are memoised, and move with `index`
    memo_key = (write, count, tuple(keys), tuple(sizes))
    memo = timer.pace_memo
    relative = memo.get(memo_key)
    if relative is None:
        if len(memo) >= 4096:  # bounded
            memo.clear()
        relative = memo[memo_key] = paces_from(timer, keys, sizes, count, write)
    return [p + index for p in relative]


def paces_from(
    timer: DramTimer, keys: list[int], sizes: list[int], count: int, write: bool
) -> list[int]:
    """paces of visits with these groups and sizes, the first request being request 0."""
    window, lead = timer.queue, timer.overlap_lead[write]
    starts = list(accumulate(sizes, initial=0))
    total = len(keys)
    never = starts[-1] + 1
    paced = [never] * count
    if timer.config.channels == 1:  # one channel: the next visit on it is the next one
        nexts: list[int | None] = list(range(1, total)) + [None]
    else:
        ch_pos, ch_mask = timer.channel_field  # a key holds its visit's channel bits
        after: dict[int, int] = {}  # channel -> the next visit on it (scanning backward)
        nexts = [None] * total
        for v in range(total - 1, -1, -1):
            ch = (keys[v] >> ch_pos) & ch_mask
            nexts[v] = after.get(ch)
            after[ch] = v
    for v in range(count - 1, -1, -1):
        u = nexts[v]
        if u is None:
            continue
        key = keys[v]
        if keys[u] == key:  # the same group goes on: its run's pace is the next visit's
            paced[v] = paced[u] if u < count else never
            continue
        partners, w = 0, u  # the other groups' requests before this group comes back
        while partners < window:
            partners += sizes[w]
            upcoming = nexts[w]
            if upcoming is None or keys[upcoming] == key:
                break
            w = upcoming
        nxt = starts[u]
        paced[v] = max(nxt - window + lead, nxt - min(partners, window))
    return paced
