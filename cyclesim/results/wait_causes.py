"""What each wait a timeline records is charged to: a table from the wait (vocabulary.Wait) to
a small function giving the wait's spans, a root cause or a walk one link deeper.

Each function takes the Attributor walking the run, where the walk stands (a Walk), the
cycles [t, end) and the row's info, and returns an iterable of StallSpans (or of a repeat's
SpanList): a tuple of one root span, or the deeper walk's generator (one generator fewer
per row walked than yielding from it).
"""

from __future__ import annotations

from math import inf
from typing import TYPE_CHECKING

from cyclesim.engine.fabric import PE, requester, requester_of
from cyclesim.engine.run import RawRun
from cyclesim.results.stall_span import PIPELINE_DEPTH
from cyclesim.vocabulary import Cause, Direction, Wait

if TYPE_CHECKING:
    from cyclesim.results.attributor import Attributor, Walk


def _slot(at: Attributor, w: Walk, t: int, end: int, holder: int):
    if _may_drain(at.nodes, w.n, w.entry):
        at.earliest = -inf  # which tiles share an element is no shift of a period's
    if _draining(at.nodes, w.n, w.entry, holder):
        # the tile the chain waits for (a revisit) needs its previous visit's values
        # back first: that write-back is its state, not the slot (DESIGN's order)
        return at.follow(w, Direction.WRITE_BACK, w.node, t, end, "previous write-back")
    n = w.n
    return (
        at.root(
            w,
            t,
            end,
            Cause.BUFFER_FULL,
            competitor=f"an earlier tile of {n.label()}",
            why=(f"no free slot in {n.memory}: tile {holder} still holds it",),
            holder=(w.node, holder),
        ),
    )


def _parent(at: Attributor, w: Walk, t: int, end: int, parent: int):
    p = at.nodes[parent]
    entry = w.entry // w.n.ratio if w.entry is not None else None
    return at.follow(w, Direction.FILL, parent, t, end, f"parent tile at {p.memory}", entry)


def _previous_write_back(at: Attributor, w: Walk, t: int, end: int, node: int):
    return at.follow(w, Direction.WRITE_BACK, node, t, end, "previous write-back")


def _uses(at: Attributor, w: Walk, t: int, end: int, tile: int):
    at.earliest = -inf  # a tile's last finisher: rules, not copies, after fast-forward
    who = at.rec.last_finisher.get((w.node, tile))
    if who is not None and who[0] == "node":
        return at.follow(w, Direction.WRITE_BACK, who[1], t, end, "tile still in use")
    else:
        return (
            at.root(
                w,
                t,
                end,
                Cause.DEPENDENCY,
                competitor="PE array",
                why=("tile in use by the PE array",),
            ),
        )


def _space(at: Attributor, w: Walk, t: int, end: int, holder):
    """No room in the memory (engine/space.py): the tile holding it, or the running branch."""
    n = w.n
    if holder is not None:  # the tile named is not moved in fast-forward's copies
        at.earliest = -inf
    if holder is None:  # nothing held yet: the room is kept for the running branch
        who, why = "the running branch", f"room in {n.memory} kept for the running branch"
    else:
        h = at.nodes[holder[0]]
        who = f"a tile of {h.label()}"
        why = f"no room in {n.memory}: tile {holder[1]} of {h.label()} holds it"
    return (at.root(w, t, end, Cause.BUFFER_FULL, competitor=who, why=(why,), holder=holder),)


def _producer(at: Attributor, w: Walk, t: int, end: int, info):
    einsum, pkey = info
    return at.produced(w.n.parent, pkey, einsum, t, end, w.phase, w.here, w.depth + 1)


def holder_label(nodes, who: int) -> str:
    """A port grant's holder (its requester id, engine/fabric.py) in words: 'PE array',
    'fill of A@abuf' or 'write-back of Z@acc'; nodes: the plan's."""
    if who == PE:
        return "PE array"
    node, write_back = requester_of(who)
    return f"{'write-back' if write_back else 'fill'} of {nodes[node].label()}"


def _port(at: Attributor, w: Walk, t: int, end: int, keys):
    own = requester(w.node, w.kind == Direction.WRITE_BACK)  # its id in the fabric's grants
    return at.contention(t, end, w.phase, w.n, own, keys, w.here, w.what)


def _dma(at: Attributor, w: Walk, t: int, end: int, engine: str):
    return (
        at.root(
            w,
            t,
            end,
            Cause.CONTENTION,
            engine,
            f"DMA {engine} channels busy",
            (f"waiting for a channel of {engine}",),
        ),
    )


