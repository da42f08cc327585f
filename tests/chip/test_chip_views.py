"""The chip's traces equal its report: read back the Perfetto JSON and the VCD (vcdvcd, an
independent reader) and find each link's, bus's and DRAM port's busy cycles and each core's
steps as ChipResult has them; the plots are written."""

from __future__ import annotations

import json
from collections import Counter
from decimal import Decimal

import pywellen
import vcdvcd
from chip_helpers import chip_runs, run
from hypothesis import HealthCheck, given, settings

from cyclesim.chip.views import (
    scope_name,
    write_chip_fst,
    write_chip_perfetto,
    write_chip_plots,
    write_chip_vcd,
)

SOME = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def vcd_busy(vcd: vcdvcd.VCDVCD, signal: str, end: int) -> int:
    """Cycles a 1-bit signal is 1 in [0, end)."""
    tv = vcd[signal].tv
    busy = 0
    for (t, v), nxt in zip(tv, tv[1:] + [(end, None)], strict=True):
        if v == "1":
            busy += nxt[0] - t
    return busy


@SOME
@given(chip_runs())
def test_traces_equal_the_report(tmp_path_factory, case):
    res = run(*case)
    folder = tmp_path_factory.mktemp("chip")
    # one cycle is one nanosecond, as `cyclesim run` writes it: ts and dur in microseconds
    text = write_chip_perfetto(res, folder / "t.json").read_text()
    trace = json.loads(text, parse_float=lambda x: int(Decimal(x) * 1000))["traceEvents"]
    doc = json.loads(text)
    assert "displayTimeUnit" not in doc  # older trace processors took it as ts's unit
    assert doc["otherData"]["time_unit"].startswith("1 cycle = 1 ns")  # said, as run's says
    last = max(e["ts"] + e["dur"] for e in doc["traceEvents"] if e["ph"] == "X")
    assert round(last * 1000) == res.cycles  # the trace's end, in microseconds
    names = {(e["pid"], e.get("tid")): e["args"]["name"] for e in trace if e["ph"] == "M"}
    busy: dict[str, int] = {}
    steps = []
    for e in trace:
        if e["ph"] != "X":
            continue
        if e["cat"] == "burst":
            key = names[(e["pid"], e["tid"])]
            busy[key] = busy.get(key, 0) + e["dur"]
        elif e["cat"] == "step":
            steps.append((e["name"], e["ts"], e["ts"] + e["dur"]))
    for p in res.ports:
        assert busy.get(p.name, 0) == p.busy_cycles, p.name
    assert sorted(steps) == sorted((s["step"], s["start"], s["end"]) for s in res.steps())
    vcd = vcdvcd.VCDVCD(str(write_chip_vcd(res, folder / "t.vcd")))
    for p in res.ports:
        assert vcd_busy(vcd, f"chip.{scope_name(p.name)}.busy", res.cycles) == p.busy_cycles, p.name
    # the FST, read by pywellen (Surfer's reader): per port busy; per core the cycles in steps
    wave = pywellen.Waveform(str(write_chip_fst(res, folder / "t.fst")))
    tvs = {v.full_name: list(v.tv) for v in wave.all_vars()}
    for p in res.ports:
        assert held(tvs[f"chip.{scope_name(p.name)}.busy"], res.cycles)[1] == p.busy_cycles, p.name
    for core in res.run.plan.chip.core_names:
        in_steps = sum(s["end"] - s["start"] for s in res.steps() if s["core"] == core)
        assert held(tvs[f"chip.{core}.state"], res.cycles)["step"] == in_steps, core


def held(tv: list, end: int) -> Counter:
    """Cycles each value is held, from the changes, up to end."""
    out: Counter = Counter()
    for (t, val), (t_next, _) in zip(tv, tv[1:] + [(end, None)], strict=True):
        out[val] += min(t_next, end) - t
    return out


