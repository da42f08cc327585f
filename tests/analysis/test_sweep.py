"""`cyclesim sweep`: points on a real Dask LocalCluster equal the same points run one by one,
the cache makes a rerun compute nothing, and a failing point is a row while the rest complete."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

import cyclesim
from cyclesim.analysis.sweep import sweep
from cyclesim.analysis.sweep_axes import column_name
from cyclesim.analysis.sweep_spec import load_sweep
from cyclesim.cli import main
from cyclesim.errors import SpecError

HERE = Path(__file__).resolve().parent
SWEEP = HERE / "cases" / "single_buffer_sweep.yaml"
WORKED = HERE.parent / "cases" / "worked" / "03_single_buffer"


def worked_sweep(path: Path, axes: str) -> Path:
    """A sweep file over worked example 03 with these `axes:` items (YAML text), written at path."""
    path.write_text(
        f"architecture: {WORKED}/arch.yaml\nworkload: {WORKED}/workload.yaml\n"
        f"mapping: {WORKED}/mapping.yaml\naxes:\n{axes}"
    )
    return path


# Worked example 03 with its DRAM read port at w b/cycle: a 32-b tile of A moves as four 8-b
# bursts (burst_bits 8), each holding the port ceil(8/w) cycles (at least one); the
# single-slot abuf serialises fill and compute (4 cycles per tile), 4 tiles, then Z's write-back
# takes 4 cycles: 4 x (4 * ceil(8/w) + 4) + 4.
HAND_DERIVED = {w: 4 * (4 * -(-8 // w) + 4) + 4 for w in (2, 4, 8, 16)}
assert HAND_DERIVED == {2: 84, 4: 52, 8: 36, 16: 36}


@pytest.fixture(scope="module")
def dask_cluster():
    """A real distributed.LocalCluster with two worker processes, shared by this module."""
    distributed = pytest.importorskip("distributed")
    import logging

    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=":0",  # no fixed port: other clusters may be running
        silence_logs=logging.ERROR,
    )
    yield cluster
    cluster.close()


def one_by_one(width: int, abuf_bits: int) -> dict | None:
    """The same point through the Python API, in this process (None when it cannot be scheduled)."""
    arch = cyclesim.load_architecture(str(WORKED / "arch.yaml"))
    arch = arch.with_port_width("DRAM", "dram_rd", width)
    arch = arch.with_field("memories.abuf.size_bits", abuf_bits)
    try:
        result = cyclesim.simulate(arch, WORKED / "workload.yaml", WORKED / "mapping.yaml")
    except cyclesim.CyclesimError:
        return None
    return dict(
        cycles=result.cycles,
        onload_cycles=result.onload_cycles,
        stall_cycles=result.stall_cycles,
        offload_cycles=result.offload_cycles,
        cause_bandwidth_cycles=result.stalls_by_cause.get("bandwidth", 0),
        dram_read_bits=int(
            result.accesses.query("memory == 'DRAM' and action == 'read'")["bits"].sum()
        ),
    )


def test_sweep_on_a_local_cluster_equals_the_points_run_one_by_one(tmp_path, dask_cluster):
    run = sweep(SWEEP, tmp_path, scheduler=dask_cluster.scheduler_address, progress=True)
    table = run.table
    assert len(table) == 9 and run.computed == 9 and run.cached == 0
    assert list(table["point"]) == list(range(9))  # point order, whatever order workers finished
    for row in table.itertuples(index=False):
        width, abuf = row[1], row[2]  # the two axis columns
        expected = one_by_one(width, abuf)
        if expected is None:
            assert row.status == "error" and "need 32 bits per instance but it has 16" in row.error
            continue
        assert row.status == "ok"
        got = {k: getattr(row, k) for k in expected}
        assert got == expected
        assert row.cycles == HAND_DERIVED[width]
    # the table is written as parquet and CSV and both read back to the same rows
    parquet = pd.read_parquet(tmp_path / "sweep.parquet")
    assert parquet["cycles"].tolist() == table["cycles"].tolist()
    assert pd.read_csv(tmp_path / "sweep.csv")["status"].tolist() == table["status"].tolist()
    plot = tmp_path / "cycles_vs_DRAM.dram_rd.width_bits_by_abuf.size_bits.png"
    assert plot.read_bytes()[:4] == b"\x89PNG"


def test_a_rerun_computes_nothing_and_an_extended_sweep_only_the_new_points(tmp_path, dask_cluster):
    address = dask_cluster.scheduler_address
    first = sweep(SWEEP, tmp_path, scheduler=address, progress=False)
    assert (first.computed, first.cached) == (9, 0)
    again = sweep(SWEEP, tmp_path, scheduler=address, progress=False)
    assert (again.computed, again.cached) == (0, 9)
    same = ["point", "status", "cycles", "stall_cycles", "error"]
    assert again.table[same].equals(first.table[same])
    assert again.table["cached"].all()
    assert list(again.table.columns) == list(first.table.columns)  # same table shape
    # one more width: only its three points are new
    extended = tmp_path / "extended.yaml"
    text = SWEEP.read_text().replace("values: [2, 4, 8]", "values: [2, 4, 8, 16]")
    text = text.replace("../../cases/", str(SWEEP.parent.parent.parent / "cases") + "/")
    extended.write_text(text)
    more = sweep(extended, tmp_path, scheduler=address, progress=False)
    assert (more.computed, more.cached) == (3, 9)
    # dram_rd 16 b/cycle: an 8-b burst still holds the port one cycle, so no faster than 8 b/cycle
    assert set(
        more.table.query("`DRAM.dram_rd.width_bits` == 16 and status == 'ok'")["cycles"]
    ) == {HAND_DERIVED[16]}


def test_a_failing_point_is_a_row_and_the_rest_complete(tmp_path, dask_cluster):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        SWEEP.read_text()
        .replace("values: [2, 4, 8]", "values: [4, -1]")  # -1 fails validation of the override
        .replace("../../cases/", str(WORKED.parent.parent) + "/")
    )
    run = sweep(bad, tmp_path / "out", scheduler=dask_cluster.scheduler_address, progress=False)
    errors = run.table[run.table["status"] == "error"]
    assert run.failed == len(errors) == 4  # width -1 (3 sizes) and abuf 16 at width 4
    assert (
        errors.query("`DRAM.dram_rd.width_bits` == -1")["error"]
        .str.contains("width_bits.*greater than 0")
        .all()
    )
    assert run.table.query("status == 'ok'")["cycles"].tolist() == [52, 52]


def test_the_cli_runs_a_sweep_on_its_own_local_cluster(tmp_path, capsys):
    """The default path: no --scheduler, a LocalCluster of --workers processes, progress on."""
    code = main(["sweep", str(SWEEP), "--out", str(tmp_path), "--workers", "2", "--json"])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema_version"] == 1 and doc["points"] == 9 and doc["failed"] == 3
    assert [r["cycles"] for r in doc["rows"] if r["status"] == "ok"] == [84, 84, 52, 52, 36, 36]
    code = main(["sweep", str(SWEEP), "--out", str(tmp_path)])
    text = capsys.readouterr().out
    assert code == 0 and "(0 computed, 9 from the cache, 3 failed)" in text


def test_a_wrong_sweep_file_names_file_field_and_line(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        SWEEP.read_text().replace("field: architecture.memories.abuf", "field: arch.abuf")
    )
    with pytest.raises(SpecError, match=r"bad.yaml:\d+: field 'axes\[1\].field': unknown field"):
        load_sweep(bad)
    assert main(["sweep", str(bad), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "bad.yaml:10: field 'axes[1].field'" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "field,column",
    [
        ("architecture.memories.sram.ports.r_port_1.width_bits", "sram.r_port_1.width_bits"),
        ("architecture.pe_array.dims.X", "pe_array.dims.X"),
        ("mapping.loop_tree[3].bound", "loop_tree[3].bound"),
        ("workload", "workload"),
    ],
)
def test_column_names_of_swept_fields(field, column):
    assert column_name(field) == column


def test_axes_ranges_geometric_and_zip(tmp_path):
    path = tmp_path / "s.yaml"
    shutil.copy(SWEEP, path)
    path.write_text(
        f"""
