"""Per-action energy and throughput an AccelForge spec leaves to its component classes.

AccelForge (`Spec.calculate_component_costs`) takes an action's energy and throughput from the
spec when it states them, 0 and unbounded for hwcomponents' `Dummy` class, and otherwise from
the hwcomponents model of the component's `component_class` (CACTI, Aladdin, ... with the
component's attributes). cyclesim does not re-implement those models: the check asks the real
accelforge for them (`peer.component_costs`) and the reader takes them from here, naming the
model each number came from. Model throughputs are actions per second; a `total_latency` of the
form `sum(a.n_calls for a in actions) / RATE` is a port shared by all actions at RATE per second.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from cyclesim.checks.accelforge.read_fields import Where
from cyclesim.checks.accelforge.spec import (
    AfAction,
    AfActionCost,
    AfArch,
    AfCompute,
    AfMemory,
)
from cyclesim.errors import PeerUnavailable

ComponentCosts = Mapping[str, Mapping[str, AfActionCost]]  # component -> action -> cost
CostProvider = Callable[[], ComponentCosts]

PER_SECOND_COMPUTE_RATE = 1e6  # compute actions per "cycle" that can only be per second
_SHARED_PORT = re.compile(r"^sum\(\s*a\.n_calls\s+for\s+a\s+in\s+actions\s*\)\s*(/.+)$")


@dataclass(slots=True)
class CostLookup:
    """Asks the provider (the real accelforge) once, when an action first needs a model's value."""

    provider: CostProvider | None
    costs: ComponentCosts | None = None
    used_a_model_throughput: bool = False
    sources: dict[tuple[str, str], str] = field(default_factory=dict)

    def cost(self, component: str, action: str, component_class: str, where: Where) -> AfActionCost:
        """The model's cost of one action. Raise SpecError naming the class if none can be had."""
        if self.costs is None:
            if self.provider is None:
                raise where.error(
                    f"no energy or throughput for action '{action}': component class "
                    f"'{component_class}' would supply it through hwcomponents' models, which "
                    "cyclesim asks the real accelforge for (none was given here)",
                    expected="energy: and throughput: on the action, or an AccelForge environment",
                )
            try:
                self.costs = self.provider()
            except PeerUnavailable as error:
                raise where.error(
                    f"component class '{component_class}' needs hwcomponents' models for action "
                    f"'{action}', which cyclesim asks the real accelforge for: {error}",
                    expected="energy: and throughput: on the action, or `make peers`",
                ) from None
        try:
            return self.costs[component][action]
        except KeyError:
            raise where.error(
                f"accelforge gave no cost for {component} action '{action}'",
                expected="a component and action accelforge's calculate_component_costs knows",
            ) from None


def is_shared_port(total_latency: Any) -> bool:
    """Whether `total_latency` is `sum(a.n_calls for a in actions) / RATE`."""
    return _SHARED_PORT.match(" ".join(str(total_latency or "").split())) is not None


def shared_port_rate(
    total_latency: Any, variables: Mapping[str, Any], where: Where
) -> float | None:
    """RATE of `total_latency: sum(a.n_calls for a in actions) / RATE` (may be `/ 32 / 200e6`);
    None for any other form."""
    text = " ".join(str(total_latency or "").split())
    match = _SHARED_PORT.match(text)
    if match is None:
        return None
    seconds_per_action = where.child("total_latency").number("1 " + match.group(1), variables)
    return math.inf if seconds_per_action == 0 else 1 / seconds_per_action


def source_of(cost: AfActionCost, component_class: str) -> str:
    """Where an action's energy came from, for the check's output."""
    if cost.model is None:
        return f"hwcomponents Dummy for component class {component_class} (energy 0)"
    return f"hwcomponents model {cost.model} for component class {component_class} (via accelforge)"


def apply_clock(arch: AfArch, lookup: CostLookup, where: Where) -> AfArch:
    """When the throughputs are per second, express every one per cycle of the compute: the
    clock is the compute's rate, so the compute does 1 action a cycle, and AccelForge's latency
    (then in seconds) times `clock_hz` is cycles.

    AccelForge has no unit of time. Throughputs are per second when any comes from a
    hwcomponents model, or when the compute's is PER_SECOND_COMPUTE_RATE or more (nvdla's MAC:
    `throughput: 1e9`): no compute unit does a million actions in one cycle.
    """
    compute = arch.compute
    clock = compute.throughput_computes_per_cycle
    per_second = clock >= PER_SECOND_COMPUTE_RATE and math.isfinite(clock)
    if not (lookup.used_a_model_throughput or per_second):
        return arch
    if not math.isfinite(clock) or clock <= 0:
        raise where.error(
            f"throughputs come from hwcomponents models (per second) but compute "
            f"'{compute.name}' has no finite rate to serve as the clock",
            found=clock,
            expected="a compute throughput, total_latency or component class with a latency",
        )

    def per_cycle(actions: tuple[AfAction, ...]) -> tuple[AfAction, ...]:
        return tuple(
            replace(a, throughput_actions_per_cycle=a.throughput_actions_per_cycle / clock)
            for a in actions
        )

    nodes = tuple(
        replace(node, actions=per_cycle(node.actions))
        if isinstance(node, AfMemory | AfCompute)
        else node
        for node in arch.nodes
    )
    return replace(arch, nodes=nodes, clock_hz=clock)
