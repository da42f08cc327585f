"""The changes of every waveform signal merged into time order, a stretch of cycles at a time.

Shared by the VCD and FST writers: the text of at most one stretch is held in memory. It also
decides what both declare alike: an integer's size (the fewest bits its values need: libfst
stores every change at that width) and which signals are aliases of an earlier one (equal
at every cycle of the window, as a port's two ends often are: written once).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator

import numpy as np

from cyclesim.results.activity import Activity
from cyclesim.results.record_columns import numbered
from cyclesim.views.waves import Waves, X, plan_waves


def _aliases_and_sizes(w: Waves, initial: list, times: list, values: list) -> tuple[list, list]:
    """Per signal: the earlier signal whose value it has at every cycle of the window, or None
    (the two ends of a port's transfers: one variable in VCD and FST, written once), and its
    size in bits (1, or an integer's: the fewest that hold its values; 64 when one is
    negative), which the VCD header and the FST declare alike."""
    alias: list = [None] * len(w.signals)
    sizes: list = [1] * len(w.signals)
    # signals alike in all but their changes, in order: an alias is the first of them whose
    # changes are equal (compared in full only here: most signals differ in their count)
    alike: dict = {}
    for i, sig in enumerate(w.signals):
        col = values[i]
        if sig.var_type == "integer":
            known = col[col != X]
            init = initial[i]
            top = max(int(known.max()) if len(known) else 0, init if init != "x" else 0)
            negative = (len(known) and int(known.min()) < 0) or (init != "x" and init < 0)
            sizes[i] = 64 if negative else max(1, top.bit_length())
        key = (sig.var_type, sizes[i], str(initial[i]), len(col))
        earlier = alike.setdefault(key, [])
        alias[i] = next((j for j in earlier if _same_changes(times, values, i, j)), None)
        if alias[i] is None:
            earlier.append(i)
    return alias, sizes


def _same_changes(times: list, values: list, i: int, j: int) -> bool:
    """Signals i and j change at the same times to the same values (a string signal's values:
    the numbers standing for its strings, the same in every signal)."""
    return np.array_equal(times[i], times[j]) and np.array_equal(values[i], values[j])


MIN_STRETCH = 1 << 12  # cycles merged at a time, at least (a 64th of the window otherwise)


def sorted_distinct(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(values, return_inverse=True) of an int64 column, as (inverse, unique): a
    counter's increasing values as they are, others numbered by pandas' hash table and the few
    distinct ones sorted (np.unique sorted every change: 3x the CPU on a port's busy wire)."""
    if len(values) < 1024:
        uniq, at = np.unique(values, return_inverse=True)
        return at.reshape(-1), uniq
    if (values[1:] > values[:-1]).all():  # bits_total: every change a new, larger value
        return np.arange(len(values), dtype=np.int64), values
    import pandas as pd

    codes, uniq = pd.factorize(values)  # int64: no missing-value sentinel
    order = np.argsort(uniq)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return rank[codes].astype(np.int64, copy=False), uniq[order]


class ChangeStream:
    """The changes of every signal of Waves after the window's start, in time order.

    `initial` holds the values at the window's start. Each signal's changes are columns
    (numpy), a value equal to the one before dropped; `stretches` merges them a stretch of
    cycles at a time, so the text of at most one stretch is held in memory. A signal equal to
    an earlier one over the window is its alias (`alias`): its changes are the earlier one's,
    so it has none of its own here. `sizes`: each signal's size in bits.
    """

    def __init__(self, w: Waves) -> None:
        self.w = w
        self.initial = list(w.inits)
        self.times: list[np.ndarray] = []
        self.values: list[np.ndarray] = []
        # a string signal's values are numbers standing for its strings, the same in every
        # signal: compared, numbered and merged as integers, each string made once
        self.strings: list[str] = []  # the distinct strings, each once
        self._numbers: dict[str, int] = {}  # a string's position in self.strings
        self.is_string: list[bool] = []
        for i, source in enumerate(w.sources):
            col = source()
            times, values = col.times, col.values
            strings = col.names is not None or values.dtype == object
            if strings:
                values, names = (values, col.names) if col.names is not None else numbered(values)
                values = np.array([self._number(s) for s in names], np.int64)[values]
            self.is_string.append(strings)
            before = int(np.searchsorted(times, w.start, side="right"))  # the value at start
            if before:
                v = values[before - 1]
                self.initial[i] = self.strings[v] if strings else ("x" if v == X else int(v))
            inside = int(np.searchsorted(times, w.end, side="right"))
            times, values = times[before:inside], values[before:inside]
            init = self.initial[i]
            init = self._number(init) if strings else (X if init == "x" else init)
            prev = np.empty_like(values)
            if len(values):
                prev[0] = init
                prev[1:] = values[:-1]
            changed = np.asarray(values != prev, dtype=bool)
            self.times.append(times[changed])
            self.values.append(values[changed])
        self.alias, self.sizes = _aliases_and_sizes(w, self.initial, self.times, self.values)
        self._merges: dict[int, list[tuple]] = {}  # stretch -> _merge's stretches
        self._distinct: dict[int, tuple] = {}  # signal -> distinct's numbering
        empty = np.empty(0, dtype=np.int64)
        for i, j in enumerate(self.alias):
            if j is not None:  # written once, under the signal it repeats
                self.times[i], self.values[i] = empty, self.values[i][:0]

    def _number(self, text: str) -> int:
        """The number standing for a string value (its position in self.strings)."""
        k = self._numbers.get(text)
        if k is None:
            k = self._numbers[text] = len(self.strings)
            self.strings.append(text)
        return k

    def distinct(self, i: int) -> tuple[np.ndarray, np.ndarray | list]:
        """Signal i's changes as (each one's index among its distinct values, the distinct
        values: a list of strings, or numbers), sorted; made once for every writer."""
        held = self._distinct.get(i)
        if held is None:
            at, uniq = held = sorted_distinct(self.values[i])
            if self.is_string[i]:
                held = (at, [self.strings[k] for k in uniq.tolist()])
            self._distinct[i] = held
        return held

    def _texts(self, fmt: list) -> tuple[np.ndarray, list[np.ndarray]]:
        """fmt[i](value) of every distinct value of every signal in one pool, and per signal
        each change's position in it."""
        pool: list = []
        where: list[np.ndarray] = []
        for i, f in enumerate(fmt):
            at, uniq = self.distinct(i)
            if self.is_string[i]:
                distinct = [f(v) for v in uniq]
            else:
                many = getattr(f, "many", None)
                if many is not None:
                    distinct = many(uniq)
                else:
                    distinct = [f("x" if v == X else v) for v in uniq.tolist()]
            where.append(at.reshape(-1) + len(pool))
            pool += distinct
        return np.fromiter(pool, dtype=object, count=len(pool)), where

    def stretches(
        self, fmt: list, bar=None, stretch: int | None = None
    ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per stretch of cycles: (times, firsts, texts) where texts holds fmt[i](value) of each
        change in time order (signal order within a time), times[j] the distinct times and
        firsts[j] where time j's changes start in texts."""
        pool, where = self._texts(fmt)
        for times, firsts, positions in self.merged(where, bar, stretch):
            yield times, firsts, pool[positions]

    def merged(
        self, where: list[np.ndarray], bar=None, stretch: int | None = None
    ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per stretch of cycles: (times, firsts, positions): where[i][k] (a number standing for
        signal i's change k) of each change in time order (signal order within a time),
        times[j] the distinct times and firsts[j] where time j's changes start."""
        w0, w1 = self.w.start, self.w.end
        stretch = stretch or max(MIN_STRETCH, (w1 - w0) // 64)
        lo = w0
        for hi, cuts, merge in self._merge(stretch):
            if merge is not None:
                times, firsts, order = merge
                positions = [where[i][a:b] for i, (a, b) in enumerate(cuts)]
                yield times, firsts, np.concatenate(positions)[order]
            if bar is not None:
                bar.update(min(hi, w1) - lo)
            lo = hi

    def _merge(self, stretch: int) -> list[tuple]:
        """Per stretch: its end, each signal's slice of changes in it, and (distinct times,
        where each begins, the order of its changes), None without changes. Merged by numpy on
        integer keys, not per change in Python (a long run has millions of changes), and kept:
        the VCD and the FST of one run merge once."""
        held = self._merges.get(stretch)
        if held is not None:
            return held
        w0, w1 = self.w.start, self.w.end
        n = len(self.times)
        edges = np.arange(w0, w1 + 1, stretch, dtype=np.int64)[1:]
        edges = np.append(edges, w1 + 1)
        cuts = [np.concatenate(([0], np.searchsorted(t, edges))).tolist() for t in self.times]
        out = []
        for s, hi in enumerate(edges.tolist()):
            mine = [(c[s], c[s + 1]) for c in cuts]
            ordered = np.concatenate([self.times[i][a:b] * n + i for i, (a, b) in enumerate(mine)])
            merge = None
            if len(ordered):
                order = np.argsort(ordered, kind="stable")
                times = ordered[order] // n
                firsts = np.flatnonzero(np.concatenate(([True], times[1:] != times[:-1])))
                merge = (times[firsts], firsts, order)
            out.append((hi, mine, merge))
        self._merges[stretch] = out
        return out


# id(Activity) -> (a weak reference to it, its stream): dropped when the Activity is (an
# Activity compares by value, so it cannot be a weak dictionary's key)
_STREAMS: dict[int, tuple[weakref.ref, ChangeStream]] = {}


def change_stream(act: Activity) -> ChangeStream:
    """The ChangeStream of an Activity's waves, made once while the Activity lives: `--vcd` and
    `--fst` of one run (and the benchmark's writers) merge the changes once, not twice."""
    key = id(act)
    held = _STREAMS.get(key)
    if held is not None and held[0]() is act:
        return held[1]
    stream = ChangeStream(plan_waves(act))
    forget = _STREAMS.pop  # bound now: at exit the module global may be gone before the Activity
    _STREAMS[key] = (weakref.ref(act, lambda _: forget(key, None)), stream)
    return stream


def distinct_rows(stream: ChangeStream, classify, texts: list[bytes]) -> tuple:
    """Every distinct (signal, value) of the stream as a row of the columns a writer's C loop
    reads (kind, value, signal), and per signal each change's row: classify(i, uniq, texts)
    gives signal i's distinct values their kinds and values, appending to texts whatever text
    the rows point to. Shared by the VCD's and the FST's compiled loops."""
    kinds, values, signal_col, where = [], [], [], []
    rows = 0
    for i in range(len(stream.values)):
        at, uniq = stream.distinct(i)
        kind, value = classify(i, uniq, texts)
        kinds.append(kind)
        values.append(value)
        signal_col.append(np.full(len(uniq), i, dtype=np.int64))
        where.append(at.reshape(-1) + rows)
        rows += len(uniq)
    columns = (np.concatenate(c).astype(t, copy=False) if c else np.empty(0, t) for c, t in
               ((kinds, np.uint8), (values, np.uint64), (signal_col, np.int64)))  # fmt: skip
    return (*columns, where, texts)
