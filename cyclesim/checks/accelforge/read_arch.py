"""Read an AccelForge `arch:` section: its !Memory, !Container and !Compute nodes, their
actions (costed from the spec, hwcomponents' Dummy, or a component class's model) and fan-outs.

Over 400 lines: the arch section's three node kinds and their actions read in one module, so
every refusal goes through the same field and line look-ups.
"""

from __future__ import annotations

import math
from typing import Any

from cyclesim.checks.accelforge.read_costs import (
    CostLookup,
    apply_clock,
    is_shared_port,
    shared_port_rate,
    source_of,
)
from cyclesim.checks.accelforge.read_enabled import is_enabled
from cyclesim.checks.accelforge.read_fields import (
    Where,
    check_fields,
    checked_entries,
    checked_mapping,
    field_number,
    refuse_unless_default,
    require_list,
    require_mapping,
)
from cyclesim.checks.accelforge.read_sizes import tensor_bits_size
from cyclesim.checks.accelforge.read_yaml import TaggedNode
from cyclesim.checks.accelforge.spec import (
    SPATIAL_OF_COMPONENT,
    AfAction,
    AfActionCost,
    AfArch,
    AfArchNode,
    AfCompute,
    AfContainer,
    AfFanoutDimension,
    AfMemory,
    AfWorkload,
)

DUMMY_COMPONENT_CLASS = "Dummy"  # hwcomponents' model with no energy, area or latency
# fields a !Memory and a !Compute node both accept (a memory adds tensors and widths)
_COMPONENT_FIELDS = (
    "actions",
    "skip_initial_output_write",
    "enabled",
    "actions_scale",
    "total_latency",
    "n_parallel_instances",
    "energy_scale",
    "spatial",
)
_COMPONENT_IGNORED = (  # area and leak power: no effect on counts, latency or dynamic energy
    "leak_power",
    "area",
    "component_class",  # used through the action costs (read_costs)
    "area_scale",
    "leak_power_scale",
    "extra_attributes_for_component_model",  # inputs of the hwcomponents model
)
_ACTION_FIELDS = ("energy", "throughput", "latency", "bits_per_action", "energy_scale")
_DEFAULT_LATENCY = ("sum(a.n_calls / a.throughput for a in actions)",)
# The one custom total_latency a memory may have: separate read and write ports (tpu_v4i, nvdla)
SEPARATE_PORTS_LATENCY = "max(a.n_calls / a.throughput for a in actions)"


def read_arch(
    section: Any,
    where: Where,
    variables: dict[str, Any],
    lookup: CostLookup,
    workload: AfWorkload,
) -> AfArch:
    """The arch's nodes, outermost first, a disabled one left out and a node's own `spatial:`
    read as a !Container above it. Raise SpecError for every fault or unsupported node kind."""
    fields = checked_mapping(
        section,
        where,
        "arch",
        required=("nodes",),
        allowed=("variables",),
        ignored=("extra_attributes_for_all_component_models",),
    )
    variables = {**variables, **dict(fields.get("variables") or {})}
    nodes: list[AfArchNode] = []
    for index, raw in enumerate(require_list(fields["nodes"], where.child("nodes"), "arch.nodes")):
        node_where = where.child("nodes").child(index, raw)
        if not isinstance(raw, TaggedNode):
            raise node_where.error(
                "an arch node needs a tag", found=raw, expected="!Memory, !Container or !Compute"
            )
        if isinstance(raw.value, dict) and "enabled" in raw.value:
            enabled_where = node_where.child("enabled")
            if not is_enabled(raw.value["enabled"], workload, enabled_where):
                continue  # AccelForge leaves a disabled component out of the arch
        if raw.tag in ("Memory", "Compute") and isinstance(raw.value, dict):
            if raw.value.get("spatial"):
                nodes.append(_spatial_of_component(raw, node_where, variables))
        if raw.tag == "Memory":
            nodes.append(_read_memory(raw, node_where, variables, lookup))
        elif raw.tag == "Container":
            nodes.append(_read_container(raw, node_where, variables))
        elif raw.tag == "Compute":
            nodes.append(_read_compute(raw, node_where, variables, lookup))
        else:
            raise node_where.error(
                f"arch node kind !{raw.tag} is not supported",
                found=f"!{raw.tag}",
                expected="!Memory, !Container or !Compute",
            )
    names = [node.name for node in nodes]
    for name in names:
        if names.count(name) > 1:
            raise where.child("nodes").error(f"two arch nodes are named '{name}'")
    computes = [node for node in nodes if isinstance(node, AfCompute)]
    if len(computes) != 1 or not isinstance(nodes[-1], AfCompute):
        raise where.child("nodes").error(
            "the arch must end with exactly one !Compute node",
            found=[f"{type(n).__name__[2:]} {n.name}" for n in nodes],
        )
    return apply_clock(AfArch(nodes=tuple(nodes)), lookup, where)


