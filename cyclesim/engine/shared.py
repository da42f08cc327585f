"""One replay's shared parts, built from the plan: the clock, the fabric, the DMA channels,
the DRAM side, the storage nodes and the PE array, and the counts they add to.

The components (engine/storage_node.py, engine/pe_array.py) hold their own state and run their
own SimPy processes; this is what they share. replay_plan (engine/run.py) builds one, starts
the processes and runs them to the end.
"""

from __future__ import annotations

import os

from cyclesim.engine.dma import Channels
from cyclesim.engine.environment import ReplayEnvironment
from cyclesim.engine.fabric import Fabric
from cyclesim.engine.pe_array import PeArray
from cyclesim.engine.record import Recorder, TraceFilter, compile_filter
from cyclesim.engine.rows import Rows
from cyclesim.engine.space import LEDGER_ENVIRONMENT_VARIABLE, Space
from cyclesim.engine.storage_node import StorageNode
from cyclesim.engine.transfer import Link
from cyclesim.schedule.plan import NodePlan, Plan


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
        self.fabric = Fabric(self.env, widths, rec.grants, plan.port_order)
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
        self.dram: dict = {}  # per DRAM-modelled memory: its timer (engine/dram_timer.py)
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
            StorageNode(
                self,
                n,
                intermediate=n.tensor in consumed and n.tensor in self.producer_of,
                takes_room=ledger or self.space.watched(n.index),
            )
            for n in plan.nodes
        ]
        self.pe = PeArray(self)
        # segments the PE array started since the driver last looked (None: nobody looks)
        self.boundaries: list[int] | None = None
        self.boundary_every = 1  # ... of the segments that are a multiple of this

    def _build_dram(self, trace: bool) -> None:
        """The DRAM-modelled memories' timers: the compiled one when it is current, else
        dram_timer.py (dram_native.py), or the controller in the loop."""
        from cyclesim.engine.dram_loop import DramLoop
        from cyclesim.engine.dram_native import DramTimer

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
        if is_write:
            link = Link(2 * n.index + 1, n.tensor, n.drain_dst, n.drain_src, dma)
            link.child_on_tie = True  # a write-back's data leaves the child's read port
        else:
            link = Link(2 * n.index, n.tensor, n.fill_src, n.fill_dst, dma)
        addresses = self.plan.dram_nodes[n.index] if self.plan.dram_nodes else None
        if addresses is not None:
            from cyclesim.engine.dram_port import DramSide

            link.dram = DramSide(self.dram[addresses.memory], addresses, is_write)
        return link
