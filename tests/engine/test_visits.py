"""An output's revisit tables over a jump (engine/visits.py), block by block, against the
entry-by-entry walk the fill and write-back processes would have made."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from cyclesim.engine.tiles import entry_classifier
from cyclesim.engine.visits import VisitBlocks, shift_visits
from cyclesim.vocabulary import Wait

STAGES = (Wait.PARENT, Wait.PREVIOUS_WRITE_BACK, Wait.SLOT, Wait.TRANSFER)


def _walk(node, drained: dict, last_visit: dict, w: tuple, f: tuple, taken: bool) -> None:
    """Entry by entry, as the processes go: the write-back marks each non-final entry of
    [w0, w1); the fill visits each entry of (f0, f1], records it as its key's latest visit and
    takes the mark of the previous visit (entry f1's only once taken)."""
    first_and_key, final = entry_classifier(node)
    for x in range(min(w[0], f[0] + 1), max(w[1], f[1] + 1)):
        if w[0] <= x < w[1] and not final(x):
            drained[x] = True
        if f[0] < x <= f[1]:
            first, key = first_and_key(x)
            prev = last_visit.get(key)
            last_visit[key] = x
            if not first and prev is not None and (x < f[1] or taken):
                drained.pop(prev, None)


def _state(node, w: int, f: int, stage) -> tuple[dict, dict, object]:
    """The tables after the write-back passed [0, w) and the fill entered [0, f], its state."""
    drained, last_visit = {}, {}
    taken = stage not in (Wait.PARENT, Wait.PREVIOUS_WRITE_BACK)
    _walk(node, drained, last_visit, (0, w), (-1, f), taken)
    first, key = entry_classifier(node)[0](f)
    prev = None
    if not first:  # the previous visit of entry f's values
        prev = max(x for x in range(f) if entry_classifier(node)[0](x)[1] == key)
    if stage == Wait.PREVIOUS_WRITE_BACK and (prev is None or drained.get(prev) is True):
        stage = Wait.PARENT  # it waits for a mark only when the mark is not there
    if stage == Wait.PREVIOUS_WRITE_BACK:
        drained[prev] = object()  # the event the fill waits for
    return drained, last_visit, SimpleNamespace(stage=stage, k=f, prev=prev)


def _case(rng: random.Random):
    """A random node (bounds, which loops index its tensor) and a jump of its processes."""
    depth = rng.randint(1, 4)
    counted = tuple(rng.choice((1, 2, 3, 4, 5)) for _ in range(depth))
    relevant = tuple(rng.random() < 0.5 for _ in range(depth))
    node = SimpleNamespace(counted=counted, relevant=relevant)
    entries = 1
    for b in counted:
        entries *= b
    entries *= 3  # several passes of the loops above (the digits wrap)
    f0 = rng.randrange(entries // 2)
    w0 = rng.randint(max(0, f0 - 4), f0)  # the write-back a few entries behind the fill
    shift = rng.randint(1, entries - f0 - 1) if entries - f0 > 1 else 0
    w1 = rng.randint(max(w0, w0 + shift - 2), w0 + shift)
    return node, f0, w0, shift, w1, rng.choice(STAGES), rng.choice(STAGES)


@pytest.mark.parametrize("seed", range(400))
def test_block_by_block_equals_entry_by_entry(seed):
    node, f0, w0, shift, w1, stage0, stage1 = _case(random.Random(seed))
    if not shift:
        return
    drained, last_visit, _ = _state(node, w0, f0, stage0)
    # marks never taken yet, anywhere (the tables hold only non-final entries): a visit in
    # the jump takes them as it would the write-back's
    rng, final = random.Random(-seed), entry_classifier(node)[1]
    for y in rng.sample(range(f0 + shift), min(f0 + shift, 6)):
        if not final(y):
            drained[y] = True
    # the fill at entry f0 + shift after the jump, in some stage, its prev moved with it
    _, _, fill = _state(node, w1, f0 + shift, stage1)
    tiles = SimpleNamespace(drained=dict(drained), last_visit=dict(last_visit))
    waiter = None
    if fill.stage == Wait.PREVIOUS_WRITE_BACK:  # the waiter at b: the same distance back
        waiter = object()
        drained[fill.prev - shift] = waiter
        tiles.drained[fill.prev - shift] = waiter
    want_d, want_lv = dict(drained), dict(last_visit)
    taken = fill.stage not in (Wait.PARENT, Wait.PREVIOUS_WRITE_BACK)
    held = want_d.pop(fill.prev - shift) if waiter is not None else None
    td = fill.prev - shift if not taken and fill.prev is not None else None
    if td is not None and not w0 <= td < w1:
        want_d.pop(td, None)
    _walk(node, want_d, want_lv, (w0, w1), (f0, f0 + shift), taken)
    if td is not None:
        want_d.pop(td, None)
    if held is not None:
        want_d[fill.prev] = held
    write_back = SimpleNamespace(k=w1)
    shift_visits(tiles, VisitBlocks(node), fill, f0, write_back, w0, shift)
    assert tiles.last_visit == want_lv
    assert tiles.drained == want_d