def _node_name(fields: dict[str, Any], where: Where) -> str:
    name = fields.get("name")
    if not isinstance(name, str) or not name:
        raise where.error("an arch node needs a name", found=name)
    return name


def _refuse_common(
    fields: dict[str, Any], where: Where, latencies: tuple[str, ...] = _DEFAULT_LATENCY
) -> None:
    refuse_unless_default(fields, "actions_scale", (1,), where, "actions_scale")
    if not is_shared_port(fields.get("total_latency")):
        refuse_unless_default(fields, "total_latency", latencies, where, "a custom total_latency")
    refuse_unless_default(
        fields, "n_parallel_instances", (1,), where, "n_parallel_instances other than 1"
    )


def _read_memory(
    raw: TaggedNode, where: Where, variables: dict[str, Any], lookup: CostLookup
) -> AfMemory:
    fields = require_mapping(raw, where, "!Memory")
    name = _node_name(fields, where)
    where = where.named(name)
    check_fields(
        fields,
        where,
        "!Memory",
        required=("name", "size"),
        allowed=("tensors", "bits_per_action", "bits_per_value", *_COMPONENT_FIELDS),
        ignored=_COMPONENT_IGNORED,
    )
    _refuse_common(fields, where, _DEFAULT_LATENCY + (SEPARATE_PORTS_LATENCY,))
    overrides = fields.get("bits_per_value") or {}
    overrides = require_mapping(
        overrides, where.child("bits_per_value", overrides), "bits_per_value"
    )
    size_expression = fields["size"] if tensor_bits_size(fields["size"]) else None
    size = math.nan if size_expression else field_number(fields, "size", variables, where)
    if size <= 0:
        raise where.child("size").error("a memory size must be positive", found=size)
    actions = _read_actions(
        fields.get("actions"), where, variables, ("read", "write"), fields, lookup
    )
    tensors = fields.get("tensors") or {}
    tensors_where = where.child("tensors", tensors)
    tensors = checked_mapping(
        tensors,
        tensors_where,
        "tensors",
        allowed=("keep", "may_keep", "back", "no_refetch_from_above"),
        ignored=(
            "no_resend_to_below",
            "tile_shape",
            "tensor_order_options",
            "force_memory_hierarchy_order",
        ),
    )
    return AfMemory(
        name=name,
        size_bits=size,
        keep_expression=_expression(tensors.get("keep")),
        may_keep_expression=_expression(tensors.get("may_keep")),
        back_expression=_expression(tensors.get("back")) or "Nothing",
        no_refetch_from_above_expression=_expression(tensors.get("no_refetch_from_above")),
        actions=actions,
        skip_initial_output_write=bool(fields.get("skip_initial_output_write", True)),
        line=raw.line,
        separate_ports=" ".join(str(fields.get("total_latency", "")).split())
        == SEPARATE_PORTS_LATENCY,
        size_expression=size_expression,
        bits_per_value_overrides=tuple((str(k), str(v)) for k, v in overrides.items()),
        field_lines=_field_lines(where, tensors_where),
    )


