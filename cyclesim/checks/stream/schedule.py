"""Stream's solved schedule, as its runner prints it, in frozen dataclasses.

One `StreamRun` per (accelerator, workload, mapping): per fused group the steady state Stream
solved (N iterations of slots, overlap, fill), per node and core the ZigZag cost and the mapping
its search chose, per transfer its route, moved bits and charged cycles.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil
from typing import Any


@dataclass(frozen=True, slots=True)
class NodeOnCore:
    """One node's tile on one core: Stream's cost and the ZigZag case behind it (None: no ZigZag)."""

    core: int
    latency_cycles: float  # latency_total2 - systolic drain: what the slot is charged
    energy_pj: float | None
    drain_cycles: float
    zigzag: dict[str, Any] | None  # workload, mapping, temporal_mapping, latency_total2, ...


@dataclass(frozen=True, slots=True)
class StreamNode:
    """A computation node of one steady-state iteration."""

    name: str
    type: str
    slot: int
    active_cycles: float  # the slowest core's latency x active fraction
    cores: tuple[NodeOnCore, ...]


@dataclass(frozen=True, slots=True)
class RouteLink:
    """One link of a transfer's route: its share of the delivered bits and its load (1 = bottleneck)."""

    link: str
    bandwidth: float
    share: float
    load: float


@dataclass(frozen=True, slots=True)
class StreamTransfer:
    """A transfer of one iteration: route, bits, the cycles Stream charged its slot."""

    name: str
    tensor: str
    kind: str  # MEM_TO_COMPUTE, COMPUTE_TO_COMPUTE, COMPUTE_TO_MEM, MEM_TO_MEM
    slot: int
    sources: tuple[int, ...]
    targets: tuple[int, ...]
    links: tuple[RouteLink, ...]
    tensor_bits: float
    moved_bits: float
    route_cycles: float  # one firing on its route
    reuse_factor: float  # iterations one firing serves
    charged_cycles: float  # route_cycles x active fraction / reuse factor: what the slot sees

    def link_cycles(self) -> float:
        """Cycles the route's busiest link needs for the moved bits at full bandwidth, whatever
        share Stream assigned it (what a link really takes for one firing)."""
        return max((ceil(self.moved_bits / link.bandwidth) for link in self.links), default=0)


@dataclass(frozen=True, slots=True)
class PortDemand:
    """Bits through one top-memory port in one slot (the MILP's burst bound)."""

    port: str  # core.memory.port
    slot: int
    bits: float
    rate: float  # bits per cycle

    @property
    def cycles(self) -> float:
        return self.bits / self.rate


@dataclass(frozen=True, slots=True)
class StreamGroup:
    """One fused group's steady state."""

    index: int
    layers: tuple[str, ...]
    iterations: int
    total: int
    per_iteration: int
    overlap: int
    fill: int
    fill_drain: float  # systolic drains along the longest chain of dependent nodes
    fill_warmup: float  # sliding windows' longer first tiles, along the chain of waiting readers
    fill_resident: float | None  # first fetches of held inputs, as the MILP's fill variable has it
    slot_latencies: dict[int, float]
    nodes: tuple[StreamNode, ...]
    transfers: tuple[StreamTransfer, ...]
    ports: tuple[PortDemand, ...]
    port_bits_per_iteration: dict[str, tuple[float, float]]  # port -> (bits, rate)
    link_busy_per_iteration: dict[str, float]
    idle: dict[str, float]  # resource -> idle cycles per iteration (bounds the overlap)
    energy_pj: float | None
    memory_accesses: Any  # Stream's per-core, per-tensor port-width word counts
    solve_status: str

    @property
    def interval(self) -> int:
        """Initiation interval: the iteration minus the overlap with the next."""
        return self.per_iteration - self.overlap


@dataclass(frozen=True, slots=True)
class StreamRun:
    """What real Stream reported for one case."""

    total_cycles: float
    groups: tuple[StreamGroup, ...]
    dispatch_cycles: float
    stream_version: str
    zigzag_version: str
    seconds: float
    cached: bool = False


def parse_run(payload: dict[str, Any], *, cached: bool = False) -> StreamRun:
    """The runner's JSON as a StreamRun."""
    return StreamRun(
        total_cycles=float(payload["total_cycles"]),
        groups=tuple(_group(i, g) for i, g in enumerate(payload["groups"])),
        dispatch_cycles=float(payload.get("dispatch_cycles") or 0),
        stream_version=str(payload["stream_version"]),
        zigzag_version=str(payload["zigzag_version"]),
        seconds=float(payload.get("seconds", 0.0)),
        cached=cached,
    )


def _group(index: int, g: dict[str, Any]) -> StreamGroup:
    latency = g["latency"]
    nodes = tuple(
        StreamNode(
            n["name"],
            n["type"],
            int(n["slot"]),
            float(n["active_runtime_cycles"] or 0),
            tuple(
                NodeOnCore(
                    int(c["core"]),
                    float(c["latency_cycles"] or 0),
                    c["energy_pj"],
                    float((c["metadata"] or {}).get("drain_cycles") or 0),
                    c["zigzag"],
                )
                for c in n["cores"]
            ),
        )
        for n in g["nodes"]
    )
    transfers = tuple(
        StreamTransfer(
            t["name"],
            t["tensor"],
            str(t["type"]),
            int(t["slot"]),
            tuple(t["sources"]),
            tuple(t["targets"]),
            tuple(
                RouteLink(x["link"], float(x["bandwidth"]), float(x["share"]), float(x["load"]))
                for x in t["links"]
            ),
            float(t["tensor_bits"]),
            float(t["moved_bits"]),
            float(t["route_cycles"] or 0),
            float(t["reuse_factor"] or 1),
            float(t["charged_cycles"] or 0),
        )
        for t in g["transfers"]
    )
    energy = (g.get("performance") or {}).get("energy") or {}
    return StreamGroup(
        index=index,
        layers=tuple(g["layers"]),
        iterations=int(g["iterations"]),
        total=int(latency["total"]),
        per_iteration=int(latency["per_iteration"]),
        overlap=int(latency["overlap"]),
        fill=int(latency["fill"]),
        fill_drain=float((g.get("fill_parts") or {}).get("drain") or 0),
        fill_warmup=float((g.get("fill_parts") or {}).get("warmup") or 0),
        fill_resident=(g.get("fill_parts") or {}).get("resident"),
        slot_latencies={int(k): float(v) for k, v in g["slot_latencies"].items()},
        nodes=nodes,
        transfers=transfers,
        ports=tuple(
            PortDemand(p["port"], int(p["slot"]), float(p["bits"]), float(p["rate"]))
            for p in g["port_slot_demand"]
        ),
        port_bits_per_iteration={
            p["port"]: (float(p["bits"]), float(p["rate"])) for p in g["port_iteration_demand"]
        },
        link_busy_per_iteration={k: float(v) for k, v in g["link_busy_per_iteration"].items()},
        idle={k: float(v) for k, v in g["idle_latency"].items() if v is not None},
        energy_pj=energy.get("total_pj"),
        memory_accesses=g.get("memory_accesses"),
        solve_status=str(g["solve_status"]),
    )
