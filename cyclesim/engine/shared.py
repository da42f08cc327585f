"""One replay's shared parts, built from the plan: the clock, the fabric, the DMA channels,
the DRAM side, the storage nodes and the PE array, and the counts they add to.

The components (engine/storage_node.py, engine/pe_array.py) hold their own state and run their
own SimPy processes; this is what they share. replay_plan (engine/run.py) builds one, starts
the processes and runs them to the end.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from cyclesim.engine import native
from cyclesim.engine.dma import Channels
from cyclesim.engine.environment import ReplayEnvironment
from cyclesim.engine.fabric import requester
from cyclesim.engine.record import Recorder, TraceFilter, compile_filter
from cyclesim.engine.rows import Rows
from cyclesim.engine.snapshot import Origin, Snapshot, Watched
from cyclesim.engine.space import LEDGER_ENVIRONMENT_VARIABLE, Space
from cyclesim.schedule.plan import NodePlan, Plan

if TYPE_CHECKING:
    from cyclesim.engine.link import Link


class Replay:
    """The shared parts of one run; the storage nodes and the PE array run its processes."""

    def __init__(self, plan: Plan, trace: bool, trace_filter: TraceFilter | None = None) -> None:
        self.plan = plan
        self.env = ReplayEnvironment()
        self.rec = rec = Recorder()
        if trace:
            rec.pe_segments = Rows()
            rec.transfers = Rows()
            rec.occupancy = Rows()
            rec.systolic_spans = Rows()
            if trace_filter is not None:
                compile_filter(rec, plan, trace_filter)
        self.trace = trace
        widths = {p.key: p.width_bits for p in plan.ports}
        # the components, compiled or pure (engine/native.py)
        parts = native.components
        self.fabric = parts.Fabric(self.env, widths, rec.grants, plan.port_order)
        # (einsum, tensor, memory, action, direction) -> [values, bits], in first-use order
        self.counts: dict[tuple, list[int]] = {}
        self.dma: dict[str, tuple[Channels, int, str]] = {
            name: (Channels(self.env, channels, name), setup, name)
            for name, channels, setup in plan.dma
        }
        self.segments_done = 0  # PE segments finished (the progress bar's count)
        rec.fill_tl = [Rows() for _ in plan.nodes]
        rec.drain_tl = [Rows() for _ in plan.nodes]
        self.end = 0  # the cycle the last process finished
        self.producer_of = {leaf.operands[-1].tensor: leaf.einsum for leaf in plan.leaves}
        self.dram: dict = {}  # per DRAM-modelled memory: its timer (dram/timer.py)
        if plan.dram:
            self._build_dram(trace)
        self.l1 = None  # L1 placement (engine/l1.py) when a memory has an `allocator:`
        if plan.allocators:
            from cyclesim.engine.l1 import L1Places

            self.l1 = L1Places(plan, rec, trace)
        # what each memory holds; fills wait for room (DESIGN "A memory never holds more than
        # its size"); with a ledger, the invariant is checked after the run
        ledger = os.environ.get(LEDGER_ENVIRONMENT_VARIABLE, "0") not in ("", "0")
        self.space = Space(self.env, plan, ledger)
        # per node: is its tensor an intermediate (another Einsum reads it)? Only those nodes
        # record when their producer computed each part, for the `dependency` rule
        consumed = {o.tensor for leaf in plan.leaves for o in leaf.operands if not o.is_output}
        self.nodes = [
            parts.StorageNode(
                self,
                n,
                intermediate=n.tensor in consumed and n.tensor in self.producer_of,
                takes_room=ledger or self.space.watched(n.index),
            )
            for n in plan.nodes
        ]
        self.pe = parts.PeArray(self)
        # segments the PE array started since the driver last looked (None: nobody looks)
        self.boundaries: list[int] | None = None
        self.boundary_every = 1  # ... of the segments that are a multiple of this

    def _build_dram(self, trace: bool) -> None:
        """The DRAM-modelled memories' timers: the compiled one when it is current, else
        dram/timer.py (dram/native.py), or the controller in the loop."""
        from cyclesim.dram.native import DramTimer
        from cyclesim.engine.dram_loop import DramLoop

        self.dram = {
            name: DramLoop(self.env, config, mhz, record=True, keep_commands=trace)
            if config.replay_controller
            else DramTimer(config, mhz)
            for name, config, _, mhz in self.plan.dram
        }
        if trace:  # each row visit's bank commands, for the per-bank trace signals
            self.rec.dram_banks = []
            for name, timer in self.dram.items():
                if not isinstance(timer, DramLoop):
                    timer.trace_into(self.rec.dram_banks, name)

    def finish_dram(self) -> None:
        """After the run: the DRAM timers' own counts and open rows into the records (the
        controller in the loop first drains its buffered writes)."""
        rec = self.rec
        for name, timer in self.dram.items():
            if not hasattr(timer, "trace_into"):  # the controller in the loop
                timer.finish(int(self.end))
                rec.dram_requests[name] = timer.requests()
                if rec.dram_banks is not None:  # the bank commands, for the traces' bank signals
                    rec.dram_banks.extend(timer.bank_records(name))
            rec.dram_counts[name], rec.dram_open_rows[name] = dict(timer.counts), timer.open_row[:]

    def count(
        self,
        einsum: str,
        tensor: str,
        memory: str,
        action: str,
        direction: str,
        values: int,
        bits: int,
    ) -> None:
        """Add values (of `bits` bits each) to one count."""
        cur = self.cell((einsum, tensor, memory, action, direction))
        cur[0] += values
        cur[1] += values * bits

    def cell(self, key: tuple) -> list[int]:
        """The [values, bits] cell of a count key, made (in first-use order) if new."""
        cur = self.counts.get(key)
        if cur is None:
            cur = self.counts[key] = [0, 0]
        return cur

    def link(self, n: NodePlan, is_write: bool) -> Link:
        """The link of n's fill (or write-back), with its DMA engine and, when n's parent lives
        in a DRAM-modelled memory, its DRAM side."""
        dma = self.dma[n.dma] if n.dma is not None else None
        new_link = native.components.Link  # compiled or pure (engine/native.py)
        if is_write:
            link = new_link(requester(n.index, True), n.tensor, n.drain_dst, n.drain_src, dma)
            link.child_on_tie = True  # a write-back's data leaves the child's read port
        else:
            link = new_link(requester(n.index, False), n.tensor, n.fill_src, n.fill_dst, dma)
        addresses = self.plan.dram_nodes[n.index] if self.plan.dram_nodes else None
        if addresses is not None:
            from cyclesim.engine.dram_port import DramSide

            link.dram = DramSide(self.dram[addresses.memory], addresses, is_write)
        return link

    # ------------------------------------------------------------------ fast-forward
    def snapshot(
        self, watched: Watched, below: tuple, grants: bool, g: int, now: int
    ) -> tuple[tuple, dict, int]:
        """The whole state relative to cycle now and to each node's tile at segment g: the
        key, the frozen nodes' countdowns, and the cycle from which last-grant cycles are
        compared exactly (Fabric.recent).

        below: per node, tiles per iteration of the level (0: frozen, compared absolutely);
        grants: a snapshot between grants inside transfers (the PE array stays put).
        Raise Unknown (engine/snapshot.py) for any state it cannot describe."""
        origin = Origin(self.env, now, watched.ids, self.fabric, self.dma)
        recent = self.fabric.recent(now)
        bases = [g // per if d else 0 for d, per in zip(below, watched.tiles_per, strict=True)]
        out = [origin.queue()]
        countdowns: dict = {}
        finishers = self.rec.last_finisher
        for node, base, d in zip(self.nodes, bases, below, strict=True):
            n = node.plan
            rows, frozen = node.tiles.snapshot(
                origin, n.index, base, bool(d), n.dependency_groups, finishers
            )
            countdowns.update(frozen)
            out.append(rows)
        out.extend(self.fabric.snapshot(origin, recent))
        out.append(tuple(channels.snapshot(origin) for channels, _, _ in self.dma.values()))
        for node, base in zip(self.nodes, bases, strict=True):
            out.extend(node.snapshot(origin, base, grants))
        out.append(self.pe.snapshot(origin, g, grants))
        out.append(origin.targets(watched.procs))
        return tuple(out), countdowns, recent

    def marks(self, active: list) -> dict:
        """Record lengths and accumulator values, to find what one period added; active:
        (node plan, NodeState, is the fill) per watched fill and write-back."""
        rec = self.rec
        lists = {"pe_waits": len(rec.pe_waits)}
        for name in ("pe_segments", "transfers", "occupancy", "systolic_spans"):
            v = getattr(rec, name)
            if v is not None:
                lists[name] = len(v)
        return {
            "lists": lists,  # (compared whole between grants: nothing may be added)
            "fill_tl": [len(tl) for tl in rec.fill_tl],
            "drain_tl": [len(tl) for tl in rec.drain_tl],
            "grants": {k: len(v) for k, v in rec.grants.items()},
            "counts": {k: tuple(v) for k, v in self.counts.items()},
            "spatial": {k: tuple(v) for k, v in rec.spatial.items()},
            "systolic": {k: tuple(v) for k, v in rec.systolic.items()},
            "runs": self.pe.runs(),
            "segments": self.segments_done,
            "finishers": rec.last_finisher.entry_count,
            "rules": rec.last_finisher.rule_count,
            "in_use": [set(node.tiles.remaining) for node in self.nodes],
            "xfers": [None if st.xfer is None else (st.xfer, st.xfer.i) for _, st, _ in active],
        }

    def shift(
        self, a: Snapshot, b: Snapshot, K: int, tiles: tuple, segments: int, visits: list
    ) -> int:
        """Move the whole replay K periods (the one from a to b) on, as if they had run;
        return the cycles moved. tiles: per node, tiles per period (0: frozen); segments: PE
        segments per period; visits: per node, its VisitBlocks (engine/visits.py). The period's
        records are engine/fastforward_records.py's to copy."""
        dt = K * (b.time - a.time)
        self.env.shift(dt)  # the clock and the queue
        for node, d in zip(self.nodes, tiles, strict=True):
            node.shift(dt, K * d, visits[node.plan.index])
        self.pe.shift(dt, K * segments)
        for (node, name, k), v in b.countdowns.items():  # frozen tiles: uses left fall
            drop = a.countdowns[(node, name, k)] - v
            if drop:
                getattr(self.nodes[node].tiles, name)[k] = v - K * drop
        self.fabric.shift(dt, b.recent)
        self._repeat_accumulators(a.marks, b.marks, K, dt)
        return dt

    def shift_between_grants(self, a: Snapshot, b: Snapshot, K: int) -> int:
        """Move K periods on inside transfers: time, burst indices, round robin; return the
        cycles moved (the PE array and the tiles stay put)."""
        dt = K * (b.time - a.time)
        self.env.shift(dt)
        for xa, xb in zip(a.marks["xfers"], b.marks["xfers"], strict=True):
            if xb is not None:
                xb[0].shift(dt, K * (xb[1] - xa[1]))
        self.fabric.shift(dt, b.recent)
        return dt

    def _repeat_accumulators(self, ma: dict, mb: dict, K: int, dt: int) -> None:
        """Counts, spatial and systolic stalls, kinds of segment: K more periods."""
        for key, cell in self.counts.items():
            v0, b0 = ma["counts"].get(key, (0, 0))
            v1, b1 = mb["counts"][key]
            cell[0] += K * (v1 - v0)
            cell[1] += K * (b1 - b0)
        for table, name in ((self.rec.spatial, "spatial"), (self.rec.systolic, "systolic")):
            for key, cur in table.items():
                c0, _, l0 = ma[name].get(key, (0, None, None))
                c1, _, l1 = mb[name][key]
                if c1 != c0 or l1 != l0:
                    cur[0] += K * (c1 - c0)
                    cur[2] += dt
        self.pe.repeat_runs(ma["runs"], mb["runs"], K)
        self.segments_done += K * (mb["segments"] - ma["segments"])
