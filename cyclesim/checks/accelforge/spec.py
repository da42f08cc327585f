"""AccelForge's own spec concepts (arch, workload, LoopTree mapping) as frozen dataclasses.

The loaders live in `read` (arch, workload, whole spec) and `looptree`
(mapping); this module only holds the shapes, shared by the reader, the model and the import.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field


class LoopKind(enum.Enum):
    """A LoopTree loop: `!Temporal` or `!Spatial`."""

    TEMPORAL = "temporal"
    SPATIAL = "spatial"


class SplitKind(enum.Enum):
    """A LoopTree split between Einsums: `!Sequential` or `!Pipeline` (counted alike)."""

    SEQUENTIAL = "sequential"
    PIPELINE = "pipeline"


@dataclass(frozen=True, slots=True)
class AfAction:
    """One action of a component (read, write, compute) with its energy and throughput."""

    name: str
    energy_per_action: float
    throughput_actions_per_cycle: float  # math.inf when unbounded
    bits_per_action: float
    energy_source: str = "the spec"  # or the hwcomponents model AccelForge asked for it


@dataclass(frozen=True, slots=True)
class AfActionCost:
    """What AccelForge's `calculate_component_costs` gives one action: energy (J) and
    throughput (actions per second when it comes from a component model; inf when unbounded)."""

    energy: float
    throughput: float
    model: str | None  # the hwcomponents model's class name, None for hwcomponents' Dummy


@dataclass(frozen=True, slots=True)
class AfMemory:
    """An `!Memory` node: size in bits, tensor set expressions, read/write actions."""

    name: str
    size_bits: float  # math.inf when unbounded
    keep_expression: str | None
    may_keep_expression: str | None
    back_expression: str
    no_refetch_from_above_expression: str | None  # a mapper constraint; no effect on counts
    actions: tuple[AfAction, ...]
    skip_initial_output_write: bool
    line: int | None
    separate_ports: bool = False  # total_latency = max over actions (reads and writes overlap)
    size_expression: str | None = None  # a size over the Einsum's tensors, until it is resolved
    # `bits_per_value:` on the memory: (tensor set, bits expression); the replay has one width
    # per tensor, so the mapping may not store those tensors here (checked in the reader)
    bits_per_value_overrides: tuple[tuple[str, str], ...] = ()
    # (field below the node, its line): `size`, `tensors.keep`, ... for faults found later
    field_lines: tuple[tuple[str, int], ...] = field(default=(), compare=False)

    def line_of(self, field_path: str) -> int | None:
        """The line of a field of this node (`size`, `tensors.keep`), else the node's line."""
        return dict(self.field_lines).get(field_path, self.line)

    def action(self, name: str) -> AfAction:
        """Return the action called `name`. Raise KeyError if there is none."""
        for action in self.actions:
            if action.name == name:
                return action
        raise KeyError(name)


@dataclass(frozen=True, slots=True)
class AfFanoutDimension:
    """One spatial dimension of a `!Container`: its fan-out and `may_reuse` expression."""

    name: str
    fanout: int
    may_reuse_expression: str


ENERGY_UNIT = "J"  # of every AccelForge energy: its specs' and hwcomponents' models' are joules
SPATIAL_OF_COMPONENT = " (spatial)"  # suffix of the container a node's own `spatial:` declares


@dataclass(frozen=True, slots=True)
class AfContainer:
    """An `!Container` node: a spatial fan-out between two memories."""

    name: str
    dimensions: tuple[AfFanoutDimension, ...]
    line: int | None
    for_component: str | None = None  # the !Memory / !Compute whose `spatial:` declared it

    def dimension(self, name: str) -> AfFanoutDimension:
        """Return the fan-out dimension called `name`. Raise KeyError if there is none."""
        for dimension in self.dimensions:
            if dimension.name == name:
                return dimension
        raise KeyError(name)


@dataclass(frozen=True, slots=True)
class AfCompute:
    """The `!Compute` node (last in the arch)."""

    name: str
    actions: tuple[AfAction, ...]
    skip_initial_output_write: bool
    line: int | None

    @property
    def throughput_computes_per_cycle(self) -> float:
        """Throughput of the `compute` action."""
        return next(a.throughput_actions_per_cycle for a in self.actions if a.name == "compute")

    @property
    def energy_per_compute(self) -> float:
        """Energy of the `compute` action."""
        return next(a.energy_per_action for a in self.actions if a.name == "compute")


