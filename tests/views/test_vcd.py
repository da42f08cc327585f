"""The VCD read back with an independent reader (vcdvcd) equals the results tables."""

from __future__ import annotations

import numpy as np
import pytest
import vcdvcd
from view_cases import CASES, load_case

from cyclesim.engine import TraceFilter
from cyclesim.errors import TraceError
from cyclesim.views.vcd import _VcdInteger, timescale_for, write_vcd
from cyclesim.views.waves import X, _spans


def _signal(v: vcdvcd.VCDVCD, name: str) -> list[tuple[int, str]]:
    return v[name].tv


def busy_cycles(tv: list[tuple[int, str]], end: int) -> int:
    """Cycles a 1-bit signal is 1, from its value changes, up to end."""
    total, on_since = 0, None
    for t, val in tv:
        if val == "1" and on_since is None:
            on_since = t
        elif val != "1" and on_since is not None:
            total += t - on_since
            on_since = None
    return total + (end - on_since if on_since is not None else 0)


def last_int(tv: list[tuple[int, str]]) -> int:
    return int(tv[-1][1], 2)


def expected_port_bits(res) -> dict[str, int]:
    """Bits through each port from the events table: parent side per transfer, child side scaled."""
    plan = res.raw.plan
    out: dict[str, int] = {p.key: 0 for p in plan.ports}
    by_label = {n.label(): n for n in plan.nodes}
    ev = res.events
    for r in ev[ev["kind"] != "compute"].itertuples():
        n = by_label[r.resource.rsplit(" ", 1)[0]]
        src, dst = (
            (n.fill_src, n.fill_dst) if r.kind != "write-back" else (n.drain_dst, n.drain_src)
        )
        out[src.key] += r.bits
        if dst.key != src.key:
            out[dst.key] += r.bits // n.union_values * n.tile_values
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_port_busy_cycles_and_bits_equal_the_results(case, traced, tmp_path):
    res = traced(case)
    path = tmp_path / "t.vcd"
    write_vcd(res, path)
    v = vcdvcd.VCDVCD(str(path))
    ports = res.port_table().set_index("port")
    want_bits = expected_port_bits(res)
    for key in ports.index:
        mem, port = key.split(".", 1)
        base = f"cyclesim.{mem}.{port}"
        assert (
            busy_cycles(_signal(v, f"{base}.busy"), res.cycles) == ports.loc[key, "busy_cycles"]
        ), key
        # transfers' bits from the events table, the PE array's from its segments' profiles
        assert ports.loc[key, "transfer_bits"] == want_bits[key], key
        assert last_int(_signal(v, f"{base}.bits_total")) == ports.loc[key, "bits"], key


@pytest.mark.parametrize("case", sorted(CASES))
def test_dram_port_bits_equal_the_dram_accesses(case, traced, tmp_path):
    """DRAM ports only move transfers: their bits equal the accesses table's DRAM reads and writes."""
    res = traced(case)
    path = tmp_path / "t.vcd"
    write_vcd(res, path)
    v = vcdvcd.VCDVCD(str(path))
    acc = res.accesses
    dram = acc[acc["memory"] == "DRAM"].groupby("action")["bits"].sum()
    got = {"read": 0, "write": 0}
    for p in res.raw.plan.ports:
        if p.memory == "DRAM":
            kind = "read" if "rd" in p.name else "write"
            got[kind] += last_int(_signal(v, f"cyclesim.DRAM.{p.name}.bits_total"))  # no PE use
    assert got["read"] == dram.get("read", 0)
    assert got["write"] == dram.get("write", 0)


def test_single_buffer_case_by_hand(traced, tmp_path):
    """03: four 32-bit fills of A at 4 b/cycle = 4 x 8 cycles on dram_rd; Z's 32 bits leave at 8 b/cycle.

    The PE array reads 8 bits of A per step from abuf_rd (4 steps per segment, 4 segments):
    the port is busy 16 cycles, at 8 bits per cycle, 128 bits in all, all of them the PE array's.
    """
    res = traced("03_single_buffer")
    write_vcd(res, tmp_path / "t.vcd")
    v = vcdvcd.VCDVCD(str(tmp_path / "t.vcd"))
    assert busy_cycles(_signal(v, "cyclesim.DRAM.dram_rd.busy"), 52) == 32
    assert last_int(_signal(v, "cyclesim.DRAM.dram_rd.bits_total")) == 128
    assert busy_cycles(_signal(v, "cyclesim.DRAM.dram_wr.busy"), 52) == 4
    assert busy_cycles(_signal(v, "cyclesim.pe_array.active"), 52) == res.ideal_compute_cycles
    assert [t for t, val in _signal(v, "cyclesim.abuf.A.tiles") if val == "1"] == [8, 20, 32, 44]
    assert busy_cycles(_signal(v, "cyclesim.abuf.abuf_rd.busy"), 52) == 16
    assert last_int(_signal(v, "cyclesim.abuf.abuf_rd.bits_total")) == 128
    assert {int(val, 2) for _, val in _signal(v, "cyclesim.abuf.abuf_rd.pe_share")} == {0, 8}


