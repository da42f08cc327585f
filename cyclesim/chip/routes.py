"""Routes between the ends of a chip (cores and the off-chip memory): which medium joins an
ordered pair, and the tree of hops a transfer from one end to one or more ends takes."""

from __future__ import annotations

from collections import deque

from cyclesim.chip.arch import Chip, Medium, MediumKind


def medium_between(
    chip: Chip, a: str, b: str, allowed: tuple[str, ...] | None = None
) -> Medium | None:
    """The one medium a transfer a -> b uses (a link and a bus: `interconnect.prefer` decides)."""
    both = [m for m in chip.media if m.joins(a, b) and (allowed is None or m.name in allowed)]
    if len(both) > 1:
        both = [m for m in both if m.kind is (chip.prefer or MediumKind.LINK)]
    return both[0] if both else None


def route_tree(
    chip: Chip, source: str, targets: tuple[str, ...], allowed: tuple[str, ...] | None = None
) -> tuple[tuple[str, str, Medium], ...] | None:
    """Hops (from, to, medium) of the shortest routes from source to every target, as one tree
    (a multicast moves each hop once), in breadth-first order; None if a target is unreachable.

    Fewest hops first; among equal ones the ends in chip order (cores, then the off-chip
    memory). The off-chip memory ends routes but never relays them. A bus reaches all of its
    members in one hop, so one bus transfer serves every target on it.
    """
    ends = chip.core_names + (chip.offchip.name,)
    parent: dict[str, tuple[str, Medium] | None] = {source: None}
    queue = deque([source])
    while queue:
        a = queue.popleft()
        if a == chip.offchip.name and a != source:
            continue
        for b in ends:
            if b in parent:
                continue
            m = medium_between(chip, a, b, allowed)
            if m is not None:
                parent[b] = (a, m)
                queue.append(b)
    if any(t not in parent for t in targets):
        return None
    needed: dict[str, None] = {}
    for t in targets:
        x = t
        while parent[x] is not None and x not in needed:
            needed[x] = None
            x = parent[x][0]
    order = {e: i for i, e in enumerate(ends)}
    hops = [(parent[x][0], x, parent[x][1]) for x in needed]  # type: ignore[index]

    def level(x: str) -> int:
        d = 0
        while parent[x] is not None:
            x = parent[x][0]  # type: ignore[index]
            d += 1
        return d

    return tuple(sorted(hops, key=lambda h: (level(h[1]), order[h[1]])))
