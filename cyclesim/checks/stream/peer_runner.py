"""Run stream-dse 2.1.1 on one (accelerator, workload, mapping) and print its solved schedule as JSON.

Executed by Stream's own interpreter (Python >= 3.12, `.venv-stream`), never imported by
cyclesim: it needs only the standard library and `stream`. It keeps every fused group's solved
model (Stream's context keeps only the last) by wrapping `AllocationModel.solve`, and prints one
JSON object on its last stdout line: {"error": {...}} when Stream fails.

Usage: python peer_runner.py ACCELERATOR WORKLOAD [--mapping MAPPING] [--make-two-conv CONFIG]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import io
import json
import logging
import math
import platform
import sys
import time
from typing import Any


def _number(value: Any) -> float | int | None:
    """A JSON-safe number: ints stay ints, NaN/inf become None."""
    if value is None:
        return None
    value = float(value)
    if not math.isfinite(value):
        return None
    return int(value) if value == int(value) else value


def _core_id(core: Any) -> int:
    return int(core.id)


def _link_name(link: Any) -> str:
    return str(link)


def _port_name(key: Any) -> str:
    """`core.memory.port`, the form Stream's `bandwidth:` keys use."""
    return f"{key.share_group}.{key.memory}.{key.port}" if hasattr(key, "memory") else str(key)


def _zigzag_case(node: Any, core: Any, entry: Any) -> dict[str, Any] | None:
    """The ZigZag inputs Stream's search settled on for `node` on `core`: layer, mapping, terms."""
    cme = getattr(entry, "cme", None)
    if cme is None:
        return None
    layer = cme.layer
    equation = str(layer.equation).replace(" ", "").replace("=", "+=", 1)
    relations = [str(r).replace(" ", "") for r in layer.dimension_relations]
    loop_dims = [str(d) for d, _ in layer.layer_dim_sizes.items()]
    loop_sizes = [int(s) for _, s in layer.layer_dim_sizes.items()]
    constant = {str(op) for op in layer.constant_operands}
    sources = {str(op): int(src) for op, src in layer.input_operand_source.items()}
    operand_source = {
        str(op): (layer.id if str(op) in constant else sources.get(str(op), layer.id + 1))
        for op in layer.input_operands
    }
    pr_sizes = dict(layer.pr_layer_dim_sizes.items()) if layer.pr_layer_dim_sizes else {}
    pr_dims = [str(d) for d in pr_sizes]
    padding = (
        {str(d): list(v) for d, v in getattr(layer.padding, "data", {}).items()}
        if layer.padding
        else {}
    )
    workload = {
        "id": int(layer.id),
        "name": str(layer.name),
        "operator_type": str(layer.type),
        "equation": equation,
        "dimension_relations": relations,
        "loop_dims": loop_dims,
        "loop_sizes": loop_sizes,
        "operand_precision": {str(k): int(v) for k, v in layer.operand_precision.data.items()}
        if hasattr(layer.operand_precision, "data")
        else {str(k): int(v) for k, v in layer.operand_precision.items()},
        "operand_source": operand_source,
    }
    if pr_dims:
        workload["pr_loop_dims"] = pr_dims
        workload["pr_loop_sizes"] = [int(s) for s in pr_sizes.values()]
        workload["padding"] = [padding.get(d, [0, 0]) for d in pr_dims]
    spatial = {
        str(oa_dim): [f"{layer_dim}, {int(size)}" for layer_dim, size in unrolling.items()]
        for oa_dim, unrolling in layer.spatial_mapping.items()
    }
    links = {str(k): str(v) for k, v in layer.memory_operand_links.data.items()}
    temporal = {
        str(op): [[[str(d), int(s)] for d, s in level] for level in levels]
        for op, levels in cme.temporal_mapping.mapping_dic_stationary.items()
    }
    return {
        "workload": workload,
        "mapping": {
            "name": str(layer.name),
            "spatial_mapping": spatial,
            "memory_operand_links": links,
        },
        "temporal_mapping": temporal,
        "latency_total0": _number(cme.latency_total0),
        "latency_total1": _number(cme.latency_total1),
        "latency_total2": _number(cme.latency_total2),
        "systolic_drain_cycle": _number(getattr(cme, "systolic_drain_cycle", 0) or 0),
        "ideal_cycle": _number(cme.ideal_cycle),
        "ideal_temporal_cycle": _number(cme.ideal_temporal_cycle),
        "energy_total": _number(cme.energy_total),
        "mac_spatial_utilization": _number(getattr(cme, "mac_spatial_utilization", None)),
    }


