"""The DRAM timer's column commands: a row visit timed in closed form, a piece at a time.

A row visit (consecutive requests to one row) gets its first column command once the data
bus, the row (precharge, activate: tRP, tRRD, tFAW) and the read/write turnaround allow, and
the rest evenly spaced after it (tCCD_L, or tCCD_S where two bank groups' row streams
interleave: dram/paces.py), exactly as if each were timed alone
(tests/dram/test_timer_fast_path.py). A visit splits into pieces where a refresh falls, where
the calendar's gap it fills ends, or where a request enters the queue late. The state it
reads and changes is the timer's (dram/timer.py); compiled with it by `make native`.
"""

from __future__ import annotations

from bisect import bisect_right
from operator import itemgetter
from typing import TYPE_CHECKING, Final

from cyclesim.dram.paces import paces
from cyclesim.vocabulary import BankCommand

if TYPE_CHECKING:
    from cyclesim.dram.timer import DramTimer

# Final: constants the compiled timer (make native, dram/native.py) reads directly
ROW_MISS: Final = "row_miss"
BANK_CONFLICT: Final = "bank_conflict"
REFRESH: Final = "refresh"
TURNAROUND: Final = "turnaround"
CONTENTION: Final = "contention"
NO_ROW: Final = -1
START: Final = itemgetter(0)

# the types of the timer's records: a row visit (first request, requests); a delay (start, end,
# cause, row opener, (channel, bank, row)); a piece of a visit (first request index, first
# column, spacing, channel); a calendar entry (first cycle, last cycle, spacing, is write,
# rank, bank group, requester); a rank's recent activates ((cycle, bank group), ...)
Visit = tuple[int, int]
Delay = tuple[int, int, str, object, tuple[int, int, int]]
Piece = tuple[int, int, int, int]
Command = tuple[int, int, int, bool, int, int, object]
Activates = tuple[tuple[int, int], ...]


