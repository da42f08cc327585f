"""Evaluate an AccelForge spec's fixed mapping and print ONE JSON object on stdout.

Run with the AccelForge interpreter (Python >= 3.12), never imported by cyclesim:

    <af-python> -I -B peer_runner.py SPEC.yaml [more.yaml] [--jinja-data JSON]
        [--component-costs | --candidates [--objectives latency,energy,resource_usage]]

With --component-costs it evaluates no mapping: it prints, per arch component, the per-action
energy and throughput (and leak power, area) that AccelForge's `Spec.calculate_component_costs`
gets from the spec or, where the spec leaves them out, from hwcomponents' component models.
With --candidates it ignores the spec's mapping and runs AccelForge's mapper (FFM) on the spec
with the --objectives (its `Metrics`; default latency, energy and resource usage) and prints
every mapping of the Pareto
set it returns: AccelForge's latency and energy of each (per Einsum and in total) and the
mapping itself as LoopTree YAML, which cyclesim reads as it reads a spec's own mapping.

Standard library + accelforge + yaml only. It changes into a fresh temporary directory before
importing accelforge, so nothing is written next to the spec files or into the repository.
Counts are AccelForge's actions; `bits` multiplies them by the action's bits_per_action when
that is a plain number. Copy Einsums are reported as AccelForge reports them (under the copy's
source tensor); the raw column name is kept on every row. Exit 0 on success, 3 if AccelForge
rejects the spec (the JSON then holds `error`), 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import shutil
import sys
import tempfile
import time
import traceback

SEPARATOR = "<SEP>"


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, evaluate, print the JSON object; return the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("specs", nargs="+", help="AccelForge spec YAML files, merged in order")
    parser.add_argument("--jinja-data", default="{}", help="JSON object of Jinja variables")
    parser.add_argument(
        "--component-costs",
        action="store_true",
        help="print each component's per-action energy and throughput instead of a mapping's",
    )
    parser.add_argument(
        "--candidates",
        action="store_true",
        help="run the mapper and print its Pareto set of mappings instead of the spec's mapping",
    )
    parser.add_argument(
        "--objectives",
        default="latency,energy,resource_usage",
        help="the mapper's objectives, comma-separated names of accelforge's Metrics",
    )
    args = parser.parse_args(argv)
    try:
        jinja_data = json.loads(args.jinja_data)
    except json.JSONDecodeError as error:
        print(json.dumps({"error": {"type": "BadArguments", "message": f"--jinja-data: {error}"}}))
        return 2
    specs = [os.path.abspath(path) for path in args.specs]
    workdir = tempfile.mkdtemp(prefix="cyclesim-accelforge-")
    os.chdir(workdir)
    captured = io.StringIO()
    started = time.perf_counter()
    try:
        with contextlib.redirect_stdout(captured):
            if args.candidates:
                payload = mapper_candidates(specs, jinja_data, args.objectives.split(","))
            elif args.component_costs:
                payload = component_costs(specs, jinja_data)
            else:
                payload = evaluate(specs, jinja_data)
    except Exception as error:  # noqa: BLE001 - every AccelForge failure is reported as JSON
        payload = {
            "error": {
                "type": type(error).__name__,
                "message": str(error),
                "traceback": traceback.format_exc(limit=8),
            }
        }
        status = 3
    else:
        status = 0
    payload["seconds"] = round(time.perf_counter() - started, 3)
    payload["captured_stdout"] = captured.getvalue()[-4000:]
    os.chdir(tempfile.gettempdir())
    shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(payload, default=_jsonable))
    return status


def _jsonable(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)


def _number(value):
    """A plain JSON number from an AccelForge scalar (int, float, numpy, sympy)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(number):
        return None
    return int(number) if number.is_integer() else number


