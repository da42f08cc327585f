"""Workload spec: Einsums with ranks, tensors with (affine) projections and precisions."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import Field

from cyclesim.errors import SpecError
from cyclesim.spec.limits import MAX_ITERATIONS, MAX_RANK_SIZE, MAX_VALUE_BITS
from cyclesim.spec.yamlio import Lines, StrictModel, format_path, line_of, read_yaml, validate


class _TensorDecl(StrictModel):
    bits_per_value: int = Field(gt=0, le=MAX_VALUE_BITS)
    partial_sum_bits: int | None = Field(
        None, gt=0, le=MAX_VALUE_BITS, description="outputs: width while reducing"
    )


class _Access(StrictModel):
    tensor: str
    projection: list[str] = Field(description="one entry per tensor dimension: 'm' or '2*ox + fx'")


class _Einsum(StrictModel):
    name: str
    ranks: dict[str, Annotated[int, Field(le=MAX_RANK_SIZE)]] = Field(min_length=1)
    inputs: list[_Access] = Field(min_length=1)
    outputs: list[_Access] = Field(min_length=1, max_length=1)
    is_copy: bool = False
    expression: str | None = None


class _Workload(StrictModel):
    name: str | None = None
    default_bits_per_value: int | None = Field(None, gt=0, le=MAX_VALUE_BITS)
    tensors: dict[str, _TensorDecl] = {}
    einsums: list[_Einsum] = Field(min_length=1)


@dataclass(frozen=True, slots=True)
class Projection:
    """One tensor dimension as an affine sum of ranks: ((coefficient, rank), ...)."""

    terms: tuple[tuple[int, str], ...]
    # the tensor's extent along this dimension when the loops reach past it (a convolution's
    # zero border, iterations padded to whole spatial steps): indices beyond it are never
    # stored or moved, so a tile clips to it (importers set it; None: what the loops span)
    size: int | None = None

    def ranks(self) -> tuple[str, ...]:
        return tuple(r for _, r in self.terms)

    def extent(self, tile: dict[str, int]) -> int:
        """Values spanned when each rank r takes tile[r] consecutive values (default 1)."""
        return sum(c * (tile.get(r, 1) - 1) for c, r in self.terms) + 1

    def distinct(self, tile: dict[str, int]) -> int:
        """Distinct values touched when each rank r takes tile[r] consecutive values: the span,
        unless a stride larger than the window leaves indices out (ix = 2*ox + fx with fx 1
        touches every other index), as ZigZag counts a strided 1x1 convolution's input."""
        terms = sorted((c, tile.get(r, 1)) for c, r in self.terms if tile.get(r, 1) > 1)
        step = math.gcd(*(c for c, _ in terms)) if terms else 1
        reach = 0  # the scaled span covered so far, contiguous from 0
        for c, n in terms:
            if c // step > reach + 1:
                break
            reach += c // step * (n - 1)
        else:
            return reach + 1
        if math.prod(n for _, n in terms) > 1 << 20:
            return self.extent(tile)  # too many to enumerate: the span bounds them
        touched = {0}
        for c, n in terms:
            touched = {v + c * i for v in touched for i in range(n)}
        return len(touched)


@dataclass(frozen=True, slots=True)
class TensorAccess:
    tensor: str
    projection: tuple[Projection, ...]

    def ranks(self) -> frozenset[str]:
        return frozenset(r for p in self.projection for r in p.ranks())

    def footprint(self, tile: dict[str, int]) -> int:
        """Distinct values touched by a dense tile of the iteration space."""
        n = 1
        for p in self.projection:
            touched = p.distinct(tile)
            n *= touched if p.size is None else min(touched, p.size)
        return n


@dataclass(frozen=True, slots=True)
class Einsum:
    name: str
    ranks: tuple[tuple[str, int], ...]
    inputs: tuple[TensorAccess, ...]
    output: TensorAccess
    is_copy: bool = False

    @property
    def rank_sizes(self) -> dict[str, int]:
        return dict(self.ranks)

    @property
    def accesses(self) -> tuple[TensorAccess, ...]:
        return self.inputs + (self.output,)

    def access(self, tensor: str) -> TensorAccess | None:
        for a in self.accesses:
            if a.tensor == tensor:
                return a
        return None

    @property
    def macs(self) -> int:
        if self.is_copy:
            return 0
        n = 1
        for _, s in self.ranks:
            n *= s
        return n


@dataclass(frozen=True, slots=True)
class Tensor:
    name: str
    bits_per_value: int
    partial_sum_bits: int


@dataclass(frozen=True, slots=True)
class Workload:
    einsums: tuple[Einsum, ...]
    tensors: tuple[Tensor, ...]  # in order of first appearance
    name: str = "workload"
    source: str = "<workload>"
    lines: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    def tensor(self, name: str) -> Tensor:
        for t in self.tensors:
            if t.name == name:
                return t
        raise KeyError(name)

    def einsum(self, name: str) -> Einsum:
        for e in self.einsums:
            if e.name == name:
                return e
        raise KeyError(name)

    def producer(self, tensor: str) -> Einsum | None:
        for e in self.einsums:
            if e.output.tensor == tensor:
                return e
        return None


_TERM = re.compile(r"^\s*(?:(\d+)\s*\*\s*)?([A-Za-z_][A-Za-z0-9_]*)\s*$")