def test_plots_are_written(tmp_path):
    from chip_helpers import CHAIN, layer, make_chip

    chip = make_chip(links=[{"name": "l", "cores": ["c0", "c1"], "width_bits": 16}])
    e1, e2 = CHAIN[0](8), CHAIN[1](8)
    local = [{"tensor": t, "home": "local"} for t in ("X", "Y", "V")] + [
        {"tensor": "Z", "home": "kept"}
    ]
    res = run(chip, [e1, e2], [layer(e1, ["c0"]), layer(e2, ["c1"])], local)
    paths = write_chip_plots(res, tmp_path / "plots")
    assert [p.name for p in paths] == ["chip_gantt.png", "chip_links.png"]
    assert all(p.stat().st_size > 10_000 for p in paths)


def test_perfetto_trace_in_the_format_its_suffix_names(tmp_path, capsys):
    # `--perfetto F.json.gz` is the gzipped Trace Event JSON, as `cyclesim run` writes it (a
    # plain JSON under .gz fails gunzip); a suffix naming Perfetto's protobuf (.pftrace, .pb),
    # which the chip does not write, is refused before the replay, with nothing written
    import gzip

    from cyclesim.cli import main

    ex = "examples/multicore"
    argv = ["chip", f"{ex}/chip_bus_2core.yaml", f"{ex}/workload.yaml"]
    argv += [f"{ex}/layer_by_layer_2core.yaml", "--perfetto"]
    assert main([*argv, str(tmp_path / "t.json.gz")]) == 0
    capsys.readouterr()
    doc = json.loads(gzip.decompress((tmp_path / "t.json.gz").read_bytes()))
    assert any(e["ph"] == "X" for e in doc["traceEvents"])
    assert main([*argv, str(tmp_path / "t.pftrace")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--perfetto" in err[0] and ".json.gz" in err[0], err
    assert not (tmp_path / "t.pftrace").exists()


def test_utilisation_line_covers_the_last_bin():
    # chip_links.png draws each medium's busy share per bin as a post-step line; its corners
    # must run to the run's last cycle (the last bin drawn, not only its left edge), and the
    # shares weighted by bin width give the busy cycles the report has
    from chip_helpers import CHAIN, layer, make_chip

    from cyclesim.chip.views import utilisation_steps

    chip = make_chip(links=[{"name": "l", "cores": ["c0", "c1"], "width_bits": 16}])
    e1, e2 = CHAIN[0](8), CHAIN[1](8)
    local = [{"tensor": t, "home": "local"} for t in ("X", "Y", "V")] + [
        {"tensor": "Z", "home": "kept"}
    ]
    res = run(chip, [e1, e2], [layer(e1, ["c0"]), layer(e2, ["c1"])], local)
    for port in res.ports:
        xs, ys = utilisation_steps(res, port.name, 50)
        assert len(xs) == len(ys) == 51 and xs[0] == 0 and xs[-1] == res.cycles
        assert ys[-1] == ys[-2]
        busy = sum(y / 100 * (b - a) for y, a, b in zip(ys, xs, xs[1:], strict=False))
        assert abs(busy - port.busy_cycles) < 1e-6 * max(1, res.cycles), port.name


def test_chip_outputs_are_checked_and_made_as_runs_are(tmp_path, capsys):
    # found by a new user: `chip --vcd out/newdir/c.vcd` failed after the replay (exit 2) where
    # `run` makes the folder; `chip --perfetto c.txt` was told to use .pftrace, which chip then
    # refused
    from cyclesim.cli import main

    ex = "examples/multicore"
    argv = ["chip", f"{ex}/chip_bus_2core.yaml", f"{ex}/workload.yaml"]
    argv += [f"{ex}/layer_by_layer_2core.yaml"]
    vcd, fst = tmp_path / "new" / "c.vcd", tmp_path / "other" / "deeper" / "c.fst"
    assert main([*argv, "--vcd", str(vcd), "--fst", str(fst)]) == 0
    assert vcd.stat().st_size > 0 and fst.stat().st_size > 0
    capsys.readouterr()
    assert main([*argv, "--perfetto", str(tmp_path / "c.txt")]) == 2
    err = capsys.readouterr().err
    assert "use one of .json, .json.gz" in err and ".pftrace" not in err, err


def test_an_fst_that_cannot_be_created_says_why(tmp_path):
    # libfst only returns NULL; the message names the file and the system's reason
    import pytest
    from pylibfst import ffi, lib

    from cyclesim.errors import TraceError
    from cyclesim.views.fst import create_fst_writer

    with pytest.raises(TraceError, match=r"c\.fst: cannot create the file: No such file"):
        create_fst_writer(ffi, lib, tmp_path / "missing" / "c.fst")


def test_a_cause_has_one_colour_in_every_gantt():
    """A wait's colour is its cause's, whatever other causes a run has (colours were handed out
    per plot, in the order of the run's causes: `latency` green in one Gantt, yellow in
    another), the single-core plots' colour where the cause is theirs; the chip's own causes
    have colours no cause, phase or layer has."""
    from cyclesim.chip.views import BURST_COLORS, CHIP_CAUSE_COLORS, span_color
    from cyclesim.views.plots import _PALETTE, CAUSE_COLORS, PHASE_COLORS

    assert span_color("latency", "latency", ["e1"]) == CAUSE_COLORS["latency"]
    assert span_color("latency", "latency", ["e1", "e2", "e3"]) == CAUSE_COLORS["latency"]
    layer_colours = {span_color("step", e, ["e1", "e2", "e3"]) for e in ("e1", "e2", "e3")}
    assert len(layer_colours) == 3 and "#777777" not in layer_colours  # no grey: idle's
    chip_own = {*CHIP_CAUSE_COLORS.values(), *BURST_COLORS.values()}
    assert len(chip_own) == 5
    assert not chip_own & {*CAUSE_COLORS.values(), *PHASE_COLORS.values(), *_PALETTE}


def test_chip_names_the_files_it_wrote_on_stderr(tmp_path, capsys):
    """As `cyclesim run`: each file written is named on stderr ("cyclesim: wrote ..."), with
    --json too (it used to say nothing then), stdout keeps the JSON alone; -q says nothing."""
    from cyclesim.cli import main

    ex = "examples/multicore"
    argv = ["chip", f"{ex}/chip_bus_2core.yaml", f"{ex}/workload.yaml",
            f"{ex}/layer_by_layer_2core.yaml", "--perfetto", str(tmp_path / "t.json")]  # fmt: skip
    assert main([*argv, "--json"]) == 0
    out = capsys.readouterr()
    json.loads(out.out)
    assert out.err.strip() == f"cyclesim: wrote {tmp_path / 't.json'}"
    assert main(["-q", *argv]) == 0
    assert capsys.readouterr() == ("", "")


def test_chip_waveforms_come_with_a_gtkwave_save_file(tmp_path, capsys):
    """--vcd X.vcd --fst X.fst write X.gtkw and X.fst.gtkw, as `cyclesim run` does: a group
    per core and per link, bus and DRAM port, every trace a signal of the dump it opens."""
    from cyclesim.cli import main

    ex = "examples/multicore"
    argv = ["chip", f"{ex}/chip_bus_2core.yaml", f"{ex}/workload.yaml",
            f"{ex}/layer_by_layer_2core.yaml", "--vcd", str(tmp_path / "x.vcd"),
            "--fst", str(tmp_path / "x.fst")]  # fmt: skip
    assert main(argv) == 0
    vcd = vcdvcd.VCDVCD(str(tmp_path / "x.vcd"), only_sigs=True)
    assert "1 time unit = 1 cycle" in (tmp_path / "x.vcd").read_text()[:2000]  # the unit, said
    for save, dump in (("x.gtkw", "x.vcd"), ("x.fst.gtkw", "x.fst")):
        text = (tmp_path / save).read_text()
        assert f'[dumpfile] "{dump}"' in text
        groups = [line[1:] for line in text.splitlines() if line.startswith("-")]
        assert {"core c0", "core c1", "bus", "dram.rw"} <= set(groups)
        traces = [line.split("} ")[1] for line in text.splitlines() if line.startswith("+{")]
        assert traces and set(traces) <= set(vcd.references_to_ids)
