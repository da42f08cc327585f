"""Recording overhead: the same replay with the trace off, fully on, and filtered to a window.

Prints CPU time per mode (best of N, process time: other load on the machine does not count), the overhead of recording on vs off, and the records
kept. Usage: python benchmarks/bench_recording.py [--m 20000] [--k 16] [--repeat 5]
"""

from __future__ import annotations

import argparse
import time

from cyclesim.engine import TraceFilter, replay_plan
from cyclesim.schedule import ReusePolicy, build_plan
from cyclesim.spec import architecture_from_dict, mapping_from_dict, workload_from_dict


def case(m: int, k: int):
    """Worked example 03 scaled up: A streams from DRAM into a double-buffered abuf."""

    def port(name: str, kind: str, w: int) -> dict:
        return dict(name=name, kind=kind, width_bits=w, latency_cycles=1, burst_bits=32)

    def mem(name: str, size: int | None, tensors: list, db: bool, ports: list) -> dict:
        return dict(
            name=name,
            size_bits=size,
            shared_across=["X"],
            tensors=tensors,
            double_buffered=db,
            ports=ports,
        )

    arch = architecture_from_dict(dict(
        name="bench", pe_array=dict(dims=dict(X=1)),
        memories=[
            mem("DRAM", None, ["A", "B", "Z"], False, [port("rd", "read", 16), port("wr", "write", 16)]),
            mem("wbuf", 8 * k * 8, ["B"], False, [port("rd", "read", 64), port("wr", "write", 64)]),
            mem("acc", 16 * m * 2, ["Z"], False, [port("rd", "read", 64), port("wr", "write", 64)]),
            mem("abuf", 2 * 8 * k, ["A"], True, [port("rd", "read", 64), port("wr", "write", 64)]),
        ]))  # fmt: skip
    workload = workload_from_dict(dict(
        tensors=dict(A=dict(bits_per_value=8), B=dict(bits_per_value=8), Z=dict(bits_per_value=8, partial_sum_bits=16)),
        einsums=[dict(name="matvec", expression="Z[m] += A[m,k] * B[k]", ranks=dict(m=m, k=k),
                      inputs=[dict(tensor="A", projection=["m", "k"]), dict(tensor="B", projection=["k"])],
                      outputs=[dict(tensor="Z", projection=["m"])])]))  # fmt: skip
    mapping = mapping_from_dict(dict(loop_tree=[
        dict(type="storage", memory="DRAM", tensors=["A", "B", "Z"]),
        dict(type="storage", memory="wbuf", tensors=["B"]),
        dict(type="storage", memory="acc", tensors=["Z"]),
        dict(type="temporal", rank="m", bound=m),
        dict(type="storage", memory="abuf", tensors=["A"]),
        dict(type="temporal", rank="k", bound=k),
        dict(type="compute", einsum="matvec")]), arch, workload)  # fmt: skip
    return build_plan(arch, workload, mapping, ReusePolicy.RETAIN)


MODES = (
    ("trace off", {}),
    ("trace on (everything)", {"trace": True}),
    ("trace on, 1000-cycle window", "window"),
    ("trace on, PE array only", {"trace_filter": TraceFilter(resources=("PE",))}),
)


def measure(plan, repeat: int, mid: int) -> list[tuple[str, float, object]]:
    """Best CPU time (this process) per mode; the modes take turns so machine load drifts hit all alike."""
    kws = [
        (n, {"trace_filter": TraceFilter(mid, mid + 1000)} if kw == "window" else kw)
        for n, kw in MODES
    ]
    times: dict[str, list[float]] = {n: [] for n, _ in kws}
    raws: dict[str, object] = {}
    for _ in range(repeat):
        for name, kw in kws:
            t0 = time.process_time()
            raws[name] = replay_plan(plan, progress=False, **kw)
            times[name].append(time.process_time() - t0)
    return [(n, min(times[n]), raws[n]) for n, _ in kws]


def recording_cost(raw) -> float:
    """CPU seconds of the recording work alone: replay the kept records' appends and filter checks."""
    from cyclesim.engine.record import Recorder

    rec = Recorder(transfers=[], pe_segments=[], occupancy=[])
    t0 = time.process_time()
    for t in raw.rec.transfers:
        if rec.transfers is not None and rec.keep_transfer(t[2], t[0], t[1]):
            rec.transfers.append(t)
    for s in raw.rec.pe_segments:
        if rec.pe_segments is not None and rec.keep_segment(s[2], s[0], s[1]):
            rec.pe_segments.append(s)
    for o in raw.rec.occupancy:
        if rec.occupancy is not None:
            rec.occupy(*o)
    return time.process_time() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--m", type=int, default=20000)
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    plan = case(a.m, a.k)
    cycles = replay_plan(plan, progress=False).cycles
    rows = measure(plan, a.repeat, cycles // 2)
    off = rows[0][1]

    def kept(r) -> int:
        rec = r.rec
        return sum(
            len(x) for x in (rec.transfers or (), rec.pe_segments or (), rec.occupancy or ())
        )

    print(
        f"case: matvec m={a.m} k={a.k}: {cycles:,} cycles, {rows[0][2].rec.events:,} engine events, best of {a.repeat}"
    )
    print(f"{'mode':<28}{'seconds':>10}{'overhead':>10}{'trace records':>16}")
    for name, t, r in rows:
        print(f"{name:<28}{t:>10.3f}{100 * (t / off - 1):>+9.1f}%{kept(r):>16,}")
    cost = min(recording_cost(rows[1][2]) for _ in range(a.repeat))
    print(
        f"recording work alone (appends + filter checks, measured apart): {1e3 * cost:.1f} ms "
        f"= {100 * cost / off:.1f}% of the untraced run; with the trace off it is one `is None` test per record"
    )


if __name__ == "__main__":
    main()
