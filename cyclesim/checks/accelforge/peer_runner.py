"""Evaluate an AccelForge spec's fixed mapping and print ONE JSON object on stdout.

Run with the AccelForge interpreter (Python >= 3.12), never imported by cyclesim:

    <af-python> -I -B peer_runner.py SPEC.yaml [more.yaml] [--jinja-data JSON] [--component-costs]

With --component-costs it evaluates no mapping: it prints, per arch component, the per-action
energy and throughput (and leak power, area) that AccelForge's `Spec.calculate_component_costs`
gets from the spec or, where the spec leaves them out, from hwcomponents' component models.

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
            payload = (component_costs if args.component_costs else evaluate)(specs, jinja_data)
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
