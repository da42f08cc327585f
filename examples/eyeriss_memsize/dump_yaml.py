"""Dump the memsize case, imported from ZigZag's inputs by cyclesim's converter, as cyclesim YAML.

This is how the committed example files were first produced (then commented by hand):

    python examples/eyeriss_memsize/dump_yaml.py --out /tmp/eyeriss_dump

It writes eyeriss_like_{large,small}.yaml, workload.yaml and mapping_{large,small}.yaml, without
comments. tests/examples/test_eyeriss_memsize.py checks that the committed files still load
into exactly what the converter builds.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from memsize import SETTINGS, imported_spec  # noqa: E402

from cyclesim.spec import Architecture, Spatial, Storage, Temporal, Workload  # noqa: E402


def architecture_dict(arch: Architecture) -> dict:
    """An Architecture as our YAML's dict (outermost memory first)."""
    memories = []
    for m in arch.memories:
        ports = []
        for p in m.ports:
            serves = [{"tensor": t, "direction": d.value} for t, d in p.serves or ()]
            ports.append(
                {
                    "name": p.name,
                    "kind": p.kind.value,
                    "width_bits": p.width_bits,
                    "latency_cycles": p.latency_cycles,
                    "burst_bits": p.burst_bits,
                    "serves": serves,
                }
            )
        memories.append(
            {
                "name": m.name,
                "size_bits": m.size_bits,
                "shared_across": list(m.shared_across),
                "tensors": list(m.tensors or ()),
                "double_buffered": list(m.double_buffered),
                "ports": ports,
            }
        )
    pe = {"dims": dict(arch.pe_array.dims), "macs_per_pe_per_cycle": 1, "pipeline_depth_cycles": 0}
    return {"name": arch.name, "pe_array": pe, "memories": memories}


def workload_dict(workload: Workload) -> dict:
    """A Workload as our YAML's dict."""
    tensors = {
        t.name: {"bits_per_value": t.bits_per_value, "partial_sum_bits": t.partial_sum_bits}
        for t in workload.tensors
    }

    def access(a) -> dict:
        return {"tensor": a.tensor, "projection": [p.terms[0][1] for p in a.projection]}

    einsums = [
        {
            "name": e.name,
            "ranks": dict(e.ranks),
            "inputs": [access(a) for a in e.inputs],
            "outputs": [access(e.output)],
        }
        for e in workload.einsums
    ]
    return {"name": workload.name, "tensors": tensors, "einsums": einsums}


def mapping_dict(mapping) -> dict:
    """A flat loop tree as our YAML's dict."""
    nodes = []
    for n in mapping.loop_tree:
        if isinstance(n, Storage):
            nodes.append({"type": "storage", "memory": n.memory, "tensors": list(n.tensors)})
        elif isinstance(n, Temporal):
            nodes.append({"type": "temporal", "rank": n.rank, "bound": n.bound})
        elif isinstance(n, Spatial):
            nodes.append({"type": "spatial", "rank": n.rank, "bound": n.bound, "dim": n.dim})
        else:
            nodes.append({"type": "compute", "einsum": n.einsum})
    return {"name": mapping.name, "loop_tree": nodes}


def main(argv: list[str] | None = None) -> int:
    """Write the five files into --out."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="directory to write into")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for setting in SETTINGS:
        spec = imported_spec(setting)
        files = {
            f"eyeriss_like_{setting}.yaml": architecture_dict(spec.architecture),
            f"mapping_{setting}.yaml": mapping_dict(spec.mapping),
            "workload.yaml": workload_dict(spec.workload),
        }
        for name, data in files.items():
            (out / name).write_text(yaml.safe_dump(data, sort_keys=False))
    print(f"wrote {sorted(p.name for p in out.iterdir())} to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