def _setup(at: Attributor, w: Walk, t: int, end: int, engine: str):
    return (at.root(w, t, end, Cause.LATENCY, engine, why=(f"DMA {engine} setup",)),)


def _burst(at: Attributor, w: Walk, t: int, end: int, key: str):
    return (at.root(w, t, end, Cause.BANDWIDTH, key, why=(f"moving bursts through {key}",)),)


def _dram(at: Attributor, w: Walk, t: int, end: int, info):
    cause, key, opener, where = info
    where = where_text(where, key.split(".", 1)[0], _dram_config(at.raw, key))
    competitor = at.label(opener) if opener is not None else None
    words = {
        Cause.ROW_MISS: f"row miss at {where}",
        Cause.BANK_CONFLICT: f"bank conflict at {where}: row opened by {competitor}",
        Cause.REFRESH: f"refresh at {where}",
        Cause.TURNAROUND: f"read/write turnaround at {where}",
        Cause.CONTENTION: f"DRAM data bus busy with {competitor} at {where}",
        Cause.DRAM_QUEUE: f"DRAM controller queue at {where}"
        + (f", behind {competitor}" if competitor is not None else ""),
    }[cause]
    return (at.root(w, t, end, cause, key, competitor, (words,)),)


def _latency(at: Attributor, w: Walk, t: int, end: int, key: str):
    return (at.root(w, t, end, Cause.LATENCY, key, why=(f"latency of {key}",)),)


def _pipeline(at: Attributor, w: Walk, t: int, end: int, _info):
    return (at.root(w, t, end, Cause.LATENCY, why=(PIPELINE_DEPTH,)),)


def _idle(at: Attributor, w: Walk, t: int, end: int, _info):
    return (at.root(w, t, end, Cause.DEPENDENCY, why=("done",)),)


def _draining(nodes, n, entry: int | None, holder: int) -> bool:
    """Whether entry (a revisit of an output tile whose parent is the backing store) still
    waits for its previous visit's write-back while the process waits for tile holder's
    slot. A tile's slot is freed when its write-back lands, and write-backs land in tile
    order: while the slot of holder <= the previous visit is held, that visit has not
    landed either."""
    if not _may_drain(nodes, n, entry):
        return False
    if entry <= holder or n.visit_flags(entry)[0]:
        return False
    key = n.element_key(entry)
    return any(n.element_key(j) == key for j in range(entry - 1, holder - 1, -1))


def _may_drain(nodes, n, entry: int | None) -> bool:
    """Whether _draining looks at the tiles' elements (entry: an output tile's revisit whose
    parent is the backing store), or answers False whatever the tiles."""
    return entry is not None and n.output_role and nodes[n.parent].is_backing


# each wait a timeline records (vocabulary.Wait), and what explains its cycles
BY_WAIT = {
    Wait.SLOT: _slot,
    Wait.SPACE: _space,
    Wait.PARENT: _parent,
    Wait.PRODUCER: _producer,
    Wait.PREVIOUS_WRITE_BACK: _previous_write_back,
    Wait.USES: _uses,
    Wait.DMA: _dma,
    Wait.SETUP: _setup,
    Wait.PORT: _port,
    Wait.BURST: _burst,
    Wait.DRAM: _dram,
    Wait.LATENCY: _latency,
    Wait.PIPELINE: _pipeline,
    Wait.IDLE: _idle,
}


def _dram_config(raw: RawRun, port_key: str):
    """The DramConfig of the DRAM-modelled memory a port key belongs to."""
    memory = port_key.split(".", 1)[0]
    return next((c for name, c, _, _ in raw.plan.dram if name == memory), None)


def bank_path(channel: int, rank: int, bank_group: int, bank: int, ranks: int) -> tuple[str, ...]:
    """('ch0', 'bg1', 'bank2') for bank 2 of bank group 1, with 'rank1' after the channel when
    the device has more than one rank: the words the traces name a bank by (its VCD scopes,
    its Perfetto track after the memory's name) and the stall chains too."""
    rank_word = (f"rank{rank}",) if ranks > 1 else ()
    return (f"ch{channel}", *rank_word, f"bg{bank_group}", f"bank{bank}")


def where_text(where: tuple[int, int, int], memory: str, config) -> str:
    """'DRAM ch0 bg1 bank1 row 17' for a DRAM delay's (channel, flat bank index, row): the
    bank as the traces name it (config: the memory's DramConfig; without it 'channel 0 bank 5
    row 17', the bank counted as the timer does)."""
    channel, bank, row = where
    if config is None:
        return f"channel {channel} bank {bank} row {row}"
    return f"{memory} {' '.join(bank_path(*config.bank_coords(bank), config.ranks))} row {row}"
