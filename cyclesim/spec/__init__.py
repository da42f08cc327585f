"""spec: the three inputs (architecture, workload, mapping), loaded from YAML and validated."""

from cyclesim.spec.arch import architecture_from_dict, load_architecture
from cyclesim.spec.arch_types import (
    Architecture,
    Direction,
    DmaEngine,
    Memory,
    PEArray,
    Port,
    PortKind,
)
from cyclesim.spec.mapping import (
    Compute,
    Mapping,
    Sequential,
    Spatial,
    Storage,
    Temporal,
    leaves,
    load_mapping,
    mapping_from_dict,
)
from cyclesim.spec.workload import (
    Einsum,
    Projection,
    Tensor,
    TensorAccess,
    Workload,
    load_workload,
    workload_from_dict,
)

__all__ = [
    "Architecture",
    "Direction",
    "DmaEngine",
    "Memory",
    "PEArray",
    "Port",
    "PortKind",
    "architecture_from_dict",
    "load_architecture",
    "Compute",
    "Mapping",
    "Sequential",
    "Spatial",
    "Storage",
    "Temporal",
    "leaves",
    "load_mapping",
    "mapping_from_dict",
    "Einsum",
    "Projection",
    "Tensor",
    "TensorAccess",
    "Workload",
    "load_workload",
    "workload_from_dict",
]
