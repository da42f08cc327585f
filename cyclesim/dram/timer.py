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
(dram/row_visits.py), the row streams of two bank groups interleave at tCCD_S (dram/paces.py), a request
whose row is not ready leaves a gap that later requests to other banks fill (the calendar),
and activates go wherever tRRD and tFAW allow. It holds `trans_queue_size + cmd_queue_size`
requests ahead of its column commands.

DRAM cycles convert to accelerator cycles exactly: `ratio = tck_ns * clock_mhz / 1000`
accelerator cycles per DRAM cycle, as a Fraction; DRAM cycle d is accelerator cycle
ceil(d * ratio), and accelerator cycle a is the first DRAM cycle d with ceil(d * ratio) >= a.
"""

from __future__ import annotations

from fractions import Fraction

from cyclesim.dram.column_timing import (
    NO_ROW,
    ROW_MISS,
    START,
    Activates,
    Command,
    Delay,
    Piece,
    Visit,
    time_visits,
)
from cyclesim.dram.config import DramConfig
from cyclesim.dram.paces import paces
from cyclesim.dram.row_visits import hits_first, row_visits, visits_of
from cyclesim.dram.timing import ACTIVATE, PRECHARGE, READ, WRITE, timing_tables
from cyclesim.vocabulary import BankCommand

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
        self._set_timing(c)
        self._set_address_fields(c)
        self._set_bank_state(c)
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
        # the column commands of the last issue() call (column_timing.time_visits), for prefix_end
        self.pieces: tuple[list[Piece], int, int, int] = ([], 0, 0, 0)
        # issue() calls so far, never rolled back: fast-forward skips only periods without one
        self.calls: int = 0
        # per requester: its run of bursts in flight whose requests were all issued at its
        # start (engine/dram_port.py cuts it before another requester issues)
        self.ahead: dict[object, tuple] = {}
        self.log: list[tuple] | None = None  # bank commands, when tracing (trace_into)
        self.name = ""
        self._build_frame()

    def _set_timing(self, c: DramConfig) -> None:
        """The JEDEC delays the timer applies, as tables by command, bank group and direction."""
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

    def _set_address_fields(self, c: DramConfig) -> None:
        """Where a request number holds its channel, rank, bank group, bank, row and column."""
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
        self.visit_memo: dict[tuple, tuple[list[tuple[int, int]], int | None]] = {}
        self.pace_memo: dict[tuple, list[int]] = {}  # (write, visits, groups, sizes) -> paces

    def _set_bank_state(self, c: DramConfig) -> None:
        """Every bank, rank and channel idle: no open row, nothing timed, the first refreshes."""
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

    def _build_frame(self) -> None:
        """What time_visits binds to locals, per direction, in one tuple: the constants and the
        state lists (which keep their identity: restore copies into them)."""
        c = self.config
        d = self.decode
        self.frame = {
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
        end, issued = time_visits(self, visits, is_write, who, s0, index, delays, following)
        self.counts["requests"] += issued
        self.issued = issued
        self.calls += 1
        out = []
        if delays:
            delays.sort(key=START)
            num, den = self._num, self._den
            for a, z, cause, opener, where in delays:
                a, z = -(-a * num // den), -(-z * num // den)
                if z > a:
                    out.append((a, z, cause, opener, where))
        return self.to_accel(end), out

    def _visits(self, runs: list[tuple[int, int, int, int]], who: object) -> list[Visit]:
        """The row visits of strided byte runs (dram/row_visits.py); a method so that a test
        can time each request alone (tests/dram/test_timer_fast_path.py)."""
        return visits_of(self, runs, who)

    def _row_visits(
        self, runs: list[tuple[int, int, int, int]], skip: int | None
    ) -> tuple[list[Visit], int | None]:
        """The row visits of the runs, computed afresh (dram/row_visits.py)."""
        return row_visits(self, runs, skip)

    def _hits_first(self, visits: list[Visit]) -> list[Visit]:
        """The visits in FR-FCFS order (dram/row_visits.py); a method for the same test."""
        return hits_first(self, visits)

    def _paces(
        self, visits: list[Visit], following: list[Visit], index: int, write: bool
    ) -> list[int]:
        """Per visit, where its row stream goes at the other-bank-group pace (dram/paces.py)."""
        return paces(self, visits, following, index, write)

    def bank_index(self, q: int) -> int:
        """Index of request q's bank in the per-bank state lists."""
        c, d = self.config, self.decode
        ch, rank, bg, ba = ((q >> d[2 * i]) & d[2 * i + 1] for i in range(4))
        return ch * self.banks_per_channel + (rank * c.bankgroups + bg) * c.banks_per_group + ba

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