_STATE: dict[str, Any] = {}


def _fill_parts(model: Any, value: Any) -> dict[str, Any]:
    """Stream's fill split as it adds it: drains along the longest chain, warm-up, resident fill."""
    drain = _STATE["drain"](model.space) if "drain" in _STATE else None
    expr = _STATE.get("warmups", {}).get(id(model.model))
    warmup = value(expr) if expr is not None else 0.0
    fill = value(model.quantities.get("fill").expr)
    resident = fill - (drain or 0) - warmup
    return {"drain": _number(drain), "warmup": _number(warmup), "resident": _number(resident)}


def _group(model: Any, solution: Any, memory_accesses: Any) -> dict[str, Any]:
    """One fused group's solved steady state as plain data.

    Over 80 lines: a fused group's attributes copied field by field from Stream's objects into
    plain data, no computation.
    """
    problem = model.space.problem if hasattr(model.space, "problem") else None
    space, q, value = model.space, model.quantities, model.model.value
    problem = problem or space.problem
    timeslots = problem.timeslots
    lut = problem.cost_lut
    nodes = []
    for node in problem.workload.get_computation_nodes():
        lut_node = next((n for n in lut.get_nodes() if n.name == node.name), None)
        cores = []
        for slot_cores in space.core_allocation(node):
            for core in slot_cores:
                entry = (
                    lut.get_cost(lut_node, core)
                    if lut_node is not None and lut.has_cost(lut_node, core)
                    else None
                )
                cores.append(
                    {
                        "core": _core_id(core),
                        "latency_cycles": _number(getattr(entry, "latency_total", None)),
                        "energy_pj": _number(getattr(entry, "energy_total", None)),
                        "metadata": {
                            str(k): v for k, v in (getattr(entry, "metadata", None) or {}).items()
                        },
                        "zigzag": _zigzag_case(node, core, entry) if entry is not None else None,
                    }
                )
        nodes.append(
            {
                "name": node.name,
                "type": str(getattr(node, "type", "")),
                "slot": int(timeslots[node]),
                "runtime_cycles": _number(space.runtime(node)),
                "active_runtime_cycles": _number(space.active_runtime(node)),
                "cores": cores,
            }
        )
    transfer_latency = q.indexed("transfer_latency") if "transfer_latency" in q else {}
    transfers, link_busy = [], {}
    for tr, route in solution.transfer_routes.items():
        latency = transfer_latency.get((tr, route))
        latency_value = value(latency.expr) if latency is not None else None
        load = space.link_load(tr, route)
        for link, share in load.items():
            if latency_value is not None:
                link_busy[_link_name(link)] = (
                    link_busy.get(_link_name(link), 0.0) + share * latency_value
                )
        transfers.append(
            {
                "name": tr.name,
                "tensor": tr.inputs[0].name,
                "tensor_bits": _number(tr.inputs[0].size_bits()),
                "type": getattr(getattr(tr, "transfer_type", None), "name", None),
                "slot": int(timeslots[tr]),
                "sources": [_core_id(c) for c in route.sources],
                "targets": [_core_id(c) for c in route.targets],
                "links": [
                    {
                        "link": _link_name(link),
                        "bandwidth": _number(link.bandwidth),
                        "share": _number(share),
                        "load": _number(load.get(link, 0.0)),
                    }
                    for link, share in (route.link_shares or [(lk, 1.0) for lk in route.links_used])
                ],
                "moved_bits": _number(space.moved_bits(tr, route)),
                "route_cycles": _number(solution.route_cycles.get(tr)),
                "reuse_factor": _number(solution.reuse_factors.get(tr)),
                "charged_cycles": _number(latency_value),
                "shares_memory": bool(space.choice_shares_memory(tr, route)),
            }
        )
    ports = []
    if "port_demand_slot" in q:
        rates = {k: v.expr for k, v in q.indexed("port_rate").items()}
        for (key, slot), demand in q.indexed("port_demand_slot").items():
            bits = value(demand.expr)
            if bits:
                ports.append(
                    {
                        "port": _port_name(key),
                        "slot": int(slot),
                        "bits": _number(bits),
                        "rate": _number(rates[key]),
                        "cycles": _number(bits / rates[key]),
                    }
                )
    per_iteration_ports = []
    if "port_demand" in q:
        rates = {k: v.expr for k, v in q.indexed("port_rate").items()}
        for key, demand in q.indexed("port_demand").items():
            bits = value(demand.expr)
            per_iteration_ports.append(
                {"port": _port_name(key), "bits": _number(bits), "rate": _number(rates[key])}
            )
    idle = {}
    if "idle_latency" in q:
        idle = {str(res): _number(value(v.expr)) for res, v in q.indexed("idle_latency").items()}
    latency = solution.latency
    breakdown = solution.slot_latency_breakdown or {}
    return {
        "iterations": int(problem.iterations),
        "fusion_splits": {str(k): int(v) for k, v in problem.fusion_splits.items()},
        "layers": [n.name for n in problem.source_workload.get_computation_nodes()],
        "latency": {
            "total": latency.total,
            "per_iteration": latency.per_iteration,
            "overlap": latency.overlap,
            "fill": latency.fill,
        },
        "fill_parts": _fill_parts(model, value),
        "slot_latencies": {str(k): _number(v) for k, v in sorted(solution.slot_latencies.items())},
        "nodes": nodes,
        "transfers": transfers,
        "port_slot_demand": ports,
        "port_iteration_demand": per_iteration_ports,
        "link_busy_per_iteration": {k: _number(v) for k, v in link_busy.items()},
        "idle_latency": idle,
        "slot_breakdown": json.loads(json.dumps(breakdown.get("slots", []), default=str)),
        "resource_slack": json.loads(json.dumps(breakdown.get("resource_slack", []), default=str)),
        "performance": json.loads(json.dumps(solution.performance or {}, default=str)),
        "solve_status": str(solution.solve_stats.status),
        "memory_accesses": json.loads(json.dumps(memory_accesses, default=str))
        if memory_accesses
        else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("accelerator")
    parser.add_argument("workload")
    parser.add_argument("--mapping")
    args = parser.parse_args()
    started = time.perf_counter()
    logging.disable(logging.CRITICAL)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            from stream.api import SolveOptions, evaluate_mapping
            from stream.opt.allocation.constraint_optimization import allocation_model

            solved: list[tuple[Any, Any]] = []
            original = allocation_model.AllocationModel.solve

            def keep(self: Any, *a: Any, **k: Any) -> Any:
                solution = original(self, *a, **k)
                solved.append((self, solution))
                return solution

            allocation_model.AllocationModel.solve = keep
            from stream.opt.allocation.constraint_optimization.families import overlap

            warmups: dict[int, Any] = {}
            original_warmup = overlap._warmup

            def keep_warmup(ctx: Any) -> Any:
                expr = original_warmup(ctx)
                warmups[id(ctx.model)] = expr
                return expr

            overlap._warmup = keep_warmup
            _STATE["warmups"] = warmups
            _STATE["drain"] = overlap._drain
            estimate = evaluate_mapping(
                args.accelerator,
                args.workload,
                "stream-out",
                mapping=args.mapping,
                options=SolveOptions(artifacts=False),
            )
            accesses = estimate.context.get("group_memory_accesses")
            groups = []
            for index, (model, solution) in enumerate(solved):
                per_group = None
                if isinstance(accesses, dict):
                    per_group = accesses.get(index, accesses.get(str(index)))
                groups.append(_group(model, solution, per_group))
    except Exception as exc:  # noqa: BLE001 -- Stream signals bad input with assert/ValueError/KeyError
        print(json.dumps({"error": {"type": type(exc).__name__, "message": str(exc)[:2000]}}))
        return 0
    print(
        json.dumps(
            {
                "stream_version": importlib.metadata.version("stream-dse"),
                "zigzag_version": importlib.metadata.version("zigzag-dse"),
                "python": platform.python_version(),
                "total_cycles": _number(estimate.cycles),
                "group_cycles": [_number(c) for c in estimate.group_cycles],
                "dispatch_cycles": _number(estimate.dispatch_cycles),
                "groups": groups,
                "seconds": time.perf_counter() - started,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
