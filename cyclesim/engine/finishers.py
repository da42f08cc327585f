"""Who finished each tile last, with fast-forward's skipped tiles kept as rules, not entries.

A jump over K periods gives every tile finished in the period K later twins, each d tiles on
(d: the node's tiles per period), finished by the same process. `Finishers` stores that as one
rule per node and jump instead of K times as many dict entries; lookups do the arithmetic.
A rule made while an outer level's period was running is repeated with that period too (a
rule of rules), as the copies it stands for would have been.

Precedence is what a dict update would give: an entry set after a rule wins over it; a rule
overwrites, in place, the entries it covers that were set before it; a newer rule wins over
an older one.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator


class _Rule:
    """Tiles s + j*d (1 <= j <= count) of one node finished by who(s): s a base tile (its
    finisher given) or, failing that, a tile an inner rule (made during the period) covers."""

    __slots__ = ("d", "count", "by_residue", "inner", "lo", "hi")

    def __init__(self, base: dict[int, tuple], d: int, count: int, inner: list) -> None:
        self.d, self.count, self.inner = d, count, inner
        self.by_residue: dict[int, tuple[list[int], list[tuple]]] = {}
        by_residue = self.by_residue
        for s in sorted(base):
            found = by_residue.get(s % d)
            if found is None:  # (setdefault would build the pair for every tile)
                found = by_residue[s % d] = ([], [])
            found[0].append(s)
            found[1].append(base[s])
        lows = [min(base)] if base else []
        highs = [max(base)] if base else []
        lows += [r.lo for r in inner]
        highs += [r.hi for r in inner]
        self.lo = min(lows) + d
        self.hi = max(highs) + count * d

    def get(self, k: int):
        if not self.lo <= k <= self.hi:
            return None
        found = self.by_residue.get(k % self.d)
        if found is not None:
            tiles, whos = found
            i = bisect_left(tiles, k - self.count * self.d)  # the lowest base tile: latest copy
            if i < len(tiles) and tiles[i] <= k - self.d:
                return whos[i]
        d, count = self.d, self.count
        for rule in reversed(self.inner):  # newest first
            j = min(count, (k - rule.lo) // d)  # latest copy first
            last = max(1, -(-(k - rule.hi) // d))
            while j >= last:
                who = rule.get(k - j * d)
                if who is not None:
                    return who
                j -= 1
        return None

    def keys(self) -> Iterator[int]:
        for tiles, _ in self.by_residue.values():
            for s in tiles:
                yield from range(s + self.d, s + self.count * self.d + 1, self.d)
        for rule in self.inner:
            for k in rule.keys():
                yield from range(k + self.d, k + self.count * self.d + 1, self.d)


class Finishers:
    """(node, tile) -> who finished it last: a dict of entries plus fast-forward's rules."""

    __slots__ = ("entries", "rules", "made")

    def __init__(self) -> None:
        self.entries: dict[tuple, tuple] = {}  # in insertion order, as the engine set them
        self.rules: dict[int, list[_Rule]] = {}  # node -> its rules, oldest first
        self.made: list[tuple[int, _Rule]] = []  # every (node, rule), in the order made

    def __setitem__(self, key: tuple, who: tuple) -> None:
        self.entries[key] = who

    def get(self, key: tuple, default=None):
        who = self.entries.get(key)
        if who is not None:
            return who
        rules = self.rules.get(key[0])
        if rules:
            k = key[1]
            for rule in reversed(rules):
                who = rule.get(k)
                if who is not None:
                    return who
        return default

    def __getitem__(self, key: tuple) -> tuple:
        who = self.get(key)
        if who is None:
            raise KeyError(key)
        return who

    def __contains__(self, key: tuple) -> bool:
        return self.get(key) is not None

    @property
    def entry_count(self) -> int:
        """Entries set one by one (fast-forward's marks count these)."""
        return len(self.entries)

    @property
    def rule_count(self) -> int:
        """Rules made so far (fast-forward's marks count these too)."""
        return len(self.made)

    def newest(self, n: int) -> list[tuple]:
        """The keys of the last n entries set one by one."""
        out, it = [], reversed(self.entries)
        for _ in range(n):
            out.append(next(it))
        return out

    def rules_since(self, mark: int) -> dict[int, list[_Rule]]:
        """Per node, the rules made after the first `mark` ones, oldest first."""
        out: dict[int, list[_Rule]] = {}
        for node, rule in self.made[mark:]:
            out.setdefault(node, []).append(rule)
        return out

    def add_rule(
        self,
        node: int,
        base: dict[int, tuple],
        d: int,
        count: int,
        touched: Iterator[int] = (),
        inner: list | None = None,
    ) -> None:
        """Tiles k + j*d (1 <= j <= count) finished by base[k] (or as an inner rule says for
        k). touched: the node's tiles that may hold an entry the rule covers (finished in the
        period or in use); those entries take the rule's value in place, as a dict update."""
        if (not base and not inner) or d <= 0 or count < 1:
            return
        rule = _Rule(base, d, count, inner or [])
        self.rules.setdefault(node, []).append(rule)
        self.made.append((node, rule))
        entries = self.entries
        for k in touched:
            if (node, k) in entries:
                who = rule.get(k)
                if who is not None:
                    entries[(node, k)] = who

    def as_dict(self) -> dict[tuple, tuple]:
        """Every (node, tile) -> who, written out (for comparisons and tests)."""
        out: dict[tuple, tuple] = {}
        for node, rules in self.rules.items():
            for rule in rules:
                for k in rule.keys():
                    if (node, k) not in out:
                        out[(node, k)] = self.get((node, k))
        out.update(self.entries)
        return out

    def __len__(self) -> int:
        return len(self.as_dict())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Finishers):
            return self.as_dict() == other.as_dict()
        if isinstance(other, dict):
            return self.as_dict() == other
        return NotImplemented

    __hash__ = None

    def __repr__(self) -> str:
        return f"Finishers({len(self.entries)} entries, {len(self.made)} rules)"