architecture: {WORKED}/arch.yaml
workload: {WORKED}/workload.yaml
mapping: {WORKED}/mapping.yaml
combine: zip
axes:
  - field: architecture.memories.DRAM.ports.dram_rd.width_bits
    range: {{start: 2, stop: 8, step: 3}}
  - name: buffers
    fields: [architecture.memories.abuf.size_bits, architecture.memories.wbuf.size_bits]
    geometric: {{start: [32, 64], stop: [128, 256], points: 3, multiple_of: 8}}
"""
    )
    spec = load_sweep(path)
    points = spec.points()
    # range 2..8 step 3 -> 2, 5, 8; geometric 32..128 in 3 points -> 32, 64, 128 (x2 for wbuf)
    assert [dict(p.values) for p in points] == [
        {"DRAM.dram_rd.width_bits": 2, "buffers": 0, "abuf.size_bits": 32, "wbuf.size_bits": 64},
        {"DRAM.dram_rd.width_bits": 5, "buffers": 1, "abuf.size_bits": 64, "wbuf.size_bits": 128},
        {"DRAM.dram_rd.width_bits": 8, "buffers": 2, "abuf.size_bits": 128, "wbuf.size_bits": 256},
    ]


def test_a_misspelt_field_is_one_error_at_its_line_before_any_point_runs(tmp_path, capsys):
    """A memory named wrong (abuff) is bad input (exit 2, the sweep file's line), not a table of
    failed rows with exit 0; the axis on line 6 lists the architecture's memories."""
    path = worked_sweep(
        tmp_path / "typo.yaml",
        "  - field: architecture.memories.DRAM.ports.dram_rd.width_bits\n"
        "    values: [2, 4]\n"
        "  - field: architecture.memories.abuff.size_bits\n"
        "    values: [32, 64]\n",
    )
    with pytest.raises(SpecError) as err:
        load_sweep(path)
    assert (err.value.line, err.value.field) == (7, "axes[1].field")
    assert "abuf" in err.value.expected and "no item of this name" in err.value.detail
    assert main(["sweep", str(path), "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    assert f"{path}:7:" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_the_cli_uses_an_existing_cluster_given_its_scheduler(tmp_path, dask_cluster, capsys):
    address = dask_cluster.scheduler_address
    assert main(["sweep", str(SWEEP), "--out", str(tmp_path), "--scheduler", address]) == 0
    assert "(9 computed, 0 from the cache, 3 failed)" in capsys.readouterr().out


def test_whole_input_and_policy_axes_equal_simulate(tmp_path):
    """reuse and a whole mapping file as axes (in this process: the processes backend, 1 worker)."""
    case = WORKED.parent / "05_narrow_innermost_port_reuse_every_other_cycle"
    path = tmp_path / "policy.yaml"
    path.write_text(
        f"""
architecture: {case}/arch.yaml
workload: {case}/workload.yaml
mapping: {case}/mapping.yaml
axes:
  - field: reuse
    values: [retain, strict]
  - field: mapping
    values: [{case}/mapping.yaml]
"""
    )
    run = sweep(path, tmp_path / "out", backend="processes", workers=1, progress=False)
    for reuse in ("retain", "strict"):
        expected = cyclesim.simulate(
            case / "arch.yaml", case / "workload.yaml", case / "mapping.yaml", reuse=reuse
        )
        (cycles,) = run.table.query("reuse == @reuse")["cycles"]
        assert cycles == expected.cycles
    # the worked example: 25 cycles under retain (A read every other step)
    assert run.table["cycles"].tolist()[0] == 25


def test_a_sweep_where_every_point_fails_still_writes_its_table(tmp_path):
    path = tmp_path / "allbad.yaml"
    path.write_text(
        SWEEP.read_text()
        .replace("values: [16, 32, 64]", "values: [8, 16]")  # A's 32-b tile fits in neither
        .replace("../../cases/", str(WORKED.parent.parent) + "/")
    )
    run = sweep(path, tmp_path / "out", backend="processes", workers=1, progress=False)
    assert run.failed == len(run.table) == 6
    assert [p.name for p in run.files] == ["sweep.parquet", "sweep.csv"]  # no plot to draw


def test_a_failing_columns_hook_keeps_the_replays_numbers(tmp_path):
    hook = tmp_path / "hook.py"
    hook.write_text(
        "def columns(result, point):\n"
        "    if point['DRAM.dram_rd.width_bits'] == 8:\n"
        "        raise RuntimeError('no column for 8')\n"
        "    return {'pe_busy_share': result.ideal_compute_cycles / result.cycles}\n"
    )
    path = tmp_path / "hooked.yaml"
    path.write_text(
        SWEEP.read_text().replace("../../cases/", str(WORKED.parent.parent) + "/")
        + "columns: hook.py:columns\n"
    )
    run = sweep(path, tmp_path / "out", backend="processes", workers=1, progress=False)
    ok = run.table.query("status == 'ok'")
    assert ok["cycles"].tolist() == [84, 84, 52, 52, 36, 36]
    # case 03 at width 4: 16 ideal compute cycles of 52
    assert ok.query("`DRAM.dram_rd.width_bits` == 4")["pe_busy_share"].tolist() == [16 / 52] * 2
    hook_failed = ok[ok["error"].notna()]
    assert hook_failed["DRAM.dram_rd.width_bits"].tolist() == [8, 8]
    assert hook_failed["error"].str.contains("columns hook columns: RuntimeError: no column").all()
    # the points whose hook failed are not cached: a rerun retries exactly them
    again = sweep(path, tmp_path / "out", backend="processes", workers=1, progress=False)
    assert (again.computed, again.cached) == (2, 7)


def test_a_misspelt_last_key_is_one_error_at_its_line(tmp_path, capsys):
    """widht_bits for width_bits: set_field adds a missing last key, so every point failed
    with the same 'unknown field' and the sweep exited 0; now it is bad input at line 5."""
    path = worked_sweep(
        tmp_path / "typo.yaml",
        "  - field: architecture.memories.DRAM.ports.dram_rd.widht_bits\n    values: [2, 4]\n",
    )
    assert main(["sweep", str(path), "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"cyclesim: {path}:5: field 'axes[0].field': no such field in arch.yaml")
    assert "did you mean 'width_bits'?" in err
    assert not (tmp_path / "out").exists()


def test_a_value_of_the_wrong_type_is_that_points_error_row(tmp_path):
    """[4, wide] for a width: the axis column ends in _bits, was cast to integers and the sweep
    died with pandas' traceback; 'wide' is that point's SpecError row, the column text."""
    path = worked_sweep(
        tmp_path / "wide.yaml",
        "  - field: architecture.memories.DRAM.ports.dram_rd.width_bits\n    values: [4, wide]\n",
    )
    run = sweep(path, tmp_path / "out", backend="processes", workers=1, progress=False)
    table = run.table.set_index("DRAM.dram_rd.width_bits")
    assert table.loc["4", "cycles"] == HAND_DERIVED[4]
    assert table.loc["wide", "status"] == "error"
    assert "valid integer (found 'wide')" in table.loc["wide", "error"]
    assert pd.read_parquet(tmp_path / "out" / "sweep.parquet")["status"].tolist() == ["ok", "error"]


def test_the_summary_shows_the_successful_points_first():
    # a sweep whose first points fail (memory too small) hid its one successful row under
    # "... 2 more rows"; the summary lists what replayed first, in point order
    from types import SimpleNamespace

    import pandas as pd

    from cyclesim.analysis.sweep import summary_text

    table = pd.DataFrame({
        "point": [0, 1, 2, 3], "size": [1, 2, 4, 8],
        "status": ["error", "error", "ok", "ok"], "error": ["too small", "too small", "", ""],
        "cycles": pd.array([None, None, 300, 200], dtype="Int64"),
    })  # fmt: skip
    spec = SimpleNamespace(axis_columns=["size"], name="s")
    run = SimpleNamespace(table=table, spec=spec, computed=4, cached=0, failed=2,
                          wall_seconds=1.0, files=[])  # fmt: skip
    lines = summary_text(run, head=2).splitlines()
    assert lines[2].split()[:3] == ["4", "ok", "300"] and lines[3].split()[:3] == ["8", "ok", "200"]
    assert lines[4] == "... 2 more rows"


@pytest.mark.parametrize(
    ("address", "reason"),
    [("notanaddress", "no port"), ("tcp://127.0.0.1", "no port"),
     ("127.0.0.1:8786x", "port '8786x' is not a number from 1 to 65535"),
     ("foo://x:1", "unknown scheme 'foo://'")],
)  # fmt: skip
def test_a_malformed_scheduler_address_is_one_line_and_exit_2(tmp_path, capsys, address, reason):
    # found: a Dask ValueError traceback and exit 1, after the output folder was made
    out = tmp_path / "out"
    assert main(["sweep", str(SWEEP), "--out", str(out), "--scheduler", address]) == 2
    assert capsys.readouterr().err == (
        f"cyclesim: malformed Dask scheduler address {address!r} ({reason}); expected "
        "[tcp://]HOST:PORT (or tls://, ws://, wss://), e.g. tcp://127.0.0.1:8786\n"
    )
    assert not out.exists()


def plotted_sweep(tmp_path: Path, plot: str, hook: str | None = None) -> Path:
    """The small sweep with one plot line (line 13) and, if given, a columns hook (line 14)."""
    text = SWEEP.read_text().replace("../../cases/", str(WORKED.parent.parent) + "/")
    text = text.replace("  - {x: DRAM.dram_rd.width_bits, series: abuf.size_bits}", plot)
    if hook is not None:
        (tmp_path / "hook.py").write_text(
            "def columns(result, point):\n    return {'busy': result.ideal_compute_cycles}\n"
        )
        text += f"columns: {hook}\n"
    path = tmp_path / "plotted.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("plot", "field", "found"),
    [("  - {x: DRAM.dram_rd.width_bits, y: cyclez}", "plots[0].y", "cyclez"),
     ("  - {x: DRAM.dram_rd.widthbits}", "plots[0].x", "DRAM.dram_rd.widthbits"),
     ("  - {x: abuf.size_bits, y: [cycles, stalls]}", "plots[0].y[1]", "stalls")],
)  # fmt: skip
def test_a_plot_column_the_table_lacks_is_refused_before_any_point(tmp_path, capsys, plot,
                                                                   field, found):  # fmt: skip
    # found: refused only after every point ran, naming no file or line
    path = plotted_sweep(tmp_path, plot)
    out = tmp_path / "out"
    assert main(["sweep", str(path), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"cyclesim: {path}:13: field '{field}': a plot names a column the sweep table does not "
        f"have (found '{found}'); expected an axis column ['DRAM.dram_rd.width_bits', "
        "'abuf.size_bits'] or a result column ['cycles', 'onload_cycles', "
    ), err
    assert err.count("\n") == 1 and not out.exists()


def test_a_plot_column_the_columns_hook_lacks_is_refused_at_its_first_row(tmp_path, capsys):
    path = plotted_sweep(tmp_path, "  - {x: abuf.size_bits, y: [busy, bussy]}", "hook.py:columns")
    argv = ["sweep", str(path), "--out", str(tmp_path / "out"), "--no-progress", "--workers", "1"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"cyclesim: {path}:13: field 'plots[0].y[1]': a plot names a column ")
    assert "(found 'bussy')" in err and err.endswith(", or a column the columns hook columns returns\n")  # fmt: skip
    assert not (tmp_path / "out" / "sweep.csv").exists()
    # the hook's own column is plotted
    good = plotted_sweep(tmp_path, "  - {x: abuf.size_bits, y: busy}", "hook.py:columns")
    assert main(["sweep", str(good), "--out", str(tmp_path / "out"), "--no-progress"]) == 0


def test_a_columns_hook_naming_no_function_of_its_file_is_refused(tmp_path, capsys):
    # found: exit 0 with an `error` cell on every row
    path = plotted_sweep(tmp_path, "  - {x: abuf.size_bits}", "hook.py:g")
    assert main(["sweep", str(path), "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    assert capsys.readouterr().err == (
        f"cyclesim: {path}:14: field 'columns': the columns hook file defines no function g "
        "(found 'hook.py:g')\n"
    )
    assert not (tmp_path / "out").exists()


def test_a_misspelt_axis_field_is_named_before_the_plot_column_it_misnames(tmp_path, capsys):
    """widht_bits in an axis while the plot names width_bits: the plot's column was refused at
    its line and the axis' 'did you mean' came only once plots: was removed."""
    path = worked_sweep(
        tmp_path / "typo.yaml",
        "  - field: architecture.memories.DRAM.ports.dram_rd.widht_bits\n    values: [2, 4]\n"
        "plots:\n  - {x: DRAM.dram_rd.width_bits, y: cycles}\n",
    )
    assert main(["sweep", str(path), "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"cyclesim: {path}:5: field 'axes[0].field': no such field in arch.yaml")
    assert "did you mean 'width_bits'?" in err


def test_the_summary_says_how_many_failures_it_does_not_list(tmp_path, capsys):
    """'7 failed' listed five failures and said nothing of the other two."""
    path = worked_sweep(
        tmp_path / "small.yaml",
        "  - field: architecture.memories.abuf.size_bits\n    values: [1, 2, 3, 4, 5, 6, 7, 32]\n",
    )
    out = tmp_path / "out"
    assert main(["sweep", str(path), "--out", str(out), "--workers", "1", "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "7 failed" in text and text.count(" failed: ") == 5
    assert "... 2 more failed points (the table's error column)" in text


def test_a_sweep_that_cannot_reach_its_scheduler_leaves_no_folder(tmp_path, capsys):
    """The unreachable scheduler exited 2 but left OUT/cache behind (made before connecting)."""
    out = tmp_path / "out"
    args = ["sweep", str(SWEEP), "--out", str(out), "--scheduler", "tcp://127.0.0.1:1"]
    assert main(args) == 2
    assert "cannot reach the Dask scheduler" in capsys.readouterr().err
    assert not out.exists()