def _field_lines(*places: Where) -> tuple[tuple[str, int], ...]:
    """The line of each field of these places' mappings, by the field's path below the node
    (`size`, `tensors.keep`): for the faults found after reading (sizes, set expressions)."""
    node = places[0].field
    return tuple(
        (f"{place.field}.{key}"[len(node) + 1 :], line)
        for place in places
        for key, line in (place.key_lines or {}).items()
    )


def _expression(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, list | tuple):
        return " | ".join(str(item) for item in value) or "Nothing"
    return str(value)


def _read_actions(
    raw: Any,
    where: Where,
    variables: dict[str, Any],
    names: tuple[str, ...],
    fields_of_component: dict[str, Any],
    lookup: CostLookup,
) -> tuple[AfAction, ...]:
    """The component's actions by name, costed as AccelForge costs them: the spec's own energy
    and throughput (or latency, or a shared-port `total_latency`) first, then hwcomponents'
    `Dummy` class (energy 0, unbounded), then the component class's hwcomponents model (asked of
    the real accelforge through `lookup`).

    Over 80 lines: AccelForge's fallback order for an action's costs (the spec's own,
    hwcomponents' Dummy, then the component's model) kept in one place, so it reads in the order
    AccelForge applies it.
    """
    component = str(fields_of_component.get("name"))
    component_class = fields_of_component.get("component_class")
    dummy = component_class == DUMMY_COMPONENT_CLASS
    component_bits = fields_of_component.get("bits_per_action", 1)
    port_rate = shared_port_rate(fields_of_component.get("total_latency"), variables, where)
    listed: dict[str, tuple[dict[str, Any], Where]] = {}
    for fields, action_where in checked_entries(
        [] if raw is None else raw,
        where.child("actions"),
        "an action",
        required=("name",),
        allowed=_ACTION_FIELDS + ("throughput_scale",),
        ignored=("area", "leak_power", "extra_attributes_for_component_model"),
    ):
        refuse_unless_default(fields, "throughput_scale", (1,), action_where, "throughput_scale")
        name = str(fields["name"])
        if name not in names:
            raise action_where.error(f"unknown action '{name}'", expected=" and ".join(names))
        listed[name] = (fields, action_where)
    actions = []
    for name in names:
        fields, at = listed.get(name, ({}, where))

        def number(key: str, default: Any, fields=fields, at=at) -> float:
            value = field_number(fields, key, variables, at, default)
            if key in fields:
                _check_action_number(key, value, at)
            return value

        def cost(what: str, name=name, at=at) -> AfActionCost:
            if component_class is None:
                raise at.error(
                    f"action '{name}' has no {what} and its component no component_class",
                    expected=f"{what}: on the action, or a component_class whose model gives it",
                )
            return lookup.cost(component, name, str(component_class), at)

        if "throughput" in fields:
            throughput = number("throughput", None)
        elif "latency" in fields:
            latency = number("latency", None)
            throughput = math.inf if latency == 0 else 1 / latency
        elif port_rate is not None:
            throughput = port_rate
        elif dummy:
            throughput = math.inf
        else:
            throughput = cost("throughput").throughput
            lookup.used_a_model_throughput = True
        source = "the spec"
        if fields.get("energy") is not None:
            energy = number("energy", None)
        elif dummy:
            energy, source = 0.0, "hwcomponents Dummy (energy 0)"
        else:
            action_cost = cost("energy")
            energy, source = action_cost.energy, source_of(action_cost, str(component_class))
        energy *= number("energy_scale", 1)
        if fields_of_component.get("energy_scale") not in (None, 1):
            scale = field_number(fields_of_component, "energy_scale", variables, where)
            _check_action_number("energy_scale", scale, where)
            energy *= scale
        bits_per_action = number("bits_per_action", component_bits)
        if "bits_per_action" not in fields and "bits_per_action" in fields_of_component:
            _check_action_number("bits_per_action", bits_per_action, where)
        actions.append(
            AfAction(
                name=name,
                energy_per_action=energy,
                throughput_actions_per_cycle=throughput,
                bits_per_action=bits_per_action,
                energy_source=source,
            )
        )
    return tuple(actions)


