"""The row visits of a DRAM timer's requests: which requests go to one row in a row.

A transfer's strided byte runs become requests; consecutive requests to one row are one row
visit (first request, requests), which the timer times in one step (dram/column_timing.py).
Where a bank's queued requests go to several rows, FR-FCFS serves its open row's hits first
(hits_first). Part of the timer (dram/timer.py), compiled with it by `make native`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cyclesim.dram.timer import DramTimer


def visits_of(
    timer: DramTimer, runs: list[tuple[int, int, int, int]], who: object
) -> list[tuple[int, int]]:
    """The row visits [(first request, requests)] of strided byte runs, in order: requests
    to one row in a row are one visit. A request the same transfer's last call issued (a
    burst smaller than a request) is not issued again.

    Every tile of a node decomposes alike at another row, so the visits are memoised
    relative to the first run's DRAM row (row_visits is shift-invariant by whole rows,
    tests/dram/test_timer_fast_path.py)."""
    skip = timer.last_request.get(who)  # a request the same transfer's last burst issued
    if len(runs) == 1 and runs[0][3] == 1:  # one contiguous run: a step per row, no memo
        visits, last_q = row_visits(timer, runs, skip)
        if last_q is not None:
            timer.last_request[who] = last_q
        return visits
    if not runs:
        return []
    first = runs[0][0]
    base = first - first % timer.row_span
    base_q = base >> timer.shift
    key = (
        None if skip is None else skip - base_q,
        *[(a - base, size, stride, count, a % stride if stride else 0)
          for a, size, stride, count in runs],
    )  # fmt: skip
    memo = timer.visit_memo
    known = memo.get(key)
    if known is None:
        visits, last_q = row_visits(timer, runs, skip)
        if len(memo) >= 4096:  # bounded: a long replay's distinct tile shapes
            memo.clear()
        memo[key] = (
            [(q - base_q, n) for q, n in visits],
            None if last_q is None else last_q - base_q,
        )
    else:
        relative, last_q = known
        visits = [(q + base_q, n) for q, n in relative]
        if last_q is not None:
            last_q += base_q
    if last_q is not None:
        timer.last_request[who] = last_q
    return visits


def row_visits(
    timer: DramTimer, runs: list[tuple[int, int, int, int]], skip: int | None
) -> tuple[list[tuple[int, int]], int | None]:
    """visits_of computed: (visits, the last request) of the runs, request `skip` left out
    where it would be issued first."""
    shift, rb, row_shift = timer.shift, timer.request_bytes, timer.row_shift
    columns_low, columns, co_mask = timer.columns_low, timer.columns, timer.columns - 1
    last_q = None
    visits = []
    row_bytes = 1 << row_shift
    row_requests = row_bytes >> shift
    for address, size, stride, count in runs:
        lines_per_row = (
            row_bytes // stride if columns_low and stride and not row_bytes % stride else 0
        )
        x = 0
        while x < count:
            a = address + x * stride
            q = a >> shift
            if (
                columns_low and q != skip and ((a + size - 1) >> row_shift) == (a >> row_shift)
            ):  # this run and the following ones of the stride that end in the same row
                k = 1
                if count - x > 1 and stride:
                    row_end = ((a >> row_shift) + 1) << row_shift
                    k = min(count - x, (row_end - size - address) // stride - x + 1)
                q_end = (a + size + rb - 1) >> shift
                if k > 1 and (a % rb or stride % rb):  # runs not aligned to requests
                    n = sum(
                        ((a + y * stride + size + rb - 1) >> shift) - ((a + y * stride) >> shift)
                        for y in range(k)
                    )
                else:
                    n = k * (q_end - q)
                x += k
                visits.append((q, n))
                last_q = (a + (k - 1) * stride + size - 1) >> shift
                skip = None
                if count - x > lines_per_row > 0 and address % stride + size <= stride:
                    # the lines of a stride dividing the row: every full row holds the
                    # same lines and requests, its first line a row further each time
                    a = address + x * stride
                    q, rows = a >> shift, (count - x) // lines_per_row
                    if a % rb or stride % rb:
                        n = sum(
                            ((a + y * stride + size + rb - 1) >> shift)
                            - ((a + y * stride) >> shift)
                            for y in range(lines_per_row)
                        )
                    else:
                        n = lines_per_row * ((size + rb - 1) >> shift)
                    visits.extend([(q + r * row_requests, n) for r in range(rows)])
                    x += rows * lines_per_row
                    last_q = (address + (x - 1) * stride + size - 1) >> shift
                continue
            x += 1
            left = size  # one run, a row (or, with other mappings, a request) at a time
            while left > 0:
                q = a >> shift
                nxt = (q + 1) << shift
                if q == skip:  # its data came with that request: go on from the next one
                    skip = None
                    left -= nxt - a
                    a = nxt
                    continue
                skip = None
                if columns_low:
                    q_end = (a + left + rb - 1) >> shift
                    n = min(q_end - q, columns - (q & co_mask))
                else:
                    n = 1
                visits.append((q, n))
                last_q = q + n - 1
                step = ((q + n) << shift) - a
                a += step
                left -= step
    return visits, last_q


def hits_first(timer: DramTimer, visits: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The visits in the order FR-FCFS serves them where a bank's requests go to several
    rows: per bank, the oldest queued request that hits its open row goes first, else the
    oldest (which opens its row); a bank's queue holds its next `cmd_queue_size` requests.
    Each bank's requests keep the places in the sequence its requests had."""
    bank_mask, row_of = timer.bank_mask, timer.row_of
    rows: dict[int, int] = {}
    for q, _ in visits:
        bank, row = q & bank_mask, row_of(q)
        if rows.setdefault(bank, row) != row:
            break
    else:
        return visits  # one row per bank: nothing to reorder
    requests = [q for q, n in visits for _ in range(n)]  # each in its visit's row
    places: dict[int, list[int]] = {}
    for place, q in enumerate(requests):
        places.setdefault(q & bank_mask, []).append(place)
    size = timer.config.cmd_queue_size
    out = requests[:]
    for where in places.values():
        mine = [requests[place] for place in where]
        if all(row_of(q) == row_of(mine[0]) for q in mine):
            continue
        first = mine[0]
        open_row = timer.open_row[timer.bank_index(first)]
        queue, rest, served = mine[:size], size, []
        while queue:
            pick = next((i for i, q in enumerate(queue) if row_of(q) == open_row), 0)
            q = queue.pop(pick)
            served.append(q)
            open_row = row_of(q)
            if rest < len(mine):
                queue.append(mine[rest])
                rest += 1
        for place, q in zip(where, served, strict=True):
            out[place] = q
    merged: list[tuple[int, int]] = []  # requests to one row in a row: one visit
    same = timer.columns_low  # else every request is a visit of its own (as in visits_of)
    for q in out:
        if same and merged:
            last = merged[-1][0]
            if last & bank_mask == q & bank_mask and row_of(last) == row_of(q):
                merged[-1] = (last, merged[-1][1] + 1)
                continue
        merged.append((q, 1))
    return merged