def evaluate(specs: list[str], jinja_data: dict) -> dict:
    """Load the spec with accelforge, evaluate its fixed mapping, and collect every number."""
    import accelforge as af
    from accelforge._version import version

    spec = af.Spec.from_yaml(*specs, jinja_parse_data=jinja_data)
    bits_per_action = _bits_per_action(spec)
    einsums = []
    for einsum in spec.workload.einsums:
        outputs = [str(t.name) for t in einsum.tensor_accesses if t.output]
        inputs = [str(t.name) for t in einsum.tensor_accesses if not t.output]
        einsums.append(
            {
                "name": str(einsum.name),
                "is_copy_operation": bool(einsum.is_copy_operation),
                "inputs": inputs,
                "outputs": outputs,
                "booked_under": inputs[0] if einsum.is_copy_operation and inputs else None,
            }
        )
    result = spec.evaluate_mapping()
    row = result.data.iloc[0]
    accesses, latency, energy = [], [], []
    for column in result.data.columns:
        parts = str(column).split(SEPARATOR)
        value = row[column]
        if len(parts) == 5 and parts[1] == "action":
            einsum, _, component, tensor, action = parts
            actions = _number(value)
            bpa = bits_per_action.get((component, action))
            accesses.append(
                {
                    "einsum": einsum,
                    "component": component,
                    "tensor": "" if tensor == "None" else tensor,
                    "action": action,
                    "actions": actions,
                    "bits_per_action": bpa,
                    "bits": actions * bpa if actions is not None and bpa is not None else None,
                    "column": str(column),
                }
            )
        elif len(parts) == 3 and parts[1] == "latency":
            latency.append(
                {
                    "einsum": parts[0],
                    "component": parts[2],
                    "cycles": _number(value),
                    "column": str(column),
                }
            )
        elif len(parts) >= 4 and parts[1] == "energy":
            energy.append(
                {"einsum": parts[0], "key": SEPARATOR.join(parts[2:]), "energy": _number(value)}
            )
    totals = {
        name: _number(row[f"Total{SEPARATOR}{name}"])
        for name in ("latency", "energy", "dynamic_energy", "leak_energy")
        if f"Total{SEPARATOR}{name}" in result.data.columns
    }
    return {
        "accelforge_version": version,
        "python": sys.version.split()[0],
        "specs": specs,
        "jinja_data": jinja_data,
        "einsums": einsums,
        "accesses": accesses,
        "latency": latency,
        "energy": energy,
        "totals": totals,
    }


def mapper_candidates(specs: list[str], jinja_data: dict, objectives: list[str]) -> dict:
    """AccelForge's mapper on the spec: its Pareto set by the objectives (latency and energy
    alone often leave a single mapping; resource usage keeps slower ones that use less
    buffer), each mapping evaluated by AccelForge's model and written as LoopTree YAML."""
    import accelforge as af
    from accelforge._version import version
    from accelforge.frontend.mapper.metrics import Metrics
    from accelforge.mapper.FFM.main import map_workload_to_arch
    from accelforge.model.main import evaluate_mapping

    spec = af.Spec.from_yaml(*specs, jinja_parse_data=jinja_data)
    metrics = Metrics[objectives[0].strip().upper()]
    for name in objectives[1:]:
        metrics |= Metrics[name.strip().upper()]
    spec.mapper.metrics = metrics
    # eval_in_detail=False, then the same detailed evaluation as map_workload_to_arch's
    # eval_mapping, but without its `mappings[i].render()`: that renders an SVG with graphviz's
    # `dot`, which may be absent, and in joblib's worker processes, where patching
    # Mapping.render from here does not reach. The installed package is not edited.
    mappings = map_workload_to_arch(spec, print_progress=False, eval_in_detail=False)
    einsum_names = [str(e.name) for e in spec.workload.einsums]
    candidates = []
    for index in range(len(mappings.data)):
        local = spec.model_copy(deep=True) if hasattr(spec, "model_copy") else spec
        local.model.metrics = local.mapper.info_metrics
        mapping = mappings.data.iloc[index]["Total<SEP>mapping"](_for_model=True)
        local.mapping = mapping
        row = evaluate_mapping(
            local,
            flattened_arches=mappings.flattened_arches,
            evaluated_specs=mappings.evaluated_specs,
        ).data.iloc[0]
        per_einsum = {}
        for name in einsum_names:
            latency = [
                _number(row[c])
                for c in row.index
                if str(c).startswith(f"{name}{SEPARATOR}latency{SEPARATOR}")
            ]
            energy = [
                _number(row[c])
                for c in row.index
                if str(c).startswith(f"{name}{SEPARATOR}energy{SEPARATOR}")
            ]
            per_einsum[name] = {
                "latency": max((v for v in latency if v is not None), default=0),
                "energy": sum(v for v in energy if v is not None),
            }
        candidates.append(
            {
                "order": index,
                "latency": _number(row[f"Total{SEPARATOR}latency"]),
                "energy": _number(row[f"Total{SEPARATOR}energy"]),
                "einsums": per_einsum,
                "mapping": looptree_yaml(mapping),
            }
        )
    return {
        "accelforge_version": version,
        "python": sys.version.split()[0],
        "specs": specs,
        "jinja_data": jinja_data,
        "einsums": einsum_names,
        "candidates": candidates,
    }


