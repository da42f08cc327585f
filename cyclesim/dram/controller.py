"""One channel's memory controller: transaction queues, per-bank command queues, FR-FCFS, refresh.

The policy is DRAMsim3's (`controller.cc`, `command_queue.cc`, `channel_state.cc`): reads are
served before writes until the write buffer fills; command queues are visited round-robin and
the first ready command of a queue issues (a row hit before an older miss); a precharge waits
while row hits to the open row are pending, up to four hits; refresh takes the rank once due.
The controller is advanced cycle by cycle only where something can happen: a cycle in which
nothing changed is followed directly by the next cycle at which a timing constraint expires, a
refresh falls due or a request arrives, so a long idle stretch costs one step.

Over 400 lines: DRAMsim3's controller, command queues and channel state (three of its C++ files)
are one class here, which mypyc compiles into one native class whose methods call each other
natively.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from dataclasses import dataclass, field
from typing import Any, Final, cast

from cyclesim.dram.config import DramConfig
from cyclesim.dram.timing import (
    ACTIVATE,
    KINDS,
    PRECHARGE,
    READ,
    READ_PRECHARGE,
    REFRESH,
    REFRESH_BANK,
    WRITE,
    WRITE_PRECHARGE,
    TimingTables,
    timing_tables,
)
from cyclesim.errors import DeadlockError

CLOSED: Final = 0
OPEN: Final = 1
NEVER: Final = 1 << 62
# what one command raises (Channel._raises_of): per delay, the indices into Channel.ready held
Raises = list[tuple[int, list[int]]]


@dataclass(slots=True)
class Command:
    """A DRAM command for one bank (or a rank, for refresh); `address` is the request's."""

    kind: int
    rank: int
    bankgroup: int
    bank: int
    row: int
    column: int
    address: int
    bank_index: int  # flat index of (rank, bankgroup, bank); -1 for a rank command


@dataclass(slots=True)
class Transaction:
    address: int
    is_write: bool
    added: int = 0
    complete: int = -1
    owner: Any = None  # who issued it (the replay's link), for the causes of its delay
    # at its column command: (cycle, its row's activate cycle, was the bank refreshed before
    # that activate, the opener of the row before, did the bus turn around) (Channel.served_info)
    served: tuple | None = None
    command: Command | None = None  # its column command, decoded once (Channel._to_command)


class QueueScan:
    """What the last scan of a command queue that found no command ready noted (Channel.
    _none_ready): the cycle one becomes ready, the channel's `issues` then, and the (at most
    two) ready times its commands waited on, as indices into Channel.ready (else -1). Fields of
    a compiled object, so that noting them allocates nothing."""

    __slots__ = ("again", "issues", "first", "second")

    def __init__(self) -> None:
        self.again = 0
        self.issues = 0
        self.first = self.second = -1


@dataclass(slots=True)
class ChannelStats:
    """What one channel did: command counts, row hits, completed reads' latencies."""

    commands: list[int] = field(default_factory=lambda: [0] * KINDS)
    read_row_hits: int = 0
    write_row_hits: int = 0
    read_latencies: list[int] = field(default_factory=list)
    last_data_cycle: int = 0  # end of the last data burst on this channel's bus
    log: list[tuple[int, int, int, int, int, int, int]] | None = (
        None  # (cycle, kind, rank, bg, bank, row, col)
    )