def _check_action_number(key: str, value: float, at: Where) -> None:
    """Refuse an action's number no hardware has (a negative energy, a throughput or a
    bits_per_action of 0), at the field's own line, before it turns into a port width."""
    if key in ("throughput", "bits_per_action"):
        if not value > 0 or (key == "bits_per_action" and math.isinf(value)):
            limit = "a finite number > 0" if key == "bits_per_action" else "a number > 0 or inf"
            raise at.child(key).error(f"{key} must be {limit}", found=value)
    elif not (math.isfinite(value) and value >= 0):
        raise at.child(key).error(f"{key} must be a finite number >= 0", found=value)


def _read_container(raw: TaggedNode, where: Where, variables: dict[str, Any]) -> AfContainer:
    fields = checked_mapping(
        raw,
        where,
        "!Container",
        required=("name",),
        allowed=("spatial",),
        ignored=_COMPONENT_IGNORED,
    )
    name = _node_name(fields, where)
    dimensions = _read_dimensions(fields, where, variables)
    return AfContainer(name=name, dimensions=dimensions, line=raw.line)


def _spatial_of_component(raw: TaggedNode, where: Where, variables: dict[str, Any]) -> AfContainer:
    """`spatial:` on a !Memory or !Compute: that node (and all below) exists once per position.

    It is AccelForge's shorthand for a !Container just above the node (the shipped
    fanout_variations arches at_glb / at_glb_with_fanout_node give the same results); mapping
    !Spatial nodes name the memory or compute node as their component.
    """
    fields = require_mapping(raw, where, f"!{raw.tag}")
    name = _node_name(fields, where)
    dimensions = _read_dimensions(fields, where.named(name), variables)
    return AfContainer(
        name=name + SPATIAL_OF_COMPONENT, dimensions=dimensions, line=raw.line, for_component=name
    )


def _read_dimensions(
    fields: dict[str, Any], where: Where, variables: dict[str, Any]
) -> tuple[AfFanoutDimension, ...]:
    dimensions = []
    for dim, dim_where in checked_entries(
        fields.get("spatial") or [],
        where.child("spatial"),
        "a spatial dimension",
        required=("name", "fanout"),
        allowed=("may_reuse", "reuse"),
        # `reuse` also limits which loops the mapper may place here: a mapper constraint
        ignored=("loop_bounds", "min_usage", "usage_scale", "power_gateable"),
    ):
        fanout = field_number(dim, "fanout", variables, dim_where)
        if not isinstance(fanout, int) or fanout < 1:
            raise dim_where.child("fanout").error(
                "a fan-out must be a positive integer", found=fanout
            )
        dimensions.append(
            AfFanoutDimension(
                name=str(dim["name"]),
                fanout=fanout,
                # AccelForge: may_reuse defaults to `reuse` when that is given, else All
                may_reuse_expression=_expression(dim.get("may_reuse"))
                or _expression(dim.get("reuse"))
                or "All",
            )
        )
    return tuple(dimensions)


def _read_compute(
    raw: TaggedNode, where: Where, variables: dict[str, Any], lookup: CostLookup
) -> AfCompute:
    fields = checked_mapping(
        raw,
        where,
        "!Compute",
        required=("name",),
        allowed=_COMPONENT_FIELDS,
        ignored=_COMPONENT_IGNORED,
    )
    name = _node_name(fields, where)
    _refuse_common(fields, where)
    actions = _read_actions(
        fields.get("actions"),
        where.named(name),
        variables,
        ("compute",),
        {**fields, "bits_per_action": 1},
        lookup,
    )
    return AfCompute(
        name=name,
        actions=actions,
        skip_initial_output_write=bool(fields.get("skip_initial_output_write", True)),
        line=raw.line,
    )