def looptree_yaml(mapping) -> str:
    """An AccelForge Mapping as `mapping: nodes: [...]` YAML; Reservation nodes (the mapper's
    bookkeeping of buffer space, not part of a LoopTree a user writes) are left out."""
    lines = ["mapping:", "  nodes:"]
    _emit_nodes(mapping.nodes, 2, lines)
    return "\n".join(lines) + "\n"


def _emit_nodes(nodes, depth: int, lines: list[str]) -> None:
    pad = "  " * depth
    for node in nodes:
        kind = type(node).__name__
        if kind == "Storage":
            tensors = ", ".join(str(t) for t in node.tensors)
            lines.append(f"{pad}- !Storage {{tensors: [{tensors}], component: {node.component}}}")
        elif kind == "Temporal":
            lines.append(
                f"{pad}- !Temporal {{rank_variable: {node.rank_variable}, "
                f"tile_shape: {_number(node.tile_shape)}}}"
            )
        elif kind == "Spatial":
            lines.append(
                f"{pad}- !Spatial {{rank_variable: {node.rank_variable}, "
                f"tile_shape: {_number(node.tile_shape)}, name: {node.name}, "
                f"component: {node.component}}}"
            )
        elif kind == "Compute":
            lines.append(f"{pad}- !Compute {{einsum: {node.einsum}, component: {node.component}}}")
        elif kind in ("Sequential", "Pipeline"):
            lines.append(f"{pad}- !{kind}")
            lines.append(f"{pad}  nodes:")
            for branch in node.nodes:
                lines.append(f"{pad}  - !Nested")
                lines.append(f"{pad}    nodes:")
                _emit_nodes(branch.nodes, depth + 2, lines)
        elif kind == "Reservation":
            continue
        else:  # written as found; cyclesim's reader names the kind it does not support
            lines.append(f"{pad}- !{kind} {{}}")


def component_costs(specs: list[str], jinja_data: dict) -> dict:
    """Each component's actions as AccelForge costs them (spec values, else hwcomponents)."""
    import accelforge as af
    from accelforge._version import version
    from accelforge.frontend.arch import Component

    spec = af.Spec.from_yaml(*specs, jinja_parse_data=jinja_data)
    costed = spec.calculate_component_costs()
    components = []
    for node in costed.arch.get_nodes_of_type(Component):
        model = getattr(node, "component_model", None)
        components.append(
            {
                "name": str(node.name),
                "component_class": None
                if node.component_class is None
                else str(node.component_class),
                "model": None if model is None else type(model).__name__,
                "model_module": None if model is None else type(model).__module__,
                "leak_power": _number(node.leak_power),
                "area": _number(node.area),
                "actions": [
                    {
                        "name": str(action.name),
                        "energy": _number(action.energy),
                        "throughput": _number(action.throughput),
                        "bits_per_action": _number(getattr(action, "bits_per_action", None)),
                    }
                    for action in node.actions
                ],
            }
        )
    return {
        "accelforge_version": version,
        "python": sys.version.split()[0],
        "specs": specs,
        "jinja_data": jinja_data,
        "components": components,
    }


def _bits_per_action(spec) -> dict[tuple[str, str], float | None]:
    """(component, action) -> bits per action, when the spec gives a plain number (default 1)."""
    table: dict[tuple[str, str], float | None] = {}
    for node in _leaves(spec.arch):
        component_default = getattr(node, "bits_per_action", None)
        for action in getattr(node, "actions", []) or []:
            value = getattr(action, "bits_per_action", None)
            if isinstance(value, str) and "bits_per_action is None" in value:
                value = component_default if component_default is not None else 1
            if getattr(action, "values_per_action", None) or getattr(
                node, "values_per_action", None
            ):
                value = None
            table[(str(node.name), str(action.name))] = (
                _number(value) if value is not None else None
            )
    return table


def _leaves(node):
    children = getattr(node, "nodes", None)
    if children is None:
        yield node
        return
    for child in children:
        yield from _leaves(child)


if __name__ == "__main__":
    sys.dont_write_bytecode = True
    sys.exit(main())
