"""The replay's open-page DRAM timer, FR-FCFS within its queue window (one per DRAM memory).

The timer keeps, per channel, each bank's open row and the earliest cycle of its next
activate, column and precharge command (the JEDEC delays of cyclesim/dram/timing.py), the
column commands already timed (a calendar of runs) and each rank's refresh schedule.
Requests reach it in the order the port arbitration grants the bursts (engine/dram_port.py);
it times them a row visit at a time in closed form (the column commands of a run of same-row
requests are evenly spaced, exactly as if each were timed alone:
tests/dram/test_timer_fast_path.py), so a streaming fill costs one step per row, not per
burst. Delays beyond what the data bus alone would need are charged to a cause
(docs/dram_causes.md): `row_miss`, `bank_conflict`, `refresh`, `turnaround`.

Within what one call shows it (a run's requests and the same transfer's next ones, queued
behind them), it does what the trace mode's FR-FCFS controller (cyclesim/dram/controller.py,
equal to DRAMsim3) does: a row's queued hits go before an older miss in its bank
(_hits_first), the row streams of two bank groups interleave at tCCD_S (_paces), a request
whose row is not ready leaves a gap that later requests to other banks fill (the calendar),
and activates go wherever tRRD and tFAW allow. It holds `trans_queue_size + cmd_queue_size`
requests ahead of its column commands.

DRAM cycles convert to accelerator cycles exactly: `ratio = tck_ns * clock_mhz / 1000`
accelerator cycles per DRAM cycle, as a Fraction; DRAM cycle d is accelerator cycle
ceil(d * ratio), and accelerator cycle a is the first DRAM cycle d with ceil(d * ratio) >= a.
"""

from __future__ import annotations

from bisect import bisect_right
from fractions import Fraction
from itertools import accumulate
from operator import itemgetter
from typing import Final

from cyclesim.dram.config import DramConfig
from cyclesim.dram.timing import ACTIVATE, PRECHARGE, READ, WRITE, timing_tables
from cyclesim.vocabulary import BankCommand

# Final: constants a compiled timer (make native, engine/dram_native.py) reads directly
ROW_MISS: Final = "row_miss"
BANK_CONFLICT: Final = "bank_conflict"
REFRESH: Final = "refresh"
TURNAROUND: Final = "turnaround"
CONTENTION: Final = "contention"
NO_ROW: Final = -1
_START: Final = itemgetter(0)

# the types of the timer's records: a row visit (first request, requests); a delay (start, end,
# cause, row opener, (channel, bank, row)); a piece of a visit (first request index, first
# column, spacing, channel); a calendar entry (first cycle, last cycle, spacing, is write,
# rank, bank group, requester); a rank's recent activates ((cycle, bank group), ...)
Visit = tuple[int, int]
Delay = tuple[int, int, str, object, tuple[int, int, int]]
Piece = tuple[int, int, int, int]
Command = tuple[int, int, int, bool, int, int, object]
Activates = tuple[tuple[int, int], ...]


# the timer's state lists a rollback copies back in place (they keep their identity: the timing
# code holds references to them): flat per-bank / per-rank lists, and per-channel lists of lists
_FLAT_STATE = (
    "open_row", "opener", "open_cause", "closed_by_refresh", "act_ready", "col_ready",
    "pre_ready", "acts",
)  # fmt: skip
_NESTED_STATE = ("calendar", "next_refresh")