def parse_projection(text: str) -> Projection:
    """'2*ox + fx' -> Projection(((2,'ox'),(1,'fx'))); raise ValueError if not affine."""
    terms = []
    for part in text.split("+"):
        m = _TERM.match(part)
        if not m:
            raise ValueError(part.strip() or text)
        coefficient = int(m.group(1) or 1)
        if not 1 <= coefficient <= 1 << 32:  # 0*k: the rank would not move the index at all
            raise ValueError(f"{part.strip()[:40]} (a coefficient must be from 1 to 2**32)")
        terms.append((coefficient, m.group(2)))
    return Projection(tuple(terms))


def load_workload(path: str) -> Workload:
    """Read and validate a workload YAML file; raise SpecError naming file and field."""
    data, lines, name = read_yaml(path)
    return workload_from_dict(data, name, lines)


def workload_from_dict(data: Any, name: str = "<workload>", lines: Lines | None = None) -> Workload:
    """Validate a parsed workload; every fault is one SpecError.

    Over 80 lines: the checks in the order of the file's fields, each refusing with the file,
    field and line; they share err and the Einsums read so far.
    """
    lines = lines or {}
    raw: _Workload = validate(_Workload, data, lines, name, "workload")  # type: ignore[assignment]

    def err(msg: str, loc: tuple, **kw: Any) -> SpecError:
        return SpecError(msg, file=name, field=format_path(loc), line=line_of(lines, loc), **kw)

    einsums, order = [], []
    seen_names = set()
    for ei, e in enumerate(raw.einsums):
        loc = ("einsums", ei)
        if e.name in seen_names:
            raise err("duplicate Einsum name", loc + ("name",), found=e.name)
        seen_names.add(e.name)
        for r, s in e.ranks.items():
            if s <= 0:
                raise err("rank sizes must be positive", loc + ("ranks", r), found=s)
        iterations = math.prod(e.ranks.values())
        if iterations > MAX_ITERATIONS:
            raise err(
                f"Einsum '{e.name}' has {iterations:,} iterations (the product of its rank sizes)",
                loc + ("ranks",),
                expected=f"at most {MAX_ITERATIONS:,} (2**44), a replay that ends",
            )
        accesses = []
        for kind, items in (("inputs", e.inputs), ("outputs", e.outputs)):
            for ai, acc in enumerate(items):
                projs = []
                for pi, text in enumerate(acc.projection):
                    ploc = loc + (kind, ai, "projection", pi)
                    try:
                        proj = parse_projection(text)
                    except ValueError as bad:
                        raise err(
                            "projection is not an affine sum of ranks",
                            ploc,
                            found=str(bad),
                            expected="e.g. 'm' or '2*ox + fx'",
                        ) from None
                    for r in proj.ranks():
                        if r not in e.ranks:
                            raise err(
                                f"projection of tensor {acc.tensor} uses a rank Einsum '{e.name}' does not have",
                                ploc,
                                found=r,
                                expected=f"one of {sorted(e.ranks)}",
                            )
                    projs.append(proj)
                accesses.append(TensorAccess(acc.tensor, tuple(projs)))
                if acc.tensor not in order:
                    order.append(acc.tensor)
        names = [a.tensor for a in accesses]
        if len(set(names)) != len(names):
            raise err("a tensor appears twice in one Einsum", loc, found=names)
        out = accesses[-1]
        if e.is_copy and (len(accesses) != 2):
            raise err("a copy Einsum has exactly one input and one output", loc + ("inputs",))
        einsums.append(Einsum(e.name, tuple(e.ranks.items()), tuple(accesses[:-1]), out, e.is_copy))
    producers: dict[str, str] = {}
    for ei, e in enumerate(einsums):
        if e.output.tensor in producers:
            raise err(
                f"tensor {e.output.tensor} is the output of two Einsums ({producers[e.output.tensor]}, {e.name})",
                ("einsums", ei, "outputs", 0, "tensor"),
            )
        producers[e.output.tensor] = e.name
    _check_acyclic(einsums, producers, err)
    for t in raw.tensors:
        if t not in order:
            raise err("tensor declared but used by no Einsum", ("tensors", t), found=t)
    tensors = []
    for t in order:
        decl = raw.tensors.get(t)
        if decl is None and raw.default_bits_per_value is None:
            raise err(
                f"tensor {t} has no bits_per_value",
                ("tensors",),
                expected=f"tensors.{t}.bits_per_value or default_bits_per_value",
            )
        bits = decl.bits_per_value if decl else raw.default_bits_per_value
        psum = (decl.partial_sum_bits if decl else None) or bits
        tensors.append(Tensor(t, bits, psum))
    return Workload(tuple(einsums), tuple(tensors), raw.name or "workload", name, lines)


def _check_acyclic(einsums: list[Einsum], producers: dict[str, str], err: Any) -> None:
    """Refuse Einsums that depend on each other in a cycle (each needs the other's output)."""
    index = {e.name: i for i, e in enumerate(einsums)}
    needs = {
        e.name: [producers[a.tensor] for a in e.inputs if a.tensor in producers] for e in einsums
    }
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in needs:
        if start in state:
            continue
        stack: list[tuple[str, int]] = [(start, 0)]
        path: list[str] = []
        while stack:
            name, next_child = stack.pop()
            if next_child == 0:
                state[name] = 1
                path.append(name)
            children = needs[name]
            if next_child < len(children):
                stack.append((name, next_child + 1))
                child = children[next_child]
                if state.get(child) == 1:
                    cycle = path[path.index(child) :] + [child]
                    raise err(
                        "Einsums depend on each other in a cycle: "
                        + " <- ".join(f"'{n}'" for n in cycle),
                        ("einsums", index[child], "inputs"),
                        expected="each tensor produced before it is read (no cycle)",
                    )
                if child not in state:
                    stack.append((child, 0))
            else:
                state[name] = 2
                path.pop()
