"""Stream's own accounting re-derived from the parts it reports: total, per group N, iteration
latency, interval and fill, per slot its binding term, per transfer and link the moved bits at full
link width, per (node, core) the tile replayed alone. Each differing row names its mechanism."""

from __future__ import annotations

from math import ceil

from cyclesim.checks.stream.pernode import NodeCheck
from cyclesim.checks.stream.rows import Row
from cyclesim.checks.stream.schedule import StreamGroup, StreamRun, StreamTransfer


def compare(run: StreamRun, nodes: tuple[NodeCheck, ...]) -> tuple[Row, ...]:
    """Every term of Stream's schedule with its re-derivation."""
    rows = [_total(run)]
    for group in run.groups:
        rows += _group_rows(group)
        rows += _slot_rows(group)
        rows += _transfer_rows(group)
        rows += _link_rows(group)
        if group.energy_pj is not None:
            rows.append(Row("energy", group.index, "energy (pJ)", group.energy_pj, None, ""))
    rows += [_node_row(n) for n in nodes]
    return tuple(rows)


def _total(run: StreamRun) -> Row:
    added = sum(g.total for g in run.groups) + run.dispatch_cycles
    return Row(
        "total",
        None,
        "cycles",
        run.total_cycles,
        added,
        "" if added == run.total_cycles else "groups do not add up to Stream's total",
    )


def _group_rows(g: StreamGroup) -> list[Row]:
    slots = sum(g.slot_latencies.values())
    recombined = g.iterations * g.per_iteration - (g.iterations - 1) * g.overlap + g.fill
    busy = _busiest(g)
    rows = [
        Row("group", g.index, "N (iterations)", g.iterations, g.iterations, ""),
        Row(
            "group",
            g.index,
            "iteration latency",
            g.per_iteration,
            slots,
            "" if round(slots) == g.per_iteration else "slot latencies are rounded per slot",
        ),
        Row(
            "group",
            g.index,
            "total = N x L - (N-1) x overlap + fill",
            g.total,
            recombined,
            "" if recombined == g.total else "Stream rounds the fill and the overlap separately",
        ),
    ]
    if busy is not None and g.iterations > 1:
        resource, cycles = busy
        mechanism = ""
        if ceil(cycles) < g.interval:
            mechanism = (
                f"the interval is longer than the busiest resource ({resource}, {cycles:,.0f} cycles "
                "per iteration): an off-chip port bound or a loop-carried recurrence sets it"
            )
        elif ceil(cycles) > g.interval:
            mechanism = (
                f"{resource} is busy {cycles:,.0f} cycles per iteration, yet Stream's interval is "
                "shorter: that resource bounds no overlap in its model (a link without timed "
                "transfers, or a port without the interval bound)"
            )
        rows.append(
            Row(
                "group",
                g.index,
                f"interval (busiest: {resource})",
                g.interval,
                ceil(cycles),
                mechanism,
            )
        )
    rows.append(Row("group", g.index, "fill", g.fill, _fill(g), _fill_mechanism(g)))
    return rows


def _busiest(g: StreamGroup) -> tuple[str, float] | None:
    """The resource busy longest per iteration, as Stream's overlap bounds count it: a core by the
    slots it is not idle in, a link by the sum of share x latency of its transfers, a memory port
    by its bits per iteration over its rate."""
    busy = {res: g.per_iteration - idle for res, idle in g.idle.items()}
    busy.update(g.link_busy_per_iteration)
    for port, (bits, rate) in g.port_bits_per_iteration.items():
        busy[f"port {port}"] = bits / rate
    if not busy:
        return None
    resource = max(busy, key=busy.get)
    return resource, busy[resource]


def _fill(g: StreamGroup) -> float:
    """Stream's fill re-added from its parts: the largest first fetch of an input it holds
    resident (at its route time), the drains along the longest chain, the warm-up."""
    resident = [
        t.route_cycles for t in g.transfers if t.reuse_factor > 1 and t.kind == "MEM_TO_COMPUTE"
    ]
    # Stream rounds the fill once, after adding its continuous warm-up (Latency.fill = round(fill))
    return round(max(resident, default=0) + g.fill_drain + g.fill_warmup)


def _fill_mechanism(g: StreamGroup) -> str:
    if _fill(g) == g.fill:
        return ""
    parts = []
    if g.fill_warmup:
        parts.append(
            f"warm-up {g.fill_warmup:,.0f}: a sliding window makes the first tiles longer, and "
            "Stream adds the extra interior-tile cost along the chain of waiting readers"
        )
    if g.fill_drain:
        parts.append(
            f"drain {g.fill_drain:,.0f}: the systolic drains along the longest chain of dependent "
            "nodes, counted once at the end"
        )
    resident = [t for t in g.transfers if t.reuse_factor > 1 and t.kind == "MEM_TO_COMPUTE"]
    if resident:
        largest = max(resident, key=lambda t: t.route_cycles)
        parts.append(
            f"resident fill {largest.route_cycles:,.0f}: the first fetch of {largest.tensor}, held "
            f"for {largest.reuse_factor:g} iterations, timed at link speed and only the largest "
            "such fetch counted"
        )
    held = max((t.route_cycles for t in resident), default=0)
    if g.fill_resident is not None and round(g.fill_resident) != held:
        parts.append(
            f"Stream's resident fill is {g.fill_resident:,.1f}, not the largest first fetch "
            f"({held:,.0f}): an input held in a single buffer (the MILP's z_single) also waits "
            "for its window, and shared-bandwidth cores sum their loads"
        )
    elif g.fill_warmup != round(g.fill_warmup):
        parts.append(
            f"rounding: Stream rounds the fill once, with its warm-up of {g.fill_warmup:,.2f} cycles in it"
        )
    return "; ".join(parts)