class DramTimer:
    """Timing state of one DRAM memory (all its channels), shared by every transfer through it."""

    def __init__(self, config: DramConfig, clock_mhz: float) -> None:
        c = self.config = config
        self.ratio = Fraction(str(c.tck_ns)) * Fraction(str(clock_mhz)) / 1000
        self._num, self._den = self.ratio.numerator, self.ratio.denominator
        t = timing_tables(c)
        one_group = c.bankgroups == 1

        def delay(table, prev: int, nxt: int) -> int:
            return dict(table[prev]).get(nxt, 0)

        # column -> column delays by scope: 0 same bank group, 1 other bank group, 2 other rank
        self.col_delay = {
            (pw, nw, scope): delay(table, WRITE if pw else READ, WRITE if nw else READ)
            for pw in (False, True)
            for nw in (False, True)
            for scope, table in enumerate((t.same_bankgroup, t.other_bankgroups, t.other_ranks))
        }
        if one_group:
            for pw in (False, True):
                for nw in (False, True):
                    self.col_delay[(pw, nw, 0)] = self.col_delay[(pw, nw, 1)]
        # the same as nested lists, indexed [previous is write][next is write][scope]
        self.col_table = [
            [[self.col_delay[(pw, nw, scope)] for scope in range(3)] for nw in (False, True)]
            for pw in (False, True)
        ]
        self.act_to_col = {
            False: delay(t.same_bank, ACTIVATE, READ),
            True: delay(t.same_bank, ACTIVATE, WRITE),
        }
        self.col_to_pre = {
            False: delay(t.same_bank, READ, PRECHARGE),
            True: delay(t.same_bank, WRITE, PRECHARGE),
        }
        self.tRC, self.tRAS, self.tRP = c.tRC, c.tRAS, c.tRP
        self.rrd = (c.tRRD_S if one_group else c.tRRD_L, c.tRRD_S)  # same / other bank group
        self.tFAW, self.tRFC = c.tFAW, c.tRFC
        self.refresh_every = c.tREFI // c.ranks * c.ranks  # per rank, staggered by tREFI/ranks
        self.burst = c.burst_cycles
        self.data_latency = {False: c.read_latency, True: c.write_latency}
        # requests the controller holds ahead of its column commands: the transaction queue and
        # the command queue of the bank being served (DRAMsim3 admits the next row's first
        # request once the one trans_queue_size + cmd_queue_size ahead of it is served)
        self.queue = c.trans_queue_size + c.cmd_queue_size
        # column commands of the current bank group between the next group's first request
        # entering the queue and the first command paced with it (its activate and tRCD)
        self.overlap_lead = {
            write: -(-self.act_to_col[write] // self.col_table[write][write][0]) + 1
            for write in (False, True)
        }
        layout = c.field_layout()
        self.shift = (c.request_bytes - 1).bit_length()
        self.request_bytes = c.request_bytes
        fields = {k: (pos, (1 << w) - 1) for k, (pos, w) in layout.items()}
        # (position, mask) of channel, rank, bank group, bank and row: a request's bank and row
        self.decode: tuple[int, ...] = tuple(
            x for k in ("ch", "ra", "bg", "ba", "ro") for x in fields[k]
        )
        self.columns_low = layout["co"][0] == 0  # consecutive requests stay in a row
        # the bits of a request number that name its channel, rank and bank group (_paces)
        self.group_mask = sum(fields[k][1] << fields[k][0] for k in ("ch", "ra", "bg"))
        self.bank_mask = sum(fields[k][1] << fields[k][0] for k in ("ch", "ra", "bg", "ba"))
        ro_pos, ro_mask = fields["ro"]
        self.row_of = lambda q: (q >> ro_pos) & ro_mask
        self.channel_field = fields["ch"]  # (position, mask) of a request's channel (_paces)
        self.columns = 1 << layout["co"][1]
        self.row_shift = self.shift + (layout["co"][1] if self.columns_low else 0)
        # the bytes of one row's requests (one request's without columns_low): _visits' unit
        self.row_span = 1 << self.row_shift
        # relative tile shape -> (visits, last request) relative to its first row (_visits)
        self._visit_memo: dict[tuple, tuple[list[tuple[int, int]], int | None]] = {}
        self._pace_memo: dict[tuple, list[int]] = {}  # (write, visits, groups, sizes) -> paces
        banks = c.ranks * c.banks
        self.banks_per_channel = banks
        n = c.channels * banks
        # per bank (channel * banks + rank/bankgroup/bank index)
        self.open_row = [NO_ROW] * n
        self.opener: list[object] = [None] * n  # who activated the open row
        self.open_cause: list[str] = [ROW_MISS] * n  # the cause its activation was charged to
        self.closed_by_refresh = [False] * n
        self.act_ready = [0] * n
        self.col_ready = [0] * n
        self.pre_ready = [0] * n
        # per channel: its column commands in time order, a run at a time (first cycle, last
        # cycle, spacing, is write, rank, bank group, requester): a request whose row is not
        # ready leaves a gap on the data bus that later requests of other banks may fill
        # (FR-FCFS serves whichever queued request is ready); old ones are dropped
        self.calendar: list[list[Command]] = [[] for _ in range(c.channels)]
        # per channel and rank (channel * ranks + rank): the last eight activates, in time order,
        # as a tuple ((cycle, bank group), ...) replaced on change (a snapshot copies one list)
        self.ranks = c.ranks
        self.acts: list[Activates] = [()] * (c.channels * c.ranks)
        # per channel, per rank: the next refresh cycle
        if c.refresh_policy == "RANK_LEVEL_SIMULTANEOUS":  # every rank at once, every tREFI
            self.refresh_every = c.tREFI
            first = [c.tREFI] * c.ranks
        else:  # RANK_LEVEL_STAGGERED (the spec refuses bank-level refresh)
            step = c.tREFI // c.ranks
            first = [(r + 1) * step for r in range(c.ranks)]
        self.next_refresh = [first[:] for _ in range(c.channels)]
        self.close_page = c.close_page  # precharge a row after its run of requests
        self.data_end = 0  # data end of the requests of the last issue() call (DRAM cycles)
        # per channel: (requests, rank and bank group) of another bank group's row streams that
        # the last requests of a stream in that group were paced with (FR-FCFS interleaves
        # them): that many requests of other groups, next, go at the other-group pace too
        # (per requester: its stream's, which another transfer's runs do not interrupt)
        self.owed: dict[object, list[tuple[int, tuple[int, int] | None]]] = {}
        self.counts = {"requests": 0, "row_hits": 0, "activates": 0, "refreshes": 0}
        self.last_request: dict[object, int] = {}  # per requester: its last request issued
        self.issued = 0  # requests issued by the last issue() call
        # issue() calls so far, never rolled back: fast-forward skips only periods without one
        self.calls: int = 0
        # per requester: its run of bursts in flight whose requests were all issued at its
        # start (engine/dram_port.py cuts it before another requester issues)
        self.ahead: dict[object, tuple] = {}
        self.log: list[tuple] | None = None  # bank commands, when tracing (trace_into)
        self.name = ""
        self._build_frame()

    def _build_frame(self) -> None:
        """What _time_visits binds to locals, per direction, in one tuple: the constants and the
        state lists (which keep their identity: restore copies into them)."""
        c = self.config
        d = self.decode
        self._frame = {
            write: (
                self.ranks, d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9],
                c.bankgroups, c.banks_per_group,
                self.banks_per_channel, self.queue, self.burst, self.col_table[write][write],
                self.col_table[not write][write], self.open_row, self.opener, self.open_cause,
                self.closed_by_refresh, self.act_ready, self.col_ready, self.pre_ready,
                self.calendar, self.acts, self.next_refresh, self.tRC, self.tRAS, self.tRP,
                self.tFAW, self.rrd[0], self.rrd[1], self.act_to_col[write],
                self.col_to_pre[write],
                self.data_latency[write] + self.burst, self.close_page, self._refresh, self.log,
                self.name, self.to_accel, c.channels,
                [self.col_table[write][nw] for nw in (False, True)],
            )
            for write in (False, True)
        }  # fmt: skip

    def trace_into(self, log: list[tuple], name: str) -> None:
        """Record every row visit's bank commands into log, as memory `name`: (accelerator
        cycle, name, bank, ACTIVATE, row), (t, name, bank, PRECHARGE, cycle the bank
        is closed), and per rank (t, name, its first bank, REFRESH, cycle it ends): BankCommand."""
        self.log, self.name = log, name
        self._build_frame()

    # ------------------------------------------------------------- clock conversion
    def to_accel(self, d: int) -> int:
        """Accelerator cycle of DRAM cycle d (ceil)."""
        return -(-d * self._num // self._den)

    def to_dram(self, a: int) -> int:
        """The first DRAM cycle d with to_accel(d) >= a."""
        if a <= 0:
            return 0
        return (a - 1) * self._den // self._num + 1

    # ------------------------------------------------------------- state for rollback
    def snapshot(self) -> tuple:
        """The state a rollback restores: the per-bank and per-rank lists, each channel's
        calendar and refresh times, the data bus, counts, last requests, log length, paces owed."""
        return (
            [getattr(self, name)[:] for name in _FLAT_STATE],
            [[part[:] for part in getattr(self, name)] for name in _NESTED_STATE],
            self.data_end,
            dict(self.counts),
            dict(self.last_request),
            len(self.log) if self.log is not None else 0,
            {who: owed[:] for who, owed in self.owed.items()},
        )

    def restore(self, s: tuple) -> None:
        """Go back to a snapshot (copied into the state lists: the snapshot stays usable)."""
        flat, nested, self.data_end, counts, last_request, logged, owed = s
        for name, saved in zip(_FLAT_STATE, flat, strict=True):
            getattr(self, name)[:] = saved
        for name, saved in zip(_NESTED_STATE, nested, strict=True):
            for mine, part in zip(getattr(self, name), saved, strict=True):
                mine[:] = part
        self.owed = {who: saved[:] for who, saved in owed.items()}
        self.counts, self.last_request = dict(counts), dict(last_request)
        if self.log is not None:  # the commands of what is rolled back were never given
            del self.log[logged:]

    def set_last_request(self, who: object, request: int | None) -> None:
        """Make `request` the last one `who` issued (None: none): its next call does not
        issue it again where it would go first (a burst smaller than a request, _visits)."""
        if request is None:
            self.last_request.pop(who, None)
        else:
            self.last_request[who] = request

    # ------------------------------------------------------------- timing
    def issue(
        self,
        runs: list[tuple[int, int, int, int]],
        is_write: bool,
        who: object,
        start: int,
        stream: tuple[int, int] | None = None,
        ahead: list[tuple[int, int, int, int]] | None = None,
    ) -> tuple[int, list[tuple[int, int, str, object, tuple[int, int, int]]]]:
        """Issue the requests covering strided byte runs [(address, bytes, stride, count)] in
        order from accelerator cycle `start`; return (accelerator cycle the last request's data
        bus slot ends, delays [(start, end, cause, row opener, where)] in accelerator cycles).

        Requests to one row in a row are one row visit, timed in one step: a contiguous run up
        to the row's end, and the runs of a stride that fall in the same row (e.g. the lines of
        a tile). `stream` (DRAM cycle of its first request, requests so far) continues a stream
        of requests the same transfer issued without a break: they entered the queue one per
        cycle from its start. `ahead` are the byte runs the same transfer issues next (the
        requests a DMA engine has queued behind these): they are not timed, but a row stream of
        this call is paced with another bank group's row among them as FR-FCFS interleaves
        the two. `self.issued` tells how many requests this call issued."""
        s0 = self.to_dram(start)
        index = 0
        if stream is not None:  # queued before the run, but at most `queue` requests ahead of it
            first, index = stream
            s0 = max(first, s0 - self.queue - index)
        else:  # a new stream: nothing it follows was interleaved with it
            self.owed.pop(who, None)
        visits = self._visits(runs, who)
        following: list[Visit] = []
        if ahead:
            mine = self.last_request.get(who)
            following = self._visits(ahead, who)
            self.set_last_request(who, mine)
        if len(visits) > 1:  # two visits suffice: a miss, then a hit on the bank's open row
            visits = self._hits_first(visits)
        delays: list[Delay] = []
        end, issued = self._time_visits(visits, is_write, who, s0, index, delays, following)
        self.counts["requests"] += issued
        self.issued = issued
        self.calls += 1
        out = []
        if delays:
            delays.sort(key=_START)
            num, den = self._num, self._den
            for a, z, cause, opener, where in delays:
                a, z = -(-a * num // den), -(-z * num // den)
                if z > a:
                    out.append((a, z, cause, opener, where))
        return self.to_accel(end), out

    def _visits(self, runs: list[tuple[int, int, int, int]], who: object) -> list[tuple[int, int]]:
        """The row visits [(first request, requests)] of strided byte runs, in order: requests
        to one row in a row are one visit. A request the same transfer's last call issued (a
        burst smaller than a request) is not issued again.

        Every tile of a node decomposes alike at another row, so the visits are memoised
        relative to the first run's DRAM row (_row_visits is shift-invariant by whole rows,
        tests/dram/test_timer_fast_path.py)."""
        skip = self.last_request.get(who)  # a request the same transfer's last burst issued
        if len(runs) == 1 and runs[0][3] == 1:  # one contiguous run: a step per row, no memo
            visits, last_q = self._row_visits(runs, skip)
            if last_q is not None:
                self.last_request[who] = last_q
            return visits
        if not runs:
            return []
        first = runs[0][0]
        base = first - first % self.row_span
        base_q = base >> self.shift
        key = (
            None if skip is None else skip - base_q,
            *[(a - base, size, stride, count, a % stride if stride else 0)
              for a, size, stride, count in runs],
        )  # fmt: skip
        memo = self._visit_memo
        known = memo.get(key)
        if known is None:
            visits, last_q = self._row_visits(runs, skip)
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
            self.last_request[who] = last_q
        return visits

    def _row_visits(
        self, runs: list[tuple[int, int, int, int]], skip: int | None
    ) -> tuple[list[tuple[int, int]], int | None]:
        """_visits computed: (visits, the last request) of the runs, request `skip` left out
        where it would be issued first."""
        shift, rb, row_shift = self.shift, self.request_bytes, self.row_shift
        columns_low, columns, co_mask = self.columns_low, self.columns, self.columns - 1
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
                            ((a + y * stride + size + rb - 1) >> shift)
                            - ((a + y * stride) >> shift)
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

    def _hits_first(self, visits: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """The visits in the order FR-FCFS serves them where a bank's requests go to several
        rows: per bank, the oldest queued request that hits its open row goes first, else the
        oldest (which opens its row); a bank's queue holds its next `cmd_queue_size` requests.
        Each bank's requests keep the places in the sequence its requests had."""
        bank_mask, row_of = self.bank_mask, self.row_of
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
        size = self.config.cmd_queue_size
        out = requests[:]
        for where in places.values():
            mine = [requests[place] for place in where]
            if all(row_of(q) == row_of(mine[0]) for q in mine):
                continue
            first = mine[0]
            open_row = self.open_row[self._bank_index(first)]
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
        same = self.columns_low  # else every request is a visit of its own (as in _visits)
        for q in out:
            if same and merged:
                last = merged[-1][0]
                if last & bank_mask == q & bank_mask and row_of(last) == row_of(q):
                    merged[-1] = (last, merged[-1][1] + 1)
                    continue
            merged.append((q, 1))
        return merged

    def _bank_index(self, q: int) -> int:
        """Index of request q's bank in the per-bank state lists."""
        c, d = self.config, self.decode
        ch, rank, bg, ba = ((q >> d[2 * i]) & d[2 * i + 1] for i in range(4))
        return ch * self.banks_per_channel + (rank * c.bankgroups + bg) * c.banks_per_group + ba

    def _paces(
        self, visits: list[Visit], following: list[Visit], index: int, write: bool
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
        group = self.group_mask
        keys = [q & group for q, _ in every]  # channel, rank and bank group
        count = len(visits)
        if not count or keys.count(keys[0]) == len(keys):  # one bank group: nothing to pace
            return [1 << 62] * count
        sizes = [n for _, n in every]
        # the visits' groups and sizes repeat from call to call (a tile's rows cycle through
        # the banks): the paces from request 0 are memoised, and move with `index`
        memo_key = (write, count, tuple(keys), tuple(sizes))
        memo = self._pace_memo
        relative = memo.get(memo_key)
        if relative is None:
            if len(memo) >= 4096:  # bounded
                memo.clear()
            relative = memo[memo_key] = self._paces_from(keys, sizes, count, write)
        return [p + index for p in relative]

    def _paces_from(self, keys: list[int], sizes: list[int], count: int, write: bool) -> list[int]:
        """_paces of visits with these groups and sizes, the first request being request 0."""
        window, lead = self.queue, self.overlap_lead[write]
        starts = list(accumulate(sizes, initial=0))
        total = len(keys)
        never = starts[-1] + 1
        paced = [never] * count
        if self.config.channels == 1:  # one channel: the next visit on it is the next one
            nexts: list[int | None] = list(range(1, total)) + [None]
        else:
            ch_pos, ch_mask = self.channel_field  # a key holds its visit's channel bits
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

    def _time_visits(
        self,
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

        A visit is a row run in closed form: its first column command waits for the data bus
        (`base`: the command before the calendar gap it goes in, plus its delay), the row (an
        activate, after a precharge if another row is open) and the read/write turnaround; the
        cycles past `base` go to the row's cause, then to `turnaround`; the others follow every
        `spacing` cycles (tCCD_S where _paces interleaves it with another bank group's). A
        refresh due before a command is done first. `following` are visits queued behind these
        (for the pace only). The hot path of a DRAM replay: every table and constant is a
        local, one Python loop iteration per piece of a row visit."""
        (
            ranks, ch_pos, ch_mask, ra_pos, ra_mask, bg_pos, bg_mask, ba_pos, ba_mask, ro_pos,
            ro_mask, bankgroups, banks_per_group, per_channel, queue, burst, same_direction,
            other_direction, open_row, opener, open_cause, closed_by_refresh, act_ready,
            col_ready, pre_ready, calendars, all_acts, next_refreshes, tRC, tRAS, tRP, tFAW,
            rrd_same, rrd_other, act_to_col, col_to_pre, data_tail, close_page, refresh, log,
            name, to_accel, channels, col_table,
        ) = self._frame[write]  # fmt: skip
        for cal in calendars:  # commands long before this call's requests no longer matter
            if len(cal) > 8:
                k = bisect_right(cal, s0, key=_START) - 1
                if k > 0:
                    del cal[:k]
        slow = spacing = same_direction[0]
        fast = same_direction[1]  # the pace of two bank groups' interleaved row streams
        paced = self._paces(visits, following, index, write) if fast < slow else None
        owed = self.owed.get(who)
        if owed is None:
            owed = self.owed[who] = [(0, None)] * channels
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
                    k = -1 if cal[0][0] > low else bisect_right(cal, low, key=_START) - 1
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
                        bus = t + (
                            fast if scope == 0 and spacing == fast else same_direction[scope]
                        )
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
                                act = _activate_between(acts, act, bg, rrd_same, rrd_other, tFAW)
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
                        and (
                            ch != run_channel or run_start > max(piece + 1, index0 + queue) - queue
                        )
                    )
                ):  # requests `queue` ahead of some of this piece's were on another channel, or
                    # went after later ones (their row was not ready)
                    m = _queue_cut(
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
        counts = self.counts
        counts["activates"] += activates
        counts["row_hits"] += hits
        self.data_end = data_end
        self.pieces = (chunks, index0, index, s0)  # the column commands, for prefix_end
        return end, index - index0

    def prefix_end(self, pieces: tuple[list[Piece], int, int, int], requests: int) -> int:
        """DRAM cycle the bus slot of the first `requests` requests of an issue ends, from that
        issue's column commands (`pieces`, as self.pieces left them): the timer is causal, a
        request's timing does not depend on the ones after it, so issuing only them gives the
        same end."""
        chunks, first, upto, end = pieces
        upto = min(upto, first + requests)
        burst = self.burst
        for k, (piece, col, spacing, _) in enumerate(chunks):
            if piece >= upto:
                break
            after = chunks[k + 1][0] if k + 1 < len(chunks) else upto
            last = col + (min(after, upto) - piece - 1) * spacing + burst
            if last > end:
                end = last
        return end

    def _refresh(self, ch: int, rank: int) -> None:
        """The rank's due refresh: precharge its open banks, then tRFC with every bank closed."""
        due = self.next_refresh[ch][rank]
        banks = self.config.banks
        lo = ch * self.banks_per_channel + rank * banks
        hi = lo + banks
        open_row, pre_ready, act_ready = self.open_row, self.pre_ready, self.act_ready
        opened = [b for b in range(lo, hi) if open_row[b] != NO_ROW]
        start = due
        if opened:  # they close once they may (tRAS, tRTP, write recovery), then tRP
            start = max(due, max(pre_ready[b] for b in opened)) + self.tRP
        done = start + self.tRFC
        if self.log is not None:  # the open banks are precharged, then the rank refreshes
            log, name, to_accel = self.log, self.name, self.to_accel
            for b in opened:
                log.append(
                    (to_accel(start - self.tRP), name, b, BankCommand.PRECHARGE, to_accel(start))
                )
            log.append((to_accel(start), name, lo, BankCommand.REFRESH, to_accel(done)))
        open_row[lo:hi] = [NO_ROW] * banks
        self.opener[lo:hi] = [None] * banks
        self.closed_by_refresh[lo:hi] = [True] * banks
        act_ready[lo:hi] = [a if a > done else done for a in act_ready[lo:hi]]
        self.next_refresh[ch][rank] = due + self.refresh_every
        self.counts["refreshes"] += 1


def _activate_between(
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


def _queue_cut(
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
