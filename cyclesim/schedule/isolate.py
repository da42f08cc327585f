"""AccelForge's per-Einsum isolation as a rewrite of the loop tree."""

from __future__ import annotations

from cyclesim.spec import Compute, Mapping, Sequential, Spatial, Storage, Temporal, Workload


def isolate(mapping: Mapping, workload: Workload) -> tuple:
    """AccelForge's per-Einsum isolation: each Einsum runs its whole path alone, in order.

    Backing stores (each tensor's first storage node) stay shared at the top; every other
    storage node is copied into each Einsum's branch, so no on-chip copy survives from one
    Einsum to the next and Einsums exchange tensors only through their backing stores.
    Loops above a backing store that sits below a loop (a tensor backed on chip under fused
    loops, as in AccelForge's copy-Einsum workaround) stay shared: Einsums are isolated below
    them; a copy above such a loop stays in place when only one Einsum below uses it (it is
    that Einsum's own copy). A backing store below loops on one Einsum's path alone stays where
    it is. A backing store moved to the top that another Einsum's branch states again in the
    same memory (as AccelForge's per-Einsum mappings do for an intermediate kept in DRAM) is
    that same store, not a copy below it.

    Over 80 lines: three closures (same_store, fused_prefix, split) recurse over the loop tree
    and share the backing stores the mapping writes.
    """
    from cyclesim.spec import leaves

    # (storage node, tensor) pairs with no storage node of the tensor above them in the tree
    # as written: each is a backing store there, whichever Einsum's branch it sits in
    backing_as_written = set()
    for above, _ in leaves(mapping.loop_tree):
        seen: set[str] = set()
        for node in above:
            if isinstance(node, Storage):
                backing_as_written.update((node.path, t) for t in node.tensors if t not in seen)
                seen.update(node.tensors)

    def same_store(
        node: Storage, tensor: str, backing: dict[str, Storage], in_place: set[str]
    ) -> bool:
        """Is this node the tensor's backing store, or that store stated again in a branch
        below it? (A store left in place in another branch is not above this one: this node
        stays a backing store of its own, as written.)"""
        store = backing[tensor]
        return store.path == node.path or (
            (node.path, tensor) in backing_as_written
            and store.memory == node.memory
            and store.path not in in_place
        )

    def fused_prefix(nodes: tuple, backing: dict[str, Storage]) -> tuple[tuple, tuple] | None:
        """Split off the nodes down to the last new backing store below a loop, if any."""
        seen = dict(backing)
        loops_seen, cut = False, 0
        for i, node in enumerate(nodes):
            if isinstance(node, (Sequential, Compute)):
                break
            if isinstance(node, (Temporal, Spatial)):
                loops_seen = True
            elif new := tuple(t for t in node.tensors if t not in seen):
                seen.update(dict.fromkeys(new, node))
                cut = i + 1 if loops_seen else cut
        if cut == 0:
            return None
        kept: list = []
        carried: list = []
        for i, node in enumerate(nodes[:cut]):
            if not isinstance(node, Storage):
                kept.append(node)
                continue
            new = tuple(t for t in node.tensors if t not in backing)
            copies = tuple(t for t in node.tensors if t in backing)
            if new:
                keep = Storage(node.memory, new, node.path)
                kept.append(keep)
                backing.update(dict.fromkeys(new, keep))
            if copies:
                loop = next((n for n in nodes[i:cut] if isinstance(n, (Temporal, Spatial))), None)
                users = {
                    e
                    for e in _einsums_in(nodes[cut:])
                    if any(workload.einsum(e).access(t) is not None for t in copies)
                }
                if loop is not None and len(users) <= 1:
                    # One Einsum below uses the copy: it is that Einsum's own copy already, at
                    # the place AccelForge evaluates it (above the fused loop, filled once per
                    # iteration of the loops above it); no other Einsum can see it.
                    kept.append(Storage(node.memory, copies, node.path))
                    continue
                if loop is not None:
                    raise mapping.error(
                        f"isolate_einsums cannot give each Einsum its own copy of "
                        f"{', '.join(copies)} in '{node.memory}': it sits above the fused loop "
                        f"over '{loop.rank}' ({loop.path}) that a backing store below needs",
                        node.path,
                    )
                carried.append(Storage(node.memory, copies, node.path))
        return tuple(kept), tuple(carried) + nodes[cut:]

    def split(nodes: tuple, backing: dict[str, Storage]) -> tuple:
        fused = fused_prefix(nodes, backing)
        if fused is not None:
            return fused[0] + split(fused[1], backing)
        paths = leaves(nodes)
        top: list[Storage] = []
        in_place: set[str] = set()
        for above, _ in paths:
            loops_seen = False
            for node in above:
                if isinstance(node, (Temporal, Spatial)):
                    loops_seen = True
                elif isinstance(node, Storage):
                    new = tuple(t for t in node.tensors if t not in backing)
                    if new and loops_seen:
                        if sum(any(n is node for n in a) for a, _ in paths) > 1:
                            raise mapping.error(
                                "isolate_einsums needs every backing store shared by several "
                                "Einsums above all loops but the fused ones above it",
                                node.path,
                            )
                        in_place.add(node.path)
                        backing.update(dict.fromkeys(new, node))
                    elif new:
                        keep = Storage(node.memory, new, node.path)
                        top.append(keep)
                        backing.update(dict.fromkeys(new, keep))
        branches = []
        for above, comp in paths:
            branch: list = []
            einsum = workload.einsum(comp.einsum)
            for node in above:
                if isinstance(node, Storage) and node.path in in_place:
                    branch.append(node)
                elif isinstance(node, Storage):
                    rest = tuple(
                        t
                        for t in node.tensors
                        if not same_store(node, t, backing, in_place)
                        and einsum.access(t) is not None
                    )
                    if rest:
                        branch.append(Storage(node.memory, rest, node.path))
                elif isinstance(node, (Temporal, Spatial)):
                    branch.append(node)
            branch.append(comp)
            branches.append(tuple(branch))
        if len(branches) == 1:
            return tuple(top) + branches[0]
        return tuple(top) + (Sequential(tuple(branches), "loop_tree"),)

    return split(mapping.loop_tree, {})


def _einsums_in(nodes: tuple) -> list[str]:
    out = []
    for n in nodes:
        if isinstance(n, Compute):
            out.append(n.einsum)
        elif isinstance(n, Sequential):
            for b in n.branches:
                out.extend(_einsums_in(b))
    return out
