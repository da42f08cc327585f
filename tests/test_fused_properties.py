"""Invariants of fused two-Einsum chains on random mappings (hypothesis).

producer: AO[m,n] = I[m,k] * W0[k,n];  consumer: O[m,p] = AO[m,n] * W1[n,p].
* the replay finishes (the producer's branch comes first), counts equal the closed form and
  causes add up (both asserted by the run itself), cycles >= ideal compute;
* a mapping that keeps AO in sram above the split never reads AO back from DRAM, and writes
  it there exactly once;
* with isolate_einsums the consumer reads all of AO from DRAM.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from replay_helpers import inputs_from_dicts, memory, port

from cyclesim.analysis.simulate import replay


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


@st.composite
def chains(draw, steady: tuple[int, int] | None = None):
    """A producer -> AO -> consumer chain under a shared m loop; with steady=(lo, hi) that loop
    runs lo..hi times over the same inner schedule (fast-forward's identity tests)."""
    m, n, k, p = (draw(st.integers(1, 4)) for _ in range(4))
    if steady is None:
        shared = draw(st.sampled_from(divisors(m)))  # m loop shared above the split
        inner_m = m // shared
    else:
        shared = draw(st.integers(*steady))
        inner_m = draw(st.sampled_from(divisors(m)))
        m = shared * inner_m
    widths = st.sampled_from([8, 16, 64])
    arch = {
        "name": "chain",
        "pe_array": {"dims": {"X": 1}},
        "memories": [
            memory(
                "DRAM",
                None,
                None,
                [port("rd", "read", draw(widths)), port("wr", "write", draw(widths))],
            ),
            memory(
                "sram",
                None,
                None,
                [port("rd", "read", draw(widths)), port("wr", "write", draw(widths))],
                double_buffered=draw(st.booleans()),
            ),
        ],
    }
    workload = {
        "default_bits_per_value": 8,
        "einsums": [
            {
                "name": "producer",
                "ranks": {"m": m, "n": n, "k": k},
                "inputs": [
                    {"tensor": "I", "projection": ["m", "k"]},
                    {"tensor": "W0", "projection": ["k", "n"]},
                ],
                "outputs": [{"tensor": "AO", "projection": ["m", "n"]}],
            },
            {
                "name": "consumer",
                "ranks": {"m": m, "n": n, "p": p},
                "inputs": [
                    {"tensor": "AO", "projection": ["m", "n"]},
                    {"tensor": "W1", "projection": ["n", "p"]},
                ],
                "outputs": [{"tensor": "O", "projection": ["m", "p"]}],
            },
        ],
    }
    resident = draw(st.booleans())

    def branch(einsum: str, ranks: list[str], sizes: dict) -> list:
        order = draw(st.permutations(ranks))
        nodes = [] if resident else [{"type": "storage", "memory": "sram", "tensors": ["AO"]}]
        nodes += [{"type": "temporal", "rank": r, "bound": sizes[r]} for r in order]
        return nodes + [{"type": "compute", "einsum": einsum}]

    tree = [
        {"type": "storage", "memory": "DRAM", "tensors": ["I", "W0", "W1", "AO", "O"]},
        {"type": "temporal", "rank": "m", "bound": shared},
    ]
    if resident:
        tree.append({"type": "storage", "memory": "sram", "tensors": ["AO"]})
    tree.append(
        {
            "type": "sequential",
            "branches": [
                branch("producer", ["m", "n", "k"], {"m": inner_m, "n": n, "k": k}),
                branch("consumer", ["m", "n", "p"], {"m": inner_m, "n": n, "p": p}),
            ],
        }
    )
    return arch, workload, {"loop_tree": tree}, resident, m * n


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chains(), st.sampled_from(["retain", "strict"]))
def test_resident_intermediates_never_come_back_from_dram(case, reuse):
    arch, workload, mapping, resident, ao_values = case
    res = replay(*inputs_from_dicts(arch, workload, mapping), reuse=reuse, progress=False)
    assert res.cycles >= res.ideal_compute_cycles
    acc = res.accesses
    dram_ao = acc[(acc.tensor == "AO") & (acc.memory == "DRAM")]
    reads = int(dram_ao[dram_ao.action == "read"]["values"].sum())
    writes = int(dram_ao[dram_ao.action == "write"]["values"].sum())
    if resident:
        assert reads == 0 and writes == ao_values
    isolated = replay(
        *inputs_from_dicts(arch, workload, mapping),
        reuse="strict",
        isolate_einsums=True,
        progress=False,
    )
    iso = isolated.accesses
    consumer_reads = iso[
        (iso.tensor == "AO")
        & (iso.memory == "DRAM")
        & (iso.einsum == "consumer")
        & (iso.action == "read")
    ]
    assert int(consumer_reads["values"].sum()) >= ao_values