class Channel:
    """The controller and bank state of one channel."""

    def __init__(self, config: DramConfig, index: int, *, keep_log: bool = False) -> None:
        """A channel's controller and bank state before its first cycle.

        Over 80 lines: every field of a channel's state as DRAMsim3 keeps it, declared and typed
        here, where mypyc reads a compiled class's attributes.
        """
        c = self.config = config
        self.index = index
        self.tables: TimingTables = timing_tables(config)
        self.clk = 0
        n_banks = c.ranks * c.banks
        self.n_banks = n_banks
        self.bank_state = [CLOSED] * n_banks
        self.open_row = [-1] * n_banks
        self.row_hits = [0] * n_banks
        # the earliest cycle per bank and command kind: of kind k on bank b, the largest of
        # ready[b * KINDS + k] (what its bank and the other banks of its bank group hold back)
        # and two floors shared by many banks: of its bank group (what the other bank groups of
        # its rank hold back) and of its rank (what the other ranks hold back), at
        # _floors[b * KINDS + k] and that + 1; so that a column command raises a floor per
        # bank group and rank, not each of their banks' times (Channel.ready_at)
        n_groups = c.ranks * c.bankgroups
        self.n_times = n_banks * KINDS
        self.ready = [0] * (self.n_times + (n_groups + c.ranks) * KINDS)
        self._floors = [0] * (2 * self.n_times)
        for b in range(n_banks):
            for k in range(KINDS):
                group = self.n_times + (b // c.banks_per_group) * KINDS + k
                rank = self.n_times + (n_groups + b // c.banks) * KINDS + k
                self._floors[2 * (b * KINDS + k)] = group
                self._floors[2 * (b * KINDS + k) + 1] = rank
        # bank * KINDS + kind -> _raises_of that command (computed at its first issue)
        self._raises: list[Raises | None] = [None] * (n_banks * KINDS)
        # what the scans of the queues read changes only where `command_moves` counts up (a
        # command issued, or entering or leaving a command queue). The scan for a transaction
        # to move into its command queue: a transaction found no room for finds none until
        # then, so a scan notes (command_moves, which queue, how many transactions it passed
        # over) and the next resumes after them, at the requests added since
        self.command_moves = 0
        self._no_room_moves = -1
        self._no_room_writes = False
        self._no_room_upto = 0
        # the command queues' scan, which reads the clock too: a scan that found no command
        # ready notes command_moves, whether a refresh held queues back, and the earliest cycle
        # at which a command it passed over on timing becomes ready (_command_to_issue); that
        # cycle is also where an idle stretch ends (next_change), unless a refresh waits
        self._scanned_moves = -1
        self._scanned_in_refresh = False
        self._scan_again_at = 0
        # and per command queue, as a command issued elsewhere only raises the ready times and
        # fills the activation windows its commands wait on (none becomes ready sooner): a
        # scan of queue i that found none ready notes the cycle one becomes ready in
        # _scans[i].again, valid until the queue changes or a command changes the state of one
        # of its banks (_queue_stale[i])
        self.activation_windows: list[list[int]] = [[] for _ in range(c.ranks)]
        # the configuration the tick reads, as the channel's own (typed, compiled) attributes
        self._unified_queue: bool = c.unified_queue
        self._queue_per_bank: bool = c.queue_per_bank
        self._trans_queue_size: int = c.trans_queue_size
        self._cmd_queue_size: int = c.cmd_queue_size
        self._dual_command: bool = c.hbm_dual_cmd and c.is_hbm
        self._read_delay: int = c.read_delay
        self._write_delay: int = c.write_delay
        self._tFAW: int = c.tFAW
        self.num_queues = n_banks if c.queue_per_bank else c.ranks
        self.queues: list[list[Command]] = [[] for _ in range(self.num_queues)]
        self.queue_index = 0
        self._queue_stale = [True] * self.num_queues
        self._scans = [QueueScan() for _ in range(self.num_queues)]
        # a queue's ready cycle may be put off by a command issued since its scan (`issues`
        # then differs from _scans[i].issues): next_change scans such a queue again rather
        # than tick at a cycle where nothing happens; the queue of the earliest one
        self.issues = 0
        self._scan_again_queue = -1
        self._first_ready_again = NEVER  # set by _first_ready when it finds none
        # and the ready times its commands waited on, as indices into `ready` (at most two
        # distinct, else -1): while the queue is not stale, a queue whose commands all still
        # wait on those times has none ready, the first of them its ready cycle (_waits_on)
        self._first_ready_first = self._first_ready_second = -1
        # the command queues holding a command, in order (what the scans visit)
        self._busy: list[int] = []
        self.refresh_queue: list[Command] = []
        self.in_refresh = False
        self.refresh_queues: set[int] = set()
        if c.refresh_policy == "RANK_LEVEL_SIMULTANEOUS":
            self.refresh_interval = c.tREFI
        elif c.refresh_policy == "BANK_LEVEL_STAGGERED":
            self.refresh_interval = c.tREFIb
        else:
            self.refresh_interval = c.tREFI // c.ranks
        self.next_refresh = (0, 0, 0)  # (rank, bankgroup, bank) the staggered refresh visits next
        self.read_queue: list[Transaction] = []
        self.write_buffer: list[Transaction] = []
        self.pending_reads: dict[int, list[Transaction]] = {}
        self.pending_writes: dict[int, Transaction] = {}
        self.write_draining = 0
        self.flush_writes = False  # set by the front end once no request will follow
        self.stats = ChannelStats(log=[] if keep_log else None)
        layout = c.field_layout()
        self._shift = (c.request_bytes - 1).bit_length()
        self._fields = {k: (pos, (1 << width) - 1) for k, (pos, width) in layout.items()}
        # what decode reads, as plain ints: the position and mask of ra, bg, ba, ro, co in turn
        self._layout = [v for k in ("ra", "bg", "ba", "ro", "co") for v in self._fields[k]]
        self._bankgroups: int = c.bankgroups
        self._banks_per_group: int = c.banks_per_group
        self._close_page: bool = c.close_page
        self.changed = False
        self.settled = 0  # transactions whose completion cycle is known (FrontEnd.settled)
        # what the causes of a request's delay read (Transaction.served): per bank, the cycle
        # its row was activated, whether a refresh came since its last row closed, who opened
        # the row open now and the row before; the direction of the last column command
        self.activated_at = [-1] * n_banks
        self.refreshed = [False] * n_banks
        self.after_refresh = [False] * n_banks
        self.opener: list[object] = [None] * n_banks
        self.previous_opener: list[object] = [None] * n_banks
        self.last_column_write: bool | None = None

    # ---- addresses -------------------------------------------------------------------
    def decode(self, address: int) -> tuple[int, int, int, int, int]:
        """(rank, bankgroup, bank, row, column) of a byte address, by the address mapping."""
        a, f = address >> self._shift, self._layout
        return ((a >> f[0]) & f[1], (a >> f[2]) & f[3], (a >> f[4]) & f[5], (a >> f[6]) & f[7],
                (a >> f[8]) & f[9])  # fmt: skip

    def _bank_index(self, rank: int, bankgroup: int, bank: int) -> int:
        return (rank * self._bankgroups + bankgroup) * self._banks_per_group + bank

    def ready_at(self, i: int) -> int:
        """The earliest cycle of bank b's command of kind k, i = b * KINDS + k."""
        ready, floors = self.ready, self._floors
        v, group, rank = ready[i], ready[floors[2 * i]], ready[floors[2 * i + 1]]
        if group > v:
            v = group
        return rank if rank > v else v

    def _queue_of(self, cmd: Command) -> int:
        return cmd.bank_index if self.config.queue_per_bank else cmd.rank

    # ---- the front end's side ----------------------------------------------------------
    def will_accept(self, is_write: bool) -> bool:
        if self._unified_queue:
            return len(self.read_queue) < self._trans_queue_size
        queue = self.write_buffer if is_write else self.read_queue
        return len(queue) < self._trans_queue_size

    def add(self, address: int, is_write: bool) -> Transaction:
        """Accept a request at the current cycle (the caller checked `will_accept`)."""
        self.changed = True
        trans = Transaction(address, is_write, added=self.clk)
        queue = self.read_queue if (self._unified_queue or not is_write) else self.write_buffer
        if is_write:
            if address not in self.pending_writes:
                self.pending_writes[address] = trans
                queue.append(trans)
            trans.complete = self.clk + 1  # a write is done for the requester once buffered
            self.settled += 1
            return trans
        if address in self.pending_writes:  # served from the write buffer
            trans.complete = self.clk + 1
            self.settled += 1
            self.stats.read_latencies.append(1)
            return trans
        waiting = self.pending_reads.setdefault(address, [])
        waiting.append(trans)
        if len(waiting) == 1:
            queue.append(trans)
        return trans

    def idle(self) -> bool:
        """No request is waiting anywhere in this channel."""
        return not (self.read_queue or self.write_buffer or self._busy)

    # ---- one cycle -----------------------------------------------------------------------
    def tick(self) -> None:
        """Advance one cycle: refresh bookkeeping, at most one command (two on HBM), one scheduling step."""
        clk = self.clk
        if clk > 0 and clk % self.refresh_interval == 0:
            self._insert_refresh()
        cmd = self._finish_refresh() if self.refresh_queue else None
        if cmd is None:
            cmd = self._command_to_issue()
        if cmd is not None:
            self._issue(cmd)
            if self._dual_command:
                second = self._command_to_issue()
                if second is not None and _is_column(second.kind) != _is_column(cmd.kind):
                    self._issue(second)
        self._schedule_transaction()
        self.clk = clk + 1

    def next_change(self) -> int:
        """The earliest cycle at which a tick can do anything, given that this one changed nothing."""
        t = self.clk
        nxt = (
            (t // self.refresh_interval + 1) * self.refresh_interval
            if t > 0
            else self.refresh_interval
        )
        if t % self.refresh_interval == 0 and t > 0:
            nxt = t
        ready_at = self.ready_at
        if (
            self._scanned_moves == self.command_moves
            and self._scanned_in_refresh == self.in_refresh
        ):
            # the tick's scan found no command ready: the first becomes ready at this cycle
            # (its time, or its rank's activation window), as nothing it read moves till then
            again = self._scan_again_at
            if again < nxt and self._scans[self._scan_again_queue].issues != self.issues:
                again = self._scan_waits_again(nxt)
            if again < nxt:
                nxt = again
            ref = self.refresh_queue[0] if self.refresh_queue else None
            if ref is not None:  # a refresh waits on its banks' times (_ready)
                c = self.config
                first = ref.rank * c.banks if ref.kind == REFRESH else ref.bank_index
                last = first + c.banks if ref.kind == REFRESH else first + 1
                for i in range(first * KINDS, last * KINDS):
                    v = ready_at(i)
                    if t <= v < nxt:
                        nxt = v
            return max(nxt, t)
        # no scan to go by: the earliest timing constraint still ahead, of any bank
        for i in range(self.n_times):
            v = ready_at(i)
            if t <= v < nxt:
                nxt = v
        for window in self.activation_windows:
            for v in window:
                if t <= v < nxt:
                    nxt = v
        return max(nxt, t)

    def _scan_waits_again(self, limit: int) -> int:
        """The cycle the first command of the queues becomes ready, each queue whose ready cycle
        is before `limit` and scanned before the last command issued scanned again (at the
        current cycle: now if one is ready)."""
        clk, issues, queues = self.clk, self.issues, self.queues
        stale, scans = self._queue_stale, self._scans
        skip = self.refresh_queues if self.in_refresh else ()
        again, again_queue = NEVER, -1
        for index in self._busy:
            if index in skip:
                continue
            queue = queues[index]
            scan = scans[index]
            if stale[index] or (scan.again < limit and scan.issues != issues):
                if (stale[index] or not self._waits_on(index)) and (
                    self._first_ready(queue) is not None
                ):
                    return clk
                self._none_ready(index)
            if scan.again < again:
                again, again_queue = scan.again, index
        self._scan_again_at, self._scan_again_queue = again, again_queue
        return again

    def quiet(self) -> bool:
        """No read and no command is waiting: only refresh, or writes buffered until the buffer
        fills or the trace ends, can happen."""
        return not (self.read_queue or self._busy or self.write_draining)

    def idle_state(self, period: int) -> tuple:
        """Everything a later tick can depend on, relative to the current cycle, while the
        channel is quiet: equal at two cycles a whole number of `period`s apart, the channel
        does the same thereafter, shifted. A time already past counts as 'now' (every use of it
        is `clk >= time` or `max(time, clk + delay)`); a buffered write is done for its
        requester, so only its address matters."""
        clk = self.clk

        def rel(v: int) -> int:
            return max(v - clk, 0)

        return (
            clk % period,
            tuple(self.bank_state),
            tuple(self.open_row),
            tuple(self.row_hits),
            tuple(rel(self.ready_at(i)) for i in range(self.n_times)),
            tuple(tuple(rel(v) for v in w) for w in self.activation_windows),
            self.queue_index,
            tuple((r.kind, r.rank, r.bankgroup, r.bank, r.bank_index) for r in self.refresh_queue),
            self.in_refresh,
            frozenset(self.refresh_queues),
            self.next_refresh,
            self.write_draining,
            self.flush_writes,
            tuple(t.address for t in self.write_buffer),
        )

    def advance(self, cycles: int, repeats: int, since: tuple[list[int], int]) -> None:
        """Skip `repeats` more spans of `cycles` like the one just simulated (idle_state equal
        at both ends): every time moves on, and the commands counted and logged in the span
        (since = (command counts, log length) at its start) are counted and logged again."""
        shift = cycles * repeats
        self.clk += shift
        self._scanned_moves = -1  # its scans' times are the cycles before the shift
        self._queue_stale = [True] * self.num_queues
        self.ready = [v + shift for v in self.ready]
        for window in self.activation_windows:
            window[:] = [v + shift for v in window]
        counts, logged = since
        s = self.stats
        s.commands = [
            n + (n - before) * repeats for n, before in zip(s.commands, counts, strict=True)
        ]
        if s.log is not None:
            span = s.log[logged:]
            for r in range(1, repeats + 1):
                s.log.extend((e[0] + r * cycles, *e[1:]) for e in span)

    # ---- refresh -------------------------------------------------------------------------
    def _insert_refresh(self) -> None:
        c = self.config
        self.changed = True
        rank, bankgroup, bank = self.next_refresh
        if c.refresh_policy == "BANK_LEVEL_STAGGERED":
            self.refresh_queue.append(
                Command(REFRESH_BANK, rank, bankgroup, bank, -1, -1, -1,
                        self._bank_index(rank, bankgroup, bank))
            )  # fmt: skip
            bankgroup = (bankgroup + 1) % c.bankgroups
            if bankgroup == 0:
                bank = (bank + 1) % c.banks_per_group
                if bank == 0:
                    rank = (rank + 1) % c.ranks
            self.next_refresh = (rank, bankgroup, bank)
        elif c.refresh_policy == "RANK_LEVEL_SIMULTANEOUS":
            self.refresh_queue.append(Command(REFRESH, 0, -1, -1, -1, -1, -1, -1))
        else:
            self.refresh_queue.append(Command(REFRESH, rank, -1, -1, -1, -1, -1, -1))
            self.next_refresh = ((rank + 1) % c.ranks, 0, 0)

    def _finish_refresh(self) -> Command | None:
        ref = self.refresh_queue[0]
        if not self.in_refresh:
            self.changed = True
            self.in_refresh = True
            if ref.kind == REFRESH:
                self.refresh_queues = (
                    {i for i in range(self.num_queues) if i // self.config.banks == ref.rank}
                    if self.config.queue_per_bank
                    else {ref.rank}
                )
            else:
                self.refresh_queues = {self._queue_of(ref)}
        cmd = self._ready(ref)
        if cmd is not None and cmd.kind in (REFRESH, REFRESH_BANK):
            self.refresh_queues = set()
            self.in_refresh = False
        return cmd

    # ---- readiness ---------------------------------------------------------------------
    def _required(self, cmd: Command, b: int) -> int:
        """The command the bank needs first to serve `cmd` (activate, precharge or itself)."""
        if self.bank_state[b] == CLOSED:
            return ACTIVATE if cmd.kind <= WRITE_PRECHARGE else cmd.kind
        if cmd.kind <= WRITE_PRECHARGE:
            return cmd.kind if cmd.row == self.open_row[b] else PRECHARGE
        return PRECHARGE

    def _ready(self, cmd: Command) -> Command | None:
        """The command to issue now on the way to `cmd`, or None if timing forbids it."""
        clk = self.clk
        if cmd.kind == REFRESH:  # all banks of the rank must be closed and ready
            c = self.config
            first = cmd.rank * c.banks
            for b in range(first, first + c.banks):
                need = self._required(cmd, b)
                if clk < self.ready_at(b * KINDS + need):
                    continue
                if need != REFRESH:
                    bg, bank = divmod(b - first, c.banks_per_group)
                    return Command(need, cmd.rank, bg, bank, -1, -1, -1, b)
            if all(clk >= self.ready_at(b * KINDS + REFRESH) and self.bank_state[b] == CLOSED
                   for b in range(first, first + c.banks)):  # fmt: skip
                return cmd
            return None
        b = cmd.bank_index
        need = self._required(cmd, b)
        if clk < self.ready_at(b * KINDS + need):
            return None
        if need == ACTIVATE and not self._activation_window_ok(cmd.rank):
            return None
        if need == cmd.kind:
            return cmd
        return Command(need, cmd.rank, cmd.bankgroup, cmd.bank, cmd.row, cmd.column,
                       cmd.address, b)  # fmt: skip

    def _activation_window_ok(self, rank: int) -> bool:
        window = self.activation_windows[rank]
        return not (window and self.clk < window[0] and len(window) >= 4)

    def _command_to_issue(self) -> Command | None:
        """The first ready command of the queues visited round-robin after the last one that
        issued (empty queues, and a rank's queues while it refreshes, are passed over)."""
        clk = self.clk
        # nothing it reads moved since a scan found none ready, and no time it waited on came
        if (
            clk < self._scan_again_at
            and self.command_moves == self._scanned_moves
            and self.in_refresh == self._scanned_in_refresh
        ):
            return None
        queues, stale, scans = self.queues, self._queue_stale, self._scans
        skip = self.refresh_queues if self.in_refresh else ()
        again = NEVER  # the earliest cycle a command passed over on timing becomes ready
        again_queue = -1
        # the queues holding a command, round-robin from the one after the last that issued
        busy = self._busy
        n = len(busy)
        start = bisect_right(busy, self.queue_index)
        for step in range(n):
            index = busy[start + step - n] if start + step >= n else busy[start + step]
            if index in skip:
                continue
            queue = queues[index]
            scan = scans[index]
            if not stale[index] and clk < scan.again:  # none ready yet, as scanned
                if scan.again < again:
                    again, again_queue = scan.again, index
                continue
            cmd = None if not stale[index] and self._waits_on(index) else self._first_ready(queue)
            if cmd is not None:
                self._scanned_moves = -1
                self.queue_index = index
                if cmd.kind <= WRITE_PRECHARGE:
                    for i, queued in enumerate(queue):
                        if queued.address == cmd.address and queued.kind == cmd.kind:
                            del queue[i]
                            if not queue:
                                busy.remove(index)
                            self.command_moves += 1
                            stale[index] = True
                            break
                return cmd
            self._none_ready(index)
            if scan.again < again:
                again, again_queue = scan.again, index
        self._scan_again_at, self._scan_again_queue = again, again_queue
        self._scanned_moves, self._scanned_in_refresh = self.command_moves, self.in_refresh
        return None  # the index went round to where it was

    def _none_ready(self, index: int) -> None:
        """Queue `index` was scanned and holds no ready command: scans pass it over until a
        command moves or the earliest ready time it passed over (`_first_ready_again`) comes."""
        self._queue_stale[index] = False
        scan = self._scans[index]
        scan.again, scan.issues = self._first_ready_again, self.issues
        scan.first, scan.second = self._first_ready_first, self._first_ready_second

    def _waits_on(self, index: int) -> bool:
        """Does every command of queue `index`, not stale since it was scanned, still wait on
        a ready time it waited on then? Then none is ready (one passed over for another reason
        waited on none), as a scan would find, and `_first_ready_again` is the first of those
        times, the one a scan would find: nothing that decides a command's need changed."""
        scan = self._scans[index]
        first, second = scan.first, scan.second
        if first < 0:
            return False
        clk = self.clk
        again = self.ready_at(first)
        if clk >= again:
            return False
        if second >= 0:
            other = self.ready_at(second)
            if clk >= other:
                return False
            if other < again:
                again = other
        self._first_ready_again = again
        self._first_ready_first, self._first_ready_second = first, second
        return True

    def _first_ready(self, queue: list[Command]) -> Command | None:
        """The first command of a command queue that may issue now (as `_ready`, inlined: the
        queues hold column commands only, and this scan is the controller's hottest loop);
        if none, `_first_ready_again` is the cycle the first command passed over on timing
        becomes ready (one passed over for another reason waits for something to move)."""
        clk, bank_state, open_row, ready_at, floors, kinds = (
            self.clk,
            self.bank_state,
            self.open_row,
            self.ready,
            self._floors,
            KINDS,
        )
        again = NEVER
        first = second = -1  # the distinct ready times waited on (-2: more than two)
        for i, queued in enumerate(queue):
            b = queued.bank_index
            if bank_state[b] == CLOSED:
                need = ACTIVATE
            elif queued.row == open_row[b]:
                need = queued.kind
            else:
                need = PRECHARGE
            at = b * kinds + need
            if at != first and at != second and second != -2:
                if first == -1:
                    first = at
                elif second == -1:
                    second = at
                else:
                    first = second = -2
            ready = ready_at[at]  # (ready_at(at), inlined)
            group, rank = ready_at[floors[2 * at]], ready_at[floors[2 * at + 1]]
            if group > ready:
                ready = group
            if rank > ready:
                ready = rank
            if clk < ready:
                if ready < again:
                    again = ready
                continue
            if need == ACTIVATE:
                window = self.activation_windows[queued.rank]
                if window and clk < window[0] and len(window) >= 4:  # _activation_window_ok
                    if window[0] < again:
                        again = window[0]
                    continue
            if need == PRECHARGE:
                if not self._precharge_allowed(i, queue):
                    continue
            elif (need == WRITE or need == WRITE_PRECHARGE) and self._write_after_read(i, queue):
                continue
            if need == queued.kind:
                return queued
            return Command(need, queued.rank, queued.bankgroup, queued.bank, queued.row,
                           queued.column, queued.address, b)  # fmt: skip
        self._first_ready_again = again
        if first == -2:
            first = second = -1
        self._first_ready_first, self._first_ready_second = first, second
        return None

    def _precharge_allowed(self, i: int, queue: list[Command]) -> bool:
        """Close a row only when no older command uses the bank and its hits are served (≤ 4)."""
        cmd = queue[i]
        b = cmd.bank_index
        if any(q.bank_index == b for q in queue[:i]):
            return False
        open_row = self.open_row[b]
        pending_hits = any(q.row == open_row and q.bank_index == b for q in queue[i:])
        return not pending_hits or self.row_hits[b] >= 4

    @staticmethod
    def _write_after_read(i: int, queue: list[Command]) -> bool:
        w = queue[i]
        return any(
            (q.kind == READ or q.kind == READ_PRECHARGE) and q.row == w.row and q.column == w.column and q.bank == w.bank
            and q.bankgroup == w.bankgroup
            for q in queue[:i]
        )  # fmt: skip

    # ---- issuing -------------------------------------------------------------------------
    def _issue(self, cmd: Command) -> None:
        self.changed = True
        self.command_moves += 1
        self.issues += 1
        s, clk = self.stats, self.clk
        kind = cmd.kind
        if s.log is not None:
            s.log.append((clk, kind, cmd.rank, cmd.bankgroup, cmd.bank, cmd.row, cmd.column))
        is_read = kind == READ or kind == READ_PRECHARGE
        is_write = kind == WRITE or kind == WRITE_PRECHARGE
        if is_read:
            served = self._served(cmd, False)
            for trans in self.pending_reads.pop(cmd.address):
                trans.complete = clk + self._read_delay
                self.settled += 1
                trans.served = served
                s.read_latencies.append(trans.complete - trans.added)
            s.last_data_cycle = max(s.last_data_cycle, clk + self._read_delay)
        elif is_write:
            self.pending_writes.pop(cmd.address).served = self._served(cmd, True)
            s.last_data_cycle = max(s.last_data_cycle, clk + self._write_delay)
        elif kind == ACTIVATE:
            b = cmd.bank_index
            self.activated_at[b] = clk
            self.after_refresh[b], self.refreshed[b] = self.refreshed[b], False
            self.previous_opener[b] = self.opener[b]
            waiting = self.pending_reads.get(cmd.address)
            opening = waiting[0] if waiting else self.pending_writes.get(cmd.address)
            self.opener[b] = opening.owner if opening is not None else None
        elif kind == REFRESH:
            banks = self.config.banks
            first = cmd.rank * banks
            self.refreshed[first : first + banks] = [True] * banks
        elif kind == REFRESH_BANK:
            self.refreshed[cmd.bank_index] = True
        s.commands[kind] += 1
        if is_read and self.row_hits[cmd.bank_index]:
            s.read_row_hits += 1
        elif is_write and self.row_hits[cmd.bank_index]:
            s.write_row_hits += 1
        self._update_state(cmd)
        self._update_timing(cmd)

    def _served(self, cmd: Command, is_write: bool) -> tuple:
        b = cmd.bank_index
        turned = self.last_column_write is not None and self.last_column_write != is_write
        self.last_column_write = is_write
        return (
            self.clk,
            self.activated_at[b],
            self.after_refresh[b],
            self.previous_opener[b],
            turned,
        )

    def _update_state(self, cmd: Command) -> None:
        kind = cmd.kind
        if kind == REFRESH:
            self.refresh_queue = _drop_first(self.refresh_queue, lambda r: r.rank == cmd.rank)
            return
        b = cmd.bank_index
        if kind == REFRESH_BANK:
            self.refresh_queue = _drop_first(
                self.refresh_queue, lambda r: r.bank_index == b and r.kind == REFRESH_BANK
            )
        elif kind == ACTIVATE:
            self.bank_state[b] = OPEN
            self.open_row[b] = cmd.row
        elif kind in (READ, WRITE):
            self.row_hits[b] += 1
        elif kind in (READ_PRECHARGE, WRITE_PRECHARGE, PRECHARGE):
            self.bank_state[b] = CLOSED
            self.open_row[b] = -1
            self.row_hits[b] = 0
        else:
            return
        self._queue_stale[b if self._queue_per_bank else cmd.rank] = True

    def _update_timing(self, cmd: Command) -> None:
        clk = self.clk
        kind = cmd.kind
        ready = self.ready
        raises: Raises | None
        if kind == REFRESH:
            banks = self.config.banks
            first = cmd.rank * banks
            raises = [
                (d, [b * KINDS + k for b in range(first, first + banks)])
                for k, d in self.tables.same_rank[kind]
            ]
        else:
            if kind == ACTIVATE:
                window = self.activation_windows[cmd.rank]
                if window and clk >= window[0]:
                    window.pop(0)
                window.append(clk + self._tFAW)
            at = cmd.bank_index * KINDS + kind
            raises = self._raises[at]
            if raises is None:
                raises = self._raises[at] = self._raises_of(cmd)
        # one int object per delay, stored in every entry it raises: the compiled loop boxes it
        # once, not once an entry, and later reads find few objects to load (the same list)
        store = cast("list[object]", ready)
        for delay, held in raises:
            v = clk + delay
            boxed: object = v
            for i in held:
                if ready[i] < v:
                    store[i] = boxed

    def _raises_of(self, cmd: Command) -> Raises:
        """What a command of cmd's kind on cmd's bank constrains, by delay: (the delay, the
        indices of the (bank, kind) ready times it holds back), over its bank, its bank group,
        its rank and the other ranks; computed once per (kind, bank), as the timing of every
        issue reads it."""
        c, t, kind = self.config, self.tables, cmd.kind
        b0 = cmd.bank_index
        per_group, per_rank = c.banks_per_group, c.banks
        rank_first = b0 // per_rank * per_rank
        group_first = rank_first + (b0 - rank_first) // per_group * per_group
        out = [(b0 * KINDS + k, d) for k, d in t.same_bank[kind]]
        for b in range(group_first, group_first + per_group):
            if b != b0:
                out += [(b * KINDS + k, d) for k, d in t.same_bankgroup[kind]]
        # the other bank groups of the rank and the other ranks: their floors (ready_at)
        groups, n_groups = c.bankgroups, c.ranks * c.bankgroups
        for g in range(rank_first // per_group, rank_first // per_group + groups):
            if g != group_first // per_group:
                out += [(self.n_times + g * KINDS + k, d) for k, d in t.other_bankgroups[kind]]
        if c.ranks > 1 and t.other_ranks[kind]:
            for r in range(c.ranks):
                if r != rank_first // per_rank:
                    at = self.n_times + (n_groups + r) * KINDS
                    out += [(at + k, d) for k, d in t.other_ranks[kind]]
        by_delay: dict[int, list[int]] = {}
        for i, d in out:
            by_delay.setdefault(d, []).append(i)
        return list(by_delay.items())

    # ---- moving a transaction into the command queues --------------------------------------
    def _schedule_transaction(self) -> None:
        unified = self._unified_queue
        if self.write_draining == 0 and not unified:
            n = len(self.write_buffer)
            if (
                n >= self._trans_queue_size
                or (n > 8 and not self._busy)
                or (n and self.flush_writes and not self.read_queue and not self._busy)
            ):
                self.write_draining = n
                self.changed = True
        if unified:
            queue = self.read_queue
        else:
            queue = self.write_buffer if self.write_draining > 0 else self.read_queue
        writes = queue is self.write_buffer
        start = 0
        if self._no_room_moves == self.command_moves and self._no_room_writes == writes:
            start = self._no_room_upto  # no command queue changed: those before find no room
            if start >= len(queue):
                return
        queues, per_bank, size = self.queues, self._queue_per_bank, self._cmd_queue_size
        for i in range(start, len(queue)):
            trans = queue[i]
            cmd = trans.command or self._to_command(trans)
            index = cmd.bank_index if per_bank else cmd.rank
            q = queues[index]
            if len(q) < size:
                if not unified and trans.is_write:
                    if trans.address in self.pending_reads:  # a read of it is older
                        self.write_draining = 0
                        self.changed = True
                        self._check_drain_deadlock(trans)
                        return
                    self.write_draining -= 1
                q.append(cmd)
                if len(q) == 1:
                    insort(self._busy, index)
                self.command_moves += 1
                self._queue_stale[index] = True
                del queue[i]
                self.changed = True
                return
        self._no_room_moves, self._no_room_writes = self.command_moves, writes
        self._no_room_upto = len(queue)

    def _check_drain_deadlock(self, write: Transaction) -> None:
        """Raise DeadlockError where DRAMsim3's transaction scheduling loops for ever: a write
        waits for an older read of its address that is still in the read queue, no command
        queue holds anything that could move, and the write buffer is so full that every
        cycle drains writes first, so that read never reaches a command queue (and nothing
        but a refresh happens again)."""
        n = len(self.write_buffer)
        if self._busy or not (n >= self._trans_queue_size or n > 8):
            return
        older = self.pending_reads[write.address][0]
        if not any(t is older for t in self.read_queue):
            return  # issued already: its data returns, and the write may go
        raise DeadlockError(
            f"DRAM channel {self.index}, cycle {self.clk}: the write to {write.address:#x} waits "
            f"for an older read of the same address that the write drain keeps from the command "
            f"queues for ever (write buffer {n} of {self._trans_queue_size} requests): DRAMsim3's "
            "scheduling loops on these requests without end, so cyclesim stops"
        )

    def _to_command(self, trans: Transaction) -> Command:
        cmd = trans.command
        if cmd is None:
            cmd = trans.command = self._decode_command(trans)
        return cmd

    def _decode_command(self, trans: Transaction) -> Command:
        rank, bankgroup, bank, row, column = self.decode(trans.address)
        if self._close_page:
            kind = WRITE_PRECHARGE if trans.is_write else READ_PRECHARGE
        else:
            kind = WRITE if trans.is_write else READ
        return Command(kind, rank, bankgroup, bank, row, column, trans.address,
                       self._bank_index(rank, bankgroup, bank))  # fmt: skip


def _is_column(kind: int) -> bool:
    return kind <= WRITE_PRECHARGE


def _drop_first(items: list, predicate) -> list:
    for i, item in enumerate(items):
        if predicate(item):
            return items[:i] + items[i + 1 :]
    return items


__all__ = ["Channel", "ChannelStats", "Command", "Transaction", "NEVER"]
