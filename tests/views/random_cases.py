"""Random small schedules for property tests: a matvec over DRAM, weight, accumulator and
input buffers, with random port widths, bursts, latencies, slots and an optional DMA engine."""

from __future__ import annotations

from hypothesis import strategies as st

from cyclesim.spec import architecture_from_dict, mapping_from_dict, workload_from_dict


@st.composite
def schedules(draw):
    """(arch, workload, mapping) of a random small matvec."""
    m, k = draw(st.integers(1, 5)), draw(st.integers(1, 6))
    bits = draw(st.sampled_from([4, 8, 16]))

    def port(name: str, kind: str) -> dict:
        return dict(name=name, kind=kind, width_bits=draw(st.sampled_from([2, 4, 8, 16, 64])),
                    latency_cycles=draw(st.integers(0, 3)), burst_bits=draw(st.sampled_from([4, 8, 16, 32])))  # fmt: skip

    def mem(name: str, tensors: list[str]) -> dict:
        return dict(name=name, size_bits=None if name == "DRAM" else 1 << 16, shared_across=["X"], tensors=tensors,
                    double_buffered=draw(st.booleans()), ports=[port("rd", "read"), port("wr", "write")])  # fmt: skip

    arch = dict(name="random", pe_array=dict(dims=dict(X=1), pipeline_depth_cycles=draw(st.integers(0, 2))),
                memories=[mem("DRAM", ["A", "B", "Z"]), mem("wbuf", ["B"]), mem("acc", ["Z"]), mem("abuf", ["A"])])  # fmt: skip
    if draw(st.booleans()):
        arch["dma_engines"] = [dict(name="dma", links=[dict(parent="DRAM", child="abuf"), dict(parent="DRAM", child="wbuf")],
                                    channels=draw(st.integers(1, 2)), setup_cycles=draw(st.integers(0, 3)))]  # fmt: skip
    a = architecture_from_dict(arch)
    w = workload_from_dict(dict(
        tensors=dict(A=dict(bits_per_value=bits), B=dict(bits_per_value=bits), Z=dict(bits_per_value=bits, partial_sum_bits=2 * bits)),
        einsums=[dict(name="mv", expression="Z[m] += A[m,k] * B[k]", ranks=dict(m=m, k=k),
                      inputs=[dict(tensor="A", projection=["m", "k"]), dict(tensor="B", projection=["k"])],
                      outputs=[dict(tensor="Z", projection=["m"])])]))  # fmt: skip
    inner = draw(st.sampled_from(["abuf_below_m", "all_above_m"]))
    tree = [
        dict(type="storage", memory="DRAM", tensors=["A", "B", "Z"]),
        dict(type="storage", memory="wbuf", tensors=["B"]),
    ]
    if inner == "abuf_below_m":
        tree += [dict(type="storage", memory="acc", tensors=["Z"]), dict(type="temporal", rank="m", bound=m),
                 dict(type="storage", memory="abuf", tensors=["A"])]  # fmt: skip
    else:
        tree += [dict(type="temporal", rank="m", bound=m), dict(type="storage", memory="acc", tensors=["Z"]),
                 dict(type="storage", memory="abuf", tensors=["A"])]  # fmt: skip
    tree += [dict(type="temporal", rank="k", bound=k), dict(type="compute", einsum="mv")]
    return a, w, mapping_from_dict(dict(loop_tree=tree), a, w)