def _slot_terms(g: StreamGroup, slot: int) -> dict[str, float]:
    terms: dict[str, float] = {}
    for n in g.nodes:
        if n.slot == slot:
            terms[f"compute {n.name}"] = n.active_cycles
    for t in g.transfers:
        if t.slot == slot:
            terms[f"route {t.name}"] = t.charged_cycles
    for p in g.ports:
        if p.slot == slot:
            terms[f"port {p.port} ({p.bits:,.0f} b / {p.rate:g} b/cycle)"] = ceil(p.cycles)
    return terms


def _slot_rows(g: StreamGroup) -> list[Row]:
    rows = []
    for slot, latency in sorted(g.slot_latencies.items()):
        terms = _slot_terms(g, slot)
        if not terms and not latency:
            continue
        binding = max(terms, key=terms.get) if terms else "nothing"
        value = terms.get(binding, 0.0)
        mechanism = ""
        if value != latency:
            mechanism = (
                f"Stream's slot is {latency - value:+,.0f} cycles off its largest term ({binding}): "
                "its slot variable is only bounded below, and the solver left slack where the "
                "latency objective did not need it tight"
            )
        rows.append(Row("slot", g.index, f"slot {slot}: {binding}", latency, value, mechanism))
    return rows


def _transfer_rows(g: StreamGroup) -> list[Row]:
    rows = []
    for t in g.transfers:
        if not t.links:
            continue
        full = t.link_cycles() / t.reuse_factor
        rows.append(
            Row(
                "transfer",
                g.index,
                f"{t.name} (slot {t.slot})",
                t.charged_cycles,
                ceil(full),
                transfer_mechanism(t),
            )
        )
    return rows


def transfer_mechanism(t: StreamTransfer) -> str:
    link = max(t.links, key=lambda x: t.moved_bits / x.bandwidth)
    full = ceil(t.moved_bits / link.bandwidth)
    parts = []
    if link.share < 1 and t.kind == "COMPUTE_TO_COMPUTE" and t.moved_bits < t.tensor_bits:
        parts.append(
            f"a halo charged at its share of the route: Stream's moved bits ({t.moved_bits:,.0f}) are "
            f"already only the exchanged halo, yet it multiplies them by the route's share "
            f"({link.share:g}) of all delivered data, so {link.link} is charged "
            f"{t.route_cycles:,.0f} cycles where the halo needs {full:,} at {link.bandwidth:g} b/cycle"
        )
    elif link.share < 1:
        parts.append(
            f"{link.link} carries {link.share:g} of the delivered bits (multicast and reduction "
            f"on the way), so Stream charges {t.route_cycles:,.0f} cycles of its {full:,} at full width"
        )
    if t.reuse_factor > 1:
        parts.append(
            f"amortised: one firing serves {t.reuse_factor:g} iterations, so each iteration's slot is "
            f"charged 1/{t.reuse_factor:g} of the route time; the first fetch goes into the fill"
        )
    if not parts and ceil(t.charged_cycles) != ceil(full / max(t.reuse_factor, 1)):
        parts.append(
            "active fraction: the node this transfer feeds runs only every k-th step, and Stream "
            "charges every iteration that fraction of the route time"
        )
    return "; ".join(parts)


def _link_rows(g: StreamGroup) -> list[Row]:
    rows = []
    per_link: dict[str, float] = {}
    for t in g.transfers:
        for link in t.links:
            per_link[link.link] = (
                per_link.get(link.link, 0.0) + ceil(t.moved_bits / link.bandwidth) / t.reuse_factor
            )
    for link, busy in sorted(g.link_busy_per_iteration.items()):
        derived = per_link.get(link, 0.0)
        mechanism = ""
        if ceil(derived) != ceil(busy):
            halos = [
                t.name for t in g.transfers if any(x.link == link and x.share < 1 for x in t.links)
            ]
            mechanism = (
                f"busy time per iteration summed from shares: {', '.join(halos)} "
                "charged at a share below 1 of their moved bits"
                if halos
                else "Stream's link load rounds each transfer's share"
            )
        rows.append(
            Row("link", g.index, f"{link} busy per iteration", busy, ceil(derived), mechanism)
        )
    return rows


def _node_row(n: NodeCheck) -> Row:
    item = f"{n.node} on core {n.core}"
    if n.replay_cycles is None:
        return Row("node", n.group, item, n.stream_cycles, None, n.missing or "")
    mechanism = ""
    if n.zigzag_cycles is not None and n.zigzag_cycles != n.stream_cycles:
        mechanism = (
            f"zigzag-dse at Stream's mapping gives {n.zigzag_cycles:,.0f}: Stream's cost comes "
            "from its own search, not this mapping"
        )
    elif n.replay_cycles != n.stream_cycles:
        # the latency terms' sentences first; the buffer notes say how the tile was replayed
        ranked = sorted(n.explanations, key=lambda text: text.startswith(("buffers:", "drain:")))
        mechanism = "; ".join(ranked[:2])
    return Row("node", n.group, item, n.stream_cycles, n.replay_cycles, mechanism)
