"""Memory sizes that depend on the Einsum: `weight.bits_per_value if weight else 1` (nvdla).

AccelForge evaluates a memory's `size` per Einsum with the Einsum's tensor sets in scope; the
shipped arches use it for a register that holds one value of a tensor set. This reader knows
that one form, `SET.bits_per_value if SET else NUMBER`, and resolves it once the workload is
read: the bits per value of the set's tensors when the set is not empty, else NUMBER. The
replay has one size per memory, so every Einsum must give the same size.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from cyclesim.checks.accelforge.read_fields import Where
from cyclesim.checks.accelforge.read_workload import tensor_set_names
from cyclesim.checks.accelforge.read_yaml import evaluate_tensor_set
from cyclesim.checks.accelforge.spec import AfArch, AfMemory, AfWorkload

_TENSOR_BITS = re.compile(r"^\s*(\w+)\.bits_per_value\s+if\s+(\w+)\s+else\s+(.+?)\s*$")


def tensor_bits_size(size: Any) -> bool:
    """Whether a `size:` is `SET.bits_per_value if SET else NUMBER`."""
    match = _TENSOR_BITS.match(str(size)) if isinstance(size, str) else None
    return match is not None and match.group(1) == match.group(2)


def resolve_sizes(
    arch: AfArch, workload: AfWorkload, variables: dict[str, Any], arch_file: str
) -> AfArch:
    """The arch with every Einsum-dependent size evaluated. Raise SpecError if Einsums differ."""
    nodes = []
    for node in arch.nodes:
        if isinstance(node, AfMemory) and node.size_expression is not None:
            node = replace(
                node,
                size_bits=_size(node, workload, variables, arch_file),
                size_expression=None,
            )
        nodes.append(node)
    return replace(arch, nodes=tuple(nodes))


def _size(memory: AfMemory, workload: AfWorkload, variables: dict[str, Any], file: str) -> float:
    where = Where(file, f"arch.nodes({memory.name}).size", memory.line_of("size"))
    match = _TENSOR_BITS.match(str(memory.size_expression))
    assert match is not None  # tensor_bits_size admitted it
    set_name, default = match.group(1), match.group(3)
    sizes: dict[str, float] = {}
    for einsum in workload.einsums:
        names = tensor_set_names(workload, einsum)
        if set_name not in names:
            raise where.error(
                f"'{set_name}' is not a tensor set of Einsum {einsum.name}",
                found=memory.size_expression,
                expected="a tensor, a rename or a set keyword",
            )
        tensors = evaluate_tensor_set(
            set_name,
            names,
            frozenset(einsum.tensor_names),
            file=where.file,
            field=where.field,
            line=where.line,
        )
        bits = {a.bits_per_value for a in einsum.tensor_accesses if a.tensor in tensors}
        if len(bits) > 1:
            raise where.error(
                f"the tensors of '{set_name}' in Einsum {einsum.name} have different "
                "bits per value, so AccelForge's `.bits_per_value` is undefined",
                found=sorted(bits),
            )
        sizes[einsum.name] = bits.pop() if bits else where.number(default, variables)
    if len(set(sizes.values())) > 1:
        raise where.error(
            "the size differs between Einsums, and the replay has one size per memory",
            found=sizes,
        )
    size = next(iter(sizes.values()))
    if size <= 0:
        raise where.error("a memory size must be positive", found=size)
    return size
