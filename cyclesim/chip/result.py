"""The chip replay's results: cycles, per core its compute and causes, per link, bus and DRAM
port its busy cycles, bits and utilisation, per step and transfer when they ran. Views and
the report read these numbers only."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from cyclesim.chip.attribution import CoreRow, CoreSpan, core_rows
from cyclesim.chip.engine import FAST_FORWARD, ChipRun
from cyclesim.results.schema import versioned


@dataclass(frozen=True)
class PortUse:
    name: str  # a link, a bus, or the DRAM port ('dram.rw')
    kind: str  # link | bus | dram_port
    busy_cycles: int
    bits: int
    bursts: int
    width_bits: int

    def utilisation(self, cycles: int) -> float:
        return self.busy_cycles / cycles if cycles else 0.0


@dataclass(frozen=True)
class ChipResult:
    run: ChipRun

    @property
    def cycles(self) -> int:
        return self.run.cycles

    @cached_property
    def _attribution(self) -> tuple[dict[str, int], list[CoreRow]]:
        return core_rows(self.run)

    @cached_property
    def spans(self) -> list[CoreSpan]:
        """Every core's steps and waits placed in time (cycle order per core)."""
        spans: list[CoreSpan] = []
        core_rows(self.run, spans)
        return sorted(spans, key=lambda s: (s.core, s.start))

    @property
    def compute_cycles(self) -> dict[str, int]:
        """Per core, the cycles its PE array completed an iteration (its steps' ideal compute)."""
        return self._attribution[0]

    @property
    def rows(self) -> list[CoreRow]:
        """Per core every non-compute cycle by (phase, step phase, cause, where, tensor,
        competitor, its core), largest first per core."""
        rows = self._attribution[1]
        order = {c: i for i, c in enumerate(self.run.plan.chip.core_names)}
        return sorted(rows, key=lambda r: (order[r.core], -r.cycles))

    @cached_property
    def ports(self) -> list[PortUse]:
        chip = self.run.plan.chip
        kinds = {m.name: m.kind.value for m in chip.media}
        out = []
        for key in self.run.plan.port_keys:
            grants = self.run.grants[key]
            out.append(PortUse(key, kinds.get(key, "dram_port"), sum(e - s for s, e, _, _ in grants),
                               sum(b for *_, b in grants), len(grants),
                               self.run.plan.widths[key]))  # fmt: skip
        return out

    def port(self, name: str) -> PortUse:
        return next(p for p in self.ports if p.name == name)

    def steps(self) -> list[dict]:
        run, plan = self.run, self.run.plan
        return [dict(step=s.name, layer=s.layer, core=s.core, index=s.index,
                     start=run.step_start[s.id], end=run.step_end[s.id]) for s in plan.steps]  # fmt: skip

    def transfers(self) -> list[dict]:
        run, plan = self.run, self.run.plan
        out = []
        for t in plan.transfers:
            hops = [dict(medium=plan.hops[h].medium.name, src=plan.hops[h].src,
                         dsts=list(plan.hops[h].dsts), start=run.hops[h].ready,
                         end=run.hops[h].end, bursts=len(run.hops[h].bursts)) for h in t.hops]  # fmt: skip
            out.append(dict(id=t.id, tensor=t.tensor, bits=t.bits, source=t.source,
                            targets=list(t.targets), ready=run.ready[t.id], issued=run.issued[t.id],
                            landed=dict(run.landed[t.id]), hops=hops))  # fmt: skip
        return out

    def to_json_dict(self) -> dict:
        plan = self.run.plan
        cores = []
        for c in plan.chip.core_names:
            rows = [r for r in self.rows if r.core == c]
            cores.append(dict(
                core=c, cycles=self.cycles, compute_cycles=self.compute_cycles[c],
                causes=[dict(phase=r.phase, step_phase=r.step_phase, cause=r.cause, where=r.where,
                             tensor=r.tensor, competitor=r.competitor,
                             competitor_core=r.competitor_core, cycles=r.cycles) for r in rows],
            ))  # fmt: skip
        ports = [dict(name=p.name, kind=p.kind, width_bits=p.width_bits, busy_cycles=p.busy_cycles,
                      bits=p.bits, bursts=p.bursts,
                      utilisation=round(p.utilisation(self.cycles), 6)) for p in self.ports]  # fmt: skip
        return versioned(dict(
            chip=plan.chip.name, workload=plan.workload.name, mapping=plan.mapping.name,
            cycles=self.cycles, cores=cores, interconnect=ports, steps=self.steps(),
            transfers=self.transfers(), events=self.run.events,
            fast_forward=dict(chip=FAST_FORWARD, steps=self.run.fast_forward),
            wall_seconds=round(self.run.wall_seconds, 6),
        ))  # fmt: skip