def time_visits(
    timer: DramTimer,
    visits: list[Visit],
    write: bool,
    who: object,
    s0: int,
    index: int,
    delays: list[Delay],
    following: list[Visit],
) -> tuple[int, int]:
    """Time row visits [(first request, requests)] in order, the first request arriving at
    DRAM cycle s0 + index; append the delays; return (DRAM cycle the last request's data bus
    slot ends, requests issued).

    Why one function of ~280 lines: it is the replay's DRAM hot path, one loop iteration per
    piece of a row visit with every table and bank-state list bound to a local; split into
    helpers, each piece would pay calls and re-binding (most in pure Python), and the pieces
    of its loop (calendar gap, refresh, activate, queue cut) share a dozen locals.

    A visit is a row run in closed form: its first column command waits for the data bus
    (`base`: the command before the calendar gap it goes in, plus its delay), the row (an
    activate, after a precharge if another row is open) and the read/write turnaround; the
    cycles past `base` go to the row's cause, then to `turnaround`; the others follow every
    `spacing` cycles (tCCD_S where paces() interleaves it with another bank group's). A
    refresh due before a command is done first. `following` are visits queued behind these
    (for the pace only).

    Over 80 lines: the DRAM timer's inner loop (compiled by mypyc); every step reads and updates
    the same bank, rank, bus and calendar cycles, which a split would pass back and forth.
    """
    (
        ranks, ch_pos, ch_mask, ra_pos, ra_mask, bg_pos, bg_mask, ba_pos, ba_mask, ro_pos,
        ro_mask, bankgroups, banks_per_group, per_channel, queue, burst, same_direction,
        other_direction, open_row, opener, open_cause, closed_by_refresh, act_ready,
        col_ready, pre_ready, calendars, all_acts, next_refreshes, tRC, tRAS, tRP, tFAW,
        rrd_same, rrd_other, act_to_col, col_to_pre, data_tail, close_page, refresh, log,
        name, to_accel, channels, col_table,
    ) = timer.frame[write]  # fmt: skip
    for cal in calendars:  # commands long before this call's requests no longer matter
        if len(cal) > 8:
            k = bisect_right(cal, s0, key=START) - 1
            if k > 0:
                del cal[:k]
    slow = spacing = same_direction[0]
    fast = same_direction[1]  # the pace of two bank groups' interleaved row streams
    paced = paces(timer, visits, following, index, write) if fast < slow else None
    owed = timer.owed.get(who)
    if owed is None:
        owed = timer.owed[who] = [(0, None)] * channels
    tails = [0] * channels  # per channel: requests of its current group's run paced fast
    data_end = activates = hits = 0
    # per piece of a visit: (first request index, first column, spacing, channel)
    chunks: list[Piece] = []
    run_channel, run_start = -1, index
    index0 = index
    end = s0
    behind = 0  # the chunk holding request index - queue (it only moves forward)
    reordered = False  # a piece went before commands timed already (FR-FCFS)
    for v, (q, n) in enumerate(visits):
        ch = (q >> ch_pos) & ch_mask
        rank = (q >> ra_pos) & ra_mask
        bg = (q >> bg_pos) & bg_mask
        head_end, tail_start = index, index + n  # [index, head_end), [tail_start, ..) fast
        if paced is not None:
            key = (rank, bg)
            count, owed_key = owed[ch]
            if owed_key != key:  # the partners of another group's run: paced with it
                if count:
                    head = count if count < n else n
                    head_end = index + head
                    owed[ch] = (count - head, owed_key)
                tails[ch] = 0
            elif count:  # this group again: the other groups' partners are done
                owed[ch] = (0, None)
            tail_start = paced[v] if paced[v] > index else index
            if tail_start < index + n:
                tails[ch] += index + n - tail_start
                owed[ch] = (tails[ch], key)
        b = ch * per_channel + (rank * bankgroups + bg) * banks_per_group
        b += (q >> ba_pos) & ba_mask
        row = (q >> ro_pos) & ro_mask
        next_refresh = next_refreshes[ch]
        cal = calendars[ch]  # the channel's calendar (the same list throughout)
        rank_at = ch * ranks + rank  # the rank's recent activates: all_acts[rank_at]
        first = None
        piece = index  # the request a piece of the visit starts with
        left = n
        while True:  # a piece: requests up to a refresh, or one that enters the queue late
            arrive = s0 + piece
            if piece < head_end or piece >= tail_start:
                spacing, pace_end = fast, head_end if piece < head_end else index + n
            else:
                spacing, pace_end = slow, tail_start
            if piece - index0 >= queue:  # the queue holds `queue` requests at most
                target = piece - queue
                while behind + 1 < len(chunks) and chunks[behind + 1][0] <= target:
                    behind += 1
                first_index, first_col, first_spacing, _ = chunks[behind]
                column = first_col + (target - first_index) * first_spacing
                if column > arrive:
                    arrive = column
            # no gap ending before the row can be ready (a lower bound) can hold the piece
            if open_row[b] == row:
                low = col_ready[b]
            elif open_row[b] != NO_ROW:
                low = (pre_ready[b] if pre_ready[b] > arrive else arrive) + tRP + act_to_col
            else:
                low = (act_ready[b] if act_ready[b] > arrive else arrive) + act_to_col
            if low < arrive:
                low = arrive
            if not cal or cal[-1][0] <= low:  # after every command so far (streaming)
                k = len(cal) - 1
            else:
                k = -1 if cal[0][0] > low else bisect_right(cal, low, key=START) - 1
                if k >= 0:  # the command before the gap (each entry is read once)
                    _, last_t, _, was_write, r, g, _ = cal[k]
                    scope = 2 if r != rank else (0 if g == bg else 1)
                count_cal = len(cal)
                while k + 1 < count_cal:  # skip the gaps even the lower bound misses
                    e = low
                    if k >= 0:
                        t = last_t + (
                            other_direction[scope]
                            if was_write != write
                            else fast
                            if scope == 0 and spacing == fast
                            else same_direction[scope]
                        )
                        if t > e:
                            e = t
                    t, last_t, _, was_write, r, g, _ = cal[k + 1]  # the command after it
                    scope = 2 if r != rank else (0 if g == bg else 1)
                    if e <= t - col_table[was_write][scope]:
                        break
                    k += 1
            asked = arrive
            while True:
                arrive, contended = asked, None
                while next_refresh[rank] <= arrive:  # refreshes that fell before the request
                    refresh(ch, rank)
                if k < 0:
                    bus = turn = arrive
                else:
                    _, t, _, was_write, r, g, previous = cal[k]
                    scope = 2 if r != rank else (0 if g == bg else 1)
                    bus = t + (fast if scope == 0 and spacing == fast else same_direction[scope])
                    turn = t + other_direction[scope] if was_write != write else bus
                    if bus > arrive and previous != who:
                        # the data bus is still busy with another transfer's requests
                        contended = (arrive, bus, CONTENTION, previous, (ch, b, row))
                        arrive = bus
                base = bus if bus > arrive else arrive
                open_now = open_row[b]
                hit = open_now == row
                if hit:
                    row_ready, cause = col_ready[b], open_cause[b]
                else:
                    if open_now != NO_ROW:
                        cause = BANK_CONFLICT if opener[b] != who else ROW_MISS
                        precharge = pre_ready[b] if pre_ready[b] > arrive else arrive
                        act = precharge + tRP
                    else:
                        cause = REFRESH if closed_by_refresh[b] else ROW_MISS
                        act = arrive
                    ready = act_ready[b]
                    if ready > act:
                        act = ready
                    acts = all_acts[rank_at]
                    if acts:
                        t, g = acts[-1]
                        if act >= t:  # after the rank's other activates: the last four bind
                            t += rrd_same if g == bg else rrd_other
                            if t > act:
                                act = t
                            if len(acts) >= 4:
                                t = acts[-4][0] + tFAW
                                if t > act:
                                    act = t
                        else:  # between them (FR-FCFS activates whichever bank is ready)
                            act = activate_between(acts, act, bg, rrd_same, rrd_other, tFAW)
                    row_ready = act + act_to_col
                col = base if base > row_ready else row_ready
                if turn > col:
                    col = turn
                due = next_refresh[rank]
                fits = left  # how many of the piece's requests fit before the next command
                if k + 1 < len(cal):  # a gap between commands: as many as fit go in it
                    t, _, _, next_write, r, g, _ = cal[k + 1]
                    scope = 2 if r != rank else (0 if g == bg else 1)
                    t -= col_table[next_write][scope]
                    if col > t:
                        k += 1
                        continue
                    fits = (t - col) // spacing + 1
                if due > col:
                    break
                refresh(ch, rank)  # a refresh falls before this column command: it goes first
            if contended is not None:
                delays.append(contended)
            if not hit:
                if log is not None:
                    if open_now != NO_ROW:
                        log.append((to_accel(precharge), name, b, BankCommand.PRECHARGE,
                                    to_accel(precharge + tRP)))  # fmt: skip
                    log.append((to_accel(act), name, b, BankCommand.ACTIVATE, row))
                row_opener = opener[b] if cause == BANK_CONFLICT else None
                open_row[b], opener[b], open_cause[b] = row, who, cause
                closed_by_refresh[b] = False
                act_ready[b] = act + tRC
                col_ready[b] = row_ready
                pre_ready[b] = act + tRAS
                if not acts or act >= acts[-1][0]:
                    all_acts[rank_at] = acts[-7:] + ((act, bg),)
                else:
                    all_acts[rank_at] = tuple(sorted(acts + ((act, bg),)))[-8:]
                activates += 1
            else:
                row_opener = None
                hits += 1
            if row_ready > base:
                delays.append((base, row_ready, cause, row_opener, (ch, b, row)))
                base = row_ready
            if turn > base:
                delays.append((base, turn, TURNAROUND, None, (ch, b, row)))
            m = left if col + (left - 1) * spacing < due else (due - col - 1) // spacing + 1
            if piece + m > pace_end:  # the pace changes there
                m = pace_end - piece
            if m > fits:
                m = fits
            if k + 1 < len(cal):  # it goes before commands timed already
                reordered = True
            if (
                m > 1
                and piece + m - 1 - queue >= index0
                and (
                    reordered
                    or channels > 1
                    and (ch != run_channel or run_start > max(piece + 1, index0 + queue) - queue)
                )
            ):  # requests `queue` ahead of some of this piece's were on another channel, or
                # went after later ones (their row was not ready)
                m = queue_cut(
                    chunks,
                    behind,
                    piece,
                    m,
                    col,
                    spacing,
                    -1 if reordered else ch,
                    queue,
                    index0,
                )
            last = col + (m - 1) * spacing
            if first is None:
                first = col
            cal.insert(k + 1, (col, last, spacing, write, rank, bg, who))
            col_ready[b] = last + 1  # a bank serves its requests in order
            t = last + col_to_pre
            if t > pre_ready[b]:
                pre_ready[b] = t
            t = last + data_tail
            if t > data_end:
                data_end = t
            hits += m - 1
            chunks.append((piece, col, spacing, ch))
            if ch != run_channel:  # the chunks from run_start on are all on run_channel
                run_channel, run_start = ch, piece
            piece += m
            left -= m
            if close_page:  # CLOSE_PAGE: the row is precharged after these requests
                open_row[b] = NO_ROW
                closed_by_refresh[b] = False
                t = pre_ready[b] + tRP
                if log is not None:
                    log.append(
                        (to_accel(pre_ready[b]), name, b, BankCommand.PRECHARGE, to_accel(t))
                    )
                if t > act_ready[b]:
                    act_ready[b] = t
            if not left:
                break
        if last + burst > end:
            end = last + burst
        index += n
    counts = timer.counts
    counts["activates"] += activates
    counts["row_hits"] += hits
    timer.data_end = data_end
    timer.pieces = (chunks, index0, index, s0)  # the column commands, for prefix_end
    return end, index - index0