AfArchNode = AfMemory | AfContainer | AfCompute


@dataclass(frozen=True, slots=True)
class AfArch:
    """The flattened architecture, outermost node first, the compute node last."""

    nodes: tuple[AfArchNode, ...]
    clock_hz: float | None = None  # set when throughputs are per second (models, total_latency)

    def index(self, name: str) -> int:
        """Return the position of node `name`. Raise KeyError if there is none."""
        for position, node in enumerate(self.nodes):
            if node.name == name:
                return position
        raise KeyError(name)

    def node(self, name: str) -> AfArchNode:
        """Return node `name`. Raise KeyError if there is none."""
        return self.nodes[self.index(name)]

    @property
    def memories(self) -> tuple[AfMemory, ...]:
        """The memories, outermost first."""
        return tuple(node for node in self.nodes if isinstance(node, AfMemory))

    def spatial_container(self, name: str) -> AfContainer | None:
        """The container a mapping's !Spatial names: a !Container, or the fan-out of a memory
        or compute node written as `spatial:` on that node. None if there is no such fan-out."""
        for node in self.nodes:
            if isinstance(node, AfContainer) and name in (node.name, node.for_component):
                return node
        return None

    @property
    def compute(self) -> AfCompute:
        """The compute node."""
        return next(node for node in self.nodes if isinstance(node, AfCompute))


@dataclass(frozen=True, slots=True)
class AfProjectionTerm:
    """`coefficient * rank_variable`, one term of an affine tensor index."""

    rank_variable: str
    coefficient: int


@dataclass(frozen=True, slots=True)
class AfRankProjection:
    """How one rank of a tensor is indexed: an affine sum of rank variables plus a constant."""

    rank: str
    expression: str
    terms: tuple[AfProjectionTerm, ...]
    constant: int

    @property
    def is_simple(self) -> bool:
        """True for a single term such as `m` or `2*m` (AccelForge: fully relevant)."""
        return len(self.terms) == 1 and self.constant == 0

    def extent(self, rank_variable_extents: dict[str, int]) -> int:
        """Elements this index spans when each rank variable spans the given extent."""
        span = sum(t.coefficient * (rank_variable_extents[t.rank_variable] - 1) for t in self.terms)
        return span + self.constant + 1


@dataclass(frozen=True, slots=True)
class AfTensorAccess:
    """A tensor as an Einsum accesses it: its ranks' projections, direction, bits per value."""

    tensor: str
    ranks: tuple[AfRankProjection, ...]
    is_output: bool
    bits_per_value: int

    @property
    def rank_variables(self) -> frozenset[str]:
        """Every rank variable that indexes this tensor."""
        return frozenset(t.rank_variable for rank in self.ranks for t in rank.terms)

    def is_fully_relevant(self, rank_variable: str) -> bool:
        """True if `rank_variable` indexes a rank on its own (AccelForge's `Relevant`)."""
        for rank in self.ranks:
            if any(t.rank_variable == rank_variable for t in rank.terms):
                return rank.is_simple
        return False

    def tile_values(self, rank_variable_extents: dict[str, int]) -> int:
        """Values in the tile spanned by the given rank-variable extents."""
        return math.prod(rank.extent(rank_variable_extents) for rank in self.ranks)


@dataclass(frozen=True, slots=True)
class AfEinsum:
    """One Einsum: its tensor accesses, rank-variable sizes, renames, copy flag."""

    name: str
    tensor_accesses: tuple[AfTensorAccess, ...]
    rank_variable_sizes: tuple[tuple[str, int], ...]
    is_copy_operation: bool
    renames: tuple[tuple[str, str], ...]  # (name, set expression)

    @property
    def tensor_names(self) -> tuple[str, ...]:
        """Tensor names in access order."""
        return tuple(access.tensor for access in self.tensor_accesses)

    @property
    def input_tensor_names(self) -> tuple[str, ...]:
        """Tensors read by this Einsum."""
        return tuple(a.tensor for a in self.tensor_accesses if not a.is_output)

    @property
    def output_tensor_names(self) -> tuple[str, ...]:
        """Tensors written by this Einsum."""
        return tuple(a.tensor for a in self.tensor_accesses if a.is_output)

    @property
    def rank_variables(self) -> tuple[str, ...]:
        """Rank variables in first-use order."""
        return tuple(name for name, _ in self.rank_variable_sizes)

    def size(self, rank_variable: str) -> int:
        """Size of `rank_variable`. Raise KeyError if the Einsum has no such rank variable."""
        return dict(self.rank_variable_sizes)[rank_variable]

    def access(self, tensor: str) -> AfTensorAccess:
        """The access of `tensor`. Raise KeyError if the Einsum does not access it."""
        for access in self.tensor_accesses:
            if access.tensor == tensor:
                return access
        raise KeyError(tensor)

    @property
    def copy_source(self) -> str | None:
        """For a copy Einsum, its single input tensor (AccelForge books moves under it)."""
        return self.input_tensor_names[0] if self.is_copy_operation else None

    @property
    def macs(self) -> int:
        """Size of the iteration space (compute operations; a copy performs none)."""
        return 0 if self.is_copy_operation else math.prod(s for _, s in self.rank_variable_sizes)