def test_pe_state_strings_cover_every_non_compute_cycle(traced, tmp_path):
    from vcd.reader import TokenKind, tokenize

    res = traced("03_single_buffer")
    write_vcd(res, tmp_path / "t.vcd")
    ids, changes = {}, []
    with open(tmp_path / "t.vcd", "rb") as f:
        t = 0
        for tok in tokenize(f):
            if tok.kind is TokenKind.VAR:
                ids[tok.var.id_code] = tok.var.reference
            elif tok.kind is TokenKind.CHANGE_TIME:
                t = tok.time_change
            elif (
                tok.kind is TokenKind.CHANGE_STRING
                and ids.get(tok.string_change.id_code) == "state"
            ):
                changes.append((t, tok.string_change.value))
    stalled = sum(
        b - a
        for (a, val), (b, _) in zip(changes, changes[1:] + [(52, "-")], strict=True)
        if val not in ("-", "compute")
    )
    assert stalled == res.onload_cycles + res.stall_cycles + res.offload_cycles
    assert {val for _, val in changes} == {"bandwidth", "compute", "-"}


@pytest.mark.parametrize(
    "clock, timescale",
    [
        (None, "1 ns"),
        (1000, "1 ns"),
        (100, "10 ns"),
        (10, "100 ns"),
        (1, "1 us"),
        (1e6, "1 ps"),
        (250, "1 ns"),
    ],
)
def test_timescale_is_one_cycle_per_unit_with_the_clock_when_vcd_can_state_it(clock, timescale):
    ts, comment = timescale_for(clock)
    assert ts == timescale
    assert "1 cycle" in comment
    if clock == 250:
        assert "4 ns per cycle" in comment


def test_clock_from_the_architecture_sets_the_timescale(traced, tmp_path):
    arch, _, _ = load_case("dma_two_tensors")
    write_vcd(traced("dma_two_tensors"), tmp_path / "t.vcd", clock_mhz=arch.clock_mhz)
    head = (tmp_path / "t.vcd").read_text().splitlines()[:3]
    assert "$timescale 1 ns $end" in head and not any("$date" in line for line in head)


def test_window_starts_the_dump_at_its_first_cycle(traced, tmp_path):
    res = traced("03_single_buffer", TraceFilter(10, 34))
    write_vcd(res, tmp_path / "w.vcd")
    v = vcdvcd.VCDVCD(str(tmp_path / "w.vcd"))
    tv = _signal(v, "cyclesim.DRAM.dram_rd.busy")
    assert tv[0][0] == 10 and busy_cycles(tv, 34) == (20 - 12) + (32 - 24)
    assert v.endtime == 34


def test_same_run_same_bytes(traced, tmp_path):
    write_vcd(traced("dma_two_tensors"), tmp_path / "a.vcd")
    write_vcd(traced("dma_two_tensors"), tmp_path / "b.vcd")
    assert (tmp_path / "a.vcd").read_bytes() == (tmp_path / "b.vcd").read_bytes()


def test_an_untraced_run_is_refused(tmp_path):
    from cyclesim.analysis.simulate import replay

    res = replay(*load_case("03_single_buffer"), progress=False)
    with pytest.raises(TraceError, match="trace=True"):
        write_vcd(res, tmp_path / "t.vcd")


def test_integer_change_texts_made_by_numpy_are_the_binary_digits():
    # by hand: 0 -> 0, 5 -> 101, 8 -> 1000; 2**53 + 1 (a float's log2 rounds it to 53 bits,
    # it has 54) -> 1, 52 zeros, 1; 2**63 - 1 -> 63 ones; "x" -> x
    many = _VcdInteger("!").many(np.array([0, 5, 8, 2**53 + 1, 2**63 - 1, X], dtype=np.int64))
    assert many == ["b0 !", "b101 !", "b1000 !", "b1" + "0" * 52 + "1 !", "b" + "1" * 63 + " !", "bx !"]  # fmt: skip


def test_spans_drop_the_idle_value_between_back_to_back_records():
    # records [2, 4) = a, [4, 6) = b, [8, 9) = a: a at 2, b at 4 (no idle between), idle at 6,
    # a at 8, idle at 9; an empty record [9, 9) is no change
    col = _spans([2, 4, 8, 9], [4, 6, 9, 9], np.array(["a", "b", "a", "c"], dtype=object), "-")
    assert col.times.tolist() == [2, 4, 6, 8, 9]
    assert col.values.tolist() == ["a", "b", "-", "a", "-"]


def test_integer_texts_with_every_identifier_character():
    # found: the texts of many values were made with str.format over "b{:b} " + code, which
    # fails (or misplaces the value) for a code holding "{" or "}", VCD identifier characters
    # from the 91st variable on; each text must be what one value's text is
    values = np.array([0, 5, X, 1 << 40], dtype=np.int64)
    for code in ("!", "{", "}", "a{}", "{{"):
        integer = _VcdInteger(code)
        assert integer.many(values) == [integer("x" if v == X else v) for v in values.tolist()]
        assert integer.many(values[:2]) == [f"b0 {code}", f"b101 {code}"]