def activate_between(
    acts: Activates, act: int, bg: int, rrd_same: int, rrd_other: int, tfaw: int
) -> int:
    """The first cycle from `act` at which an activate in bank group `bg` keeps tRRD to each
    of the rank's recent activates `acts` ((cycle, bank group) in time order, some of them
    later) and at most four activates in any tFAW window."""
    while True:
        times = sorted([t for t, _ in acts] + [act])
        moved = act
        for t, g in acts:
            rrd = rrd_same if g == bg else rrd_other
            if t - rrd < moved < t + rrd:
                moved = t + rrd
        for i in range(len(times) - 4):
            if times[i + 4] - times[i] < tfaw and times[i] <= act <= times[i + 4]:
                moved = max(moved, times[i] + tfaw if times[i] != act else times[i + 4] + 1)
        if moved == act:
            return act
        act = moved


def queue_cut(
    chunks: list[Piece],
    behind: int,
    piece: int,
    m: int,
    col: int,
    spacing: int,
    ch: int,
    queue: int,
    index0: int,
) -> int:
    """How many of a piece's m requests (request `piece` on, columns col + k * spacing) go
    before one that enters the queue late: request i enters once request i - queue has its
    column command, which on another channel may come later than this row's pace (on its own
    channel it came earlier, unless requests were reordered: `ch` is -1 then). Chunks hold the
    column commands of the requests before."""
    t_lo, t_hi = max(piece + 1, index0 + queue) - queue, piece + m - 1 - queue
    c, count = behind, len(chunks)
    while c < count:
        first_index, first_col, chunk_spacing, chunk_channel = chunks[c]
        if first_index > t_hi:
            break
        upto = chunks[c + 1][0] - 1 if c + 1 < count else piece - 1
        lo, hi = max(first_index, t_lo), min(upto, t_hi)
        c += 1
        if lo > hi or chunk_channel == ch:
            continue
        # request t - queue's column minus the piece's column of request t, linear in t
        late = first_col + (lo - first_index) * chunk_spacing - col - (lo + queue - piece) * spacing
        if late > 0:
            return lo + queue - piece
        slope = chunk_spacing - spacing
        if slope > 0:
            t = lo + (-late) // slope + 1
            if t <= hi:
                return t + queue - piece
    return m