@dataclass(frozen=True, slots=True)
class AfWorkload:
    """The cascade of Einsums."""

    einsums: tuple[AfEinsum, ...]

    def einsum(self, name: str) -> AfEinsum:
        """Return Einsum `name`. Raise KeyError if there is none."""
        for einsum in self.einsums:
            if einsum.name == name:
                return einsum
        raise KeyError(name)

    @property
    def tensor_names(self) -> tuple[str, ...]:
        """Every tensor, in first-use order."""
        return tuple(dict.fromkeys(t for e in self.einsums for t in e.tensor_names))

    @property
    def intermediates(self) -> frozenset[str]:
        """Tensors both written by some Einsum and read by some Einsum."""
        written = {t for e in self.einsums for t in e.output_tensor_names}
        return frozenset(t for e in self.einsums for t in e.input_tensor_names if t in written)

    @property
    def shared(self) -> frozenset[str]:
        """Tensors used by more than one Einsum."""
        return frozenset(
            t for t in self.tensor_names if sum(t in e.tensor_names for e in self.einsums) > 1
        )


@dataclass(frozen=True, slots=True)
class AfStorageNode:
    """`!Storage`: these tensors are kept in `component` from this point of the nest down."""

    tensors: tuple[str, ...]
    component: str
    line: int | None


@dataclass(frozen=True, slots=True)
class AfLoopNode:
    """`!Temporal` or `!Spatial`: a loop over `rank_variable` stepping by `tile_shape`."""

    kind: LoopKind
    rank_variable: str
    tile_shape: int
    component: str | None  # the Container of a spatial loop
    dimension: str | None  # the fan-out dimension (`name:`) of a spatial loop
    line: int | None


@dataclass(frozen=True, slots=True)
class AfComputeNode:
    """`!Compute`: the leaf of one Einsum."""

    einsum: str
    component: str
    line: int | None


@dataclass(frozen=True, slots=True)
class AfSplitNode:
    """`!Sequential` / `!Pipeline`: branches (each a `!Nested` list) sharing the loops above."""

    kind: SplitKind
    branches: tuple[tuple[AfMappingNode, ...], ...]
    line: int | None


AfMappingNode = AfStorageNode | AfLoopNode | AfComputeNode | AfSplitNode


@dataclass(frozen=True, slots=True)
class AfEinsumPath:
    """The nodes from the root to one Einsum's `!Compute` (AccelForge's partial mapping).

    Storage nodes keep only this Einsum's tensors; storage nodes left empty are dropped.
    `loop_iterations` holds the iteration count of each loop in `nodes`, in order.
    """

    einsum: str
    nodes: tuple[AfStorageNode | AfLoopNode | AfComputeNode, ...]
    loop_iterations: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class AfTensorPlacement:
    """The arch's keep / may_keep / back set expressions of one memory, for one Einsum."""

    einsum: str
    memory: str
    keep: frozenset[str]
    may_keep: frozenset[str]
    back: frozenset[str]


@dataclass(frozen=True, slots=True)
class AfSpec:
    """A whole AccelForge spec: arch, workload, mapping, and the per-Einsum partial mappings."""

    files: tuple[str, ...]
    arch: AfArch
    workload: AfWorkload
    mapping: tuple[AfMappingNode, ...]
    einsum_paths: tuple[AfEinsumPath, ...]
    placements: tuple[AfTensorPlacement, ...]

    def path(self, einsum: str) -> AfEinsumPath:
        """The partial mapping of `einsum`. Raise KeyError if it has none."""
        for path in self.einsum_paths:
            if path.einsum == einsum:
                return path
        raise KeyError(einsum)
