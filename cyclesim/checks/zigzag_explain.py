"""One sentence per differing row of a ZigZag comparison, naming the mechanism (reference/zigzag.md §3.11)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cyclesim.checks.zigzag_inputs import DataDirection

if TYPE_CHECKING:
    from cyclesim.checks.zigzag_check import AccessRow, Terms
    from cyclesim.checks.zigzag_inputs import ZigZagInputs
    from cyclesim.checks.zigzag_model import ZigZagLatency


def explain(
    inputs: ZigZagInputs,
    ours: ZigZagLatency,
    replay: Terms,
    analytical: Terms,
    zigzag: Terms | None,
    rows: list[AccessRow],
) -> list[str]:
    """Explanations for every row where the replay, the model or zigzag-dse differ."""
    out: list[str] = []
    if zigzag is not None and zigzag != analytical:
        out.append(
            "our reimplementation differs from zigzag-dse on a latency term: a bug in cyclesim's model, please report it"
        )
    worst = max(ours.port_stalls, key=lambda p: p.stall_cycles, default=None)
    if replay.stall != analytical.stall and worst is not None:
        out.append(
            f"stall: ZigZag charges only its worst port, {worst.memory}.{worst.port} ({worst.stall_cycles:g} cycles "
            f"= (real - allowed) x (N - 1) summed over its transfers), assumes every port works in parallel and "
            f"never waits on a refill chain; the replay counts every cycle the PE array waits, so waits at "
            f"different ports and levels add up ({replay.stall:g} cycles)"
        )
    if replay.onloading != analytical.onloading:
        out.append(
            f"onloading: ZigZag counts one period per link, and since 3.7 shrinks once-per-layer transfers to one "
            f"innermost tile by borrowing {ours.borrowed_cycles:g} cycles of port time during computation; the replay "
            f"fills the first tile of every level in series before the first MAC ({replay.onloading:g} cycles)"
        )
    if replay.offloading != analytical.offloading:
        out.append(
            "offloading: ZigZag adds the last period of each output link (once-per-layer write-backs shrunk by "
            "the same borrowing); the replay drains the last output tiles level by level after the last MAC"
        )
    if replay.ideal_cycles != analytical.ideal_cycles:
        out.append(
            "ideal compute: the replay's loop nest has a different number of temporal iterations than ZigZag's"
        )
    psum_down = (DataDirection.WRITTEN_FROM_ABOVE, DataDirection.READ_TO_BELOW)
    out_op = inputs.layer.output_operand
    for row in rows:
        where = f"{row.operand} at {row.memory}, {row.direction.words}"
        if row.zigzag is not None and row.zigzag != row.analytical:
            out.append(f"{where}: our model differs from zigzag-dse (a bug in cyclesim's model)")
        if row.replay is None:
            out.append(
                f"{where}: the replay's transfers are not whole ZigZag periods here (different tile "
                f"granularity), so its count cannot be put in ZigZag's per-period word convention"
            )
        elif row.replay != row.analytical:
            if row.operand == out_op and row.direction in psum_down and row.replay < row.analytical:
                out.append(
                    f"{where}: ZigZag reloads partial sums on every visit of an output tile, the first one "
                    f"included; the replay starts each output at zero and reads nothing on the first visit"
                )
            elif row.replay > row.analytical:
                out.append(
                    f"{where}: the replay moves this data more often than ZigZag's period count (a refill "
                    f"it cannot avoid with the buffering given, e.g. a single-buffered or evicted tile)"
                )
            else:
                out.append(
                    f"{where}: ZigZag counts more transfers than the replay makes (its stationarity rule "
                    f"or its per-period rounding differ from the tile changes the replay sees)"
                )
    return out
