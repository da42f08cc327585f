"""Energy from the replayed counts: per-action energies in the architecture, `run` reports them."""

from __future__ import annotations

import json
import math
import re

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from replay_helpers import ROOT, WORKED

from cyclesim.analysis.simulate import replay
from cyclesim.cli import main
from cyclesim.results.energy import energy_table
from cyclesim.spec import load_mapping, load_workload
from cyclesim.spec.arch import architecture_from_dict

CASE = WORKED / "03_single_buffer"

# Worked example 03 (matvec Z[m] += A[m,k] * B[k], m = k = 4, 8 bits): the replay moves A 16
# values DRAM -> abuf and reads them once, B 16 values from wbuf, Z 16 partial-sum writes into
# acc (12 read-modify-write reads + 4 final reads for the write-back) and 4 values to DRAM.
ENERGIES = {
    "DRAM": {"bits_per_action": 8, "read": 10, "write": 20, "leak_per_cycle": 0.25},
    "abuf": {"bits_per_action": 8, "read": 1, "write": 2},
    "acc": {"bits_per_action": 4, "read": 1, "write": 2, "update": 3},
    # wbuf: no energies given -> no rows
}
EXPECTED_ROWS = {
    ("matvec", "DRAM", "A", "read"): 16 * 10,  # 128 bits / 8 = 16 actions
    ("matvec", "abuf", "A", "write"): 16 * 2,
    ("matvec", "abuf", "A", "read"): 16 * 1,
    ("matvec", "acc", "Z", "read"): 32 * 1,  # (96 + 32) bits / 4 bits per action
    ("matvec", "acc", "Z", "update"): 32 * 3,  # 128 bits written from below (the PE array)
    ("matvec", "DRAM", "Z", "update"): 4 * 20,  # the write-back from acc; update defaults to write
    ("matvec", "pe_array", "(MACs)", "mac"): 16 * 0.5,  # 16 MACs
}


def _arch(energies: dict, mac: float | None = 0.5) -> dict:
    data = yaml.safe_load((CASE / "arch.yaml").read_text())
    for memory in data["memories"]:
        if memory["name"] in energies:
            memory["energy"] = energies[memory["name"]]
    if mac is not None:
        data["pe_array"]["energy"] = {"mac": mac}
    return data


def _run(capsys, arch: dict, tmp_path, *extra) -> tuple[int, str]:
    path = tmp_path / "arch.yaml"
    path.write_text(yaml.safe_dump(arch))
    code = main(["run", str(path), str(CASE / "workload.yaml"), str(CASE / "mapping.yaml"), *extra])
    return code, capsys.readouterr().out


def test_run_json_energy_is_counts_times_per_action_energy(capsys, tmp_path):
    code, out = _run(capsys, _arch(ENERGIES), tmp_path, "--json")
    assert code == 0
    result = json.loads(out)
    energy = result["energy"]
    rows = {(r["einsum"], r["component"], r["tensor"], r["action"]): r for r in energy["rows"]}
    leak = rows.pop(("(whole run)", "DRAM", "(leak)", "leak"))
    assert {k: r["energy"] for k, r in rows.items()} == EXPECTED_ROWS
    assert leak["energy"] == 0.25 * result["cycles"]  # one DRAM instance, every cycle of the run
    dynamic = sum(EXPECTED_ROWS.values())  # 424
    assert energy["dynamic"] == dynamic == 424
    assert energy["total"] == dynamic + leak["energy"]
    assert energy["by_einsum"] == {"matvec": dynamic}  # the leak belongs to no Einsum
    assert energy["by_component"]["acc"] == 32 + 96
    assert energy["by_tensor"]["Z"] == 32 + 96 + 80
    assert energy["by_action"]["update"] == 96 + 80


def test_energy_of_no_tensor_has_a_readable_key_and_every_breakdown_sums_to_the_total(
    capsys, tmp_path
):
    # the MACs' 8 and the DRAM's leak were filed under by_tensor[''] together: now '(MACs)' and
    # '(leak)' (A: 160 + 32 + 16 = 208, Z: 208 as above, B: wbuf has no energies)
    code, out = _run(capsys, _arch(ENERGIES), tmp_path, "--json")
    assert code == 0
    result = json.loads(out)
    energy = result["energy"]
    assert energy["by_tensor"] == {
        "A": 208, "Z": 208, "(MACs)": 8, "(leak)": 0.25 * result["cycles"],
    }  # fmt: skip
    for breakdown in ("by_component", "by_tensor", "by_action"):
        assert sum(energy[breakdown].values()) == energy["total"]
    assert sum(energy["by_einsum"].values()) == energy["dynamic"]


def test_run_csv_writes_the_energy_rows_with_readable_keys(capsys, tmp_path):
    import pandas as pd

    code, out = _run(capsys, _arch(ENERGIES), tmp_path, "--csv", str(tmp_path / "csv"))
    assert code == 0
    rows = pd.read_csv(tmp_path / "csv" / "energy_report.csv", keep_default_na=False)
    assert list(rows.columns) == [
        "run", "einsum", "component", "tensor", "action", "bits", "actions", "energy", "energy_unit",
    ]  # fmt: skip
    assert "" not in set(rows.einsum) | set(rows.tensor)  # nothing read back as NaN
    (run,) = pd.read_csv(tmp_path / "csv" / "compute_report.csv").to_dict("records")
    assert math.isclose(rows.energy.sum(), run["energy"])
    assert rows.groupby("tensor").energy.sum().to_dict() == {
        "A": 208, "Z": 208, "(MACs)": 8, "(leak)": 0.25 * run["cycles"],
    }  # fmt: skip
    (leak,) = rows[rows.action == "leak"].itertuples()
    assert (leak.einsum, leak.component, leak.tensor) == ("(whole run)", "DRAM", "(leak)")


def test_text_report_shows_energy_only_when_given(capsys, tmp_path):
    code, out = _run(capsys, _arch(ENERGIES), tmp_path)  # the default path, progress bar on
    assert code == 0
    assert "energy (architecture's per-action energies x replayed counts)" in out
    assert "acc update" in out and "(whole run: leak)" in out
    code, out = _run(capsys, _arch({}, mac=None), tmp_path)
    assert code == 0 and "energy" not in out
    code, out = _run(capsys, _arch({}, mac=None), tmp_path, "--json")
    assert "energy" not in json.loads(out)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("read", -1, "greater than or equal to 0"),
        ("write", ".inf", "finite number"),
        ("bits_per_action", 0, "greater than 0"),
        ("joules", 1, "joules"),
    ],
)
def test_bad_energy_is_refused_by_field_with_exit_2(capsys, tmp_path, field, value, message):
    path = tmp_path / "arch.yaml"
    text = yaml.safe_dump(_arch({"DRAM": {"read": 1}}))
    text = text.replace("energy:\n    read: 1", f"energy:\n    {field}: {value}", 1)
    path.write_text(text)
    code = main(["run", str(path), str(CASE / "workload.yaml"), str(CASE / "mapping.yaml")])
    err = capsys.readouterr().err
    assert code == 2
    assert re.search(r"arch\.yaml:\d+: field 'memories\[0\]\.energy", err)  # file, line, field
    assert message in err


@settings(max_examples=20, deadline=None)
@given(
    st.floats(0, 1e3, allow_nan=False),
    st.floats(0, 1e3, allow_nan=False),
    st.sampled_from([1, 2, 8, 3]),
)
def test_energy_scales_linearly_and_totals_add_up(read, write, bits_per_action):
    # Each row is actions x energy per action, so the total is linear in the per-action energies
    # and equals the sum of its rows; bits / bits_per_action are the actions.
    data = _arch({"DRAM": {"bits_per_action": bits_per_action, "read": read, "write": write}})
    arch = architecture_from_dict(data)
    workload = load_workload(str(CASE / "workload.yaml"))
    mapping = load_mapping(str(CASE / "mapping.yaml"), arch, workload)
    table = energy_table(replay(arch, workload, mapping, progress=False), arch)
    dram = table[table.component == "DRAM"]
    expected = (128 * read + 32 * write) / bits_per_action
    assert math.isclose(dram.energy.sum(), expected, rel_tol=1e-12, abs_tol=1e-12)
    assert (dram.actions * bits_per_action == dram.bits).all()


@pytest.mark.slow
def test_strict_replay_of_accelforges_3level_matmul_has_accelforges_energy():
    # docs/reference/accelforge.md §7.3 (accelforge 1.0.467, the mapper's mapping, energies DRAM 100,
    # GLB 5, Reg 1 per bit, MAC 1): energy 38,731,776 = DRAM A 6553600 + B 6553600 + Z 3276800,
    # GLB A 2949120 + B 10813440 + Z 1310720, Reg A 2621440 + Z 4390912, MAC 262144. Under
    # `strict` the replay's counts are AccelForge's, so its energy is too.
    from cyclesim.spec import load_architecture

    arch = load_architecture(str(ROOT / "hw_models/simple_3level.yaml"))
    workload = load_workload(str(ROOT / "examples/simple_3level/workload.yaml"))
    mapping = load_mapping(str(ROOT / "examples/simple_3level/mapping.yaml"), arch, workload)
    table = energy_table(replay(arch, workload, mapping, reuse="strict", progress=False), arch)
    assert table.energy.sum() == 38_731_776
    by_component = table.groupby("component").energy.sum().to_dict()
    assert by_component == {
        "DRAM": 6553600 + 6553600 + 3276800,
        "GLB": 2949120 + 10813440 + 1310720,
        "Reg": 2621440 + 4390912,
        "pe_array": 262144,
    }


def test_every_energy_shown_names_the_architectures_unit(capsys, tmp_path):
    # no energy_unit: picojoules (Accelergy's, Timeloop's and ZigZag's unit); the total is
    # 424 dynamic + 0.25 per cycle of DRAM leak, whatever the unit
    code, out = _run(capsys, _arch(ENERGIES), tmp_path)
    assert code == 0
    total_line = next(line for line in out.splitlines() if line.startswith("energy ("))
    assert total_line.endswith(" pJ")
    assert "  by Einsum (pJ):" in out and "  by component and action (pJ):" in out
    code, out = _run(capsys, _arch(ENERGIES), tmp_path, "--json")
    assert json.loads(out)["energy"]["unit"] == "pJ"
    # declared: the same numbers, now said to be nanojoules
    arch = {**_arch(ENERGIES), "energy_unit": "nJ"}
    code, out = _run(capsys, arch, tmp_path, "--json")
    energy = json.loads(out)["energy"]
    assert code == 0 and energy["unit"] == "nJ" and energy["dynamic"] == 424
    code, out = _run(capsys, arch, tmp_path)
    assert "  by component (nJ):" in out


def test_an_unknown_energy_unit_is_refused_with_its_line(capsys, tmp_path):
    path = tmp_path / "arch.yaml"
    path.write_text(yaml.safe_dump({**_arch(ENERGIES), "energy_unit": "kWh"}))
    line = path.read_text().splitlines().index("energy_unit: kWh") + 1
    code = main(["run", str(path), str(CASE / "workload.yaml"), str(CASE / "mapping.yaml")])
    err = capsys.readouterr().err
    assert code == 2
    assert f"arch.yaml:{line}: field 'energy_unit'" in err and "'pJ'" in err


def test_the_python_api_reports_energy_as_run_does(tmp_path):
    import cyclesim

    path = tmp_path / "arch.yaml"
    path.write_text(yaml.safe_dump({**_arch(ENERGIES), "energy_unit": "fJ"}))
    result = cyclesim.simulate(path, CASE / "workload.yaml", CASE / "mapping.yaml")
    assert result.to_dict()["energy"]["unit"] == "fJ"
    assert result.to_dict()["energy"]["dynamic"] == 424
    assert "  by Einsum (fJ):" in cyclesim.report_text(result)
    # the table itself carries its unit: a notebook that only keeps result.energy still knows it
    assert result.energy.attrs["energy_unit"] == "fJ"
    assert result.energy.energy.sum() == result.to_dict()["energy"]["total"]


@pytest.mark.parametrize(
    ("unit", "picojoules"),
    [("J", 2.5e12), ("mJ", 2.5e9), ("uJ", 2.5e6), ("nJ", 2500), ("pJ", 2.5), ("fJ", 2.5e-3)],
)
def test_the_sweeps_energy_column_is_picojoules_whatever_the_unit(unit, picojoules):
    # 2.5 of `unit` is 2.5 x (picojoules per unit): 1 J = 10**12 pJ, 1 fJ = 10**-3 pJ
    import pandas as pd

    from cyclesim.analysis.sweep_point import energy_total_pj

    table = pd.DataFrame({"energy": [1.0, 1.5]})
    assert math.isclose(energy_total_pj(table, unit), picojoules, rel_tol=1e-12)
    assert math.isclose(energy_total_pj(2.5, unit), picojoules, rel_tol=1e-12)
    assert energy_total_pj(None, unit) is None


def test_the_energy_unit_survives_overrides_and_saved_dicts():
    # with_field and the sweep's overrides go through architecture_to_dict and back
    from cyclesim.spec import load_architecture
    from cyclesim.spec.override import architecture_to_dict

    arch = load_architecture(ROOT / "hw_models" / "simple_3level.yaml")  # AccelForge's joules
    assert arch.energy_unit == "J"
    assert architecture_from_dict(architecture_to_dict(arch)).energy_unit == "J"
    assert arch.with_field("energy_unit", "nJ").energy_unit == "nJ"
    assert arch.with_field("clock_mhz", 1000).energy_unit == "J"


def test_run_csv_has_the_energy_and_its_unit(capsys, tmp_path):
    # the hand-derived rows above: DRAM 160 (A read) + 80 (Z update) + 0.25 per cycle of leak,
    # abuf 32 + 16, acc 32 + 96, the PE array 8; wbuf has no energies (0); the run: 424 + leak
    import pandas as pd

    arch = {**_arch(ENERGIES), "energy_unit": "nJ"}
    code, _ = _run(capsys, arch, tmp_path, "--csv", str(tmp_path / "csv"), "-q")
    assert code == 0
    (run,) = pd.read_csv(tmp_path / "csv" / "compute_report.csv").to_dict("records")
    assert (run["energy"], run["energy_unit"]) == (424 + 0.25 * run["cycles"], "nJ")
    memories = pd.read_csv(tmp_path / "csv" / "memory_report.csv").set_index("memory")
    assert memories.energy.drop("wbuf").to_dict() == {
        "DRAM": 160 + 80 + 0.25 * run["cycles"], "acc": 128, "abuf": 48,
    }  # fmt: skip
    assert pd.isna(memories.energy["wbuf"])  # no energies given: empty, not a measured 0
    assert set(memories.energy_unit) == {"nJ"}


def test_run_csv_without_energies_has_no_energy_columns(capsys, tmp_path):
    import pandas as pd

    code, _ = _run(capsys, _arch({}, mac=None), tmp_path, "--csv", str(tmp_path / "csv"), "-q")
    assert code == 0
    assert "energy" not in pd.read_csv(tmp_path / "csv" / "compute_report.csv").columns
    assert "energy" not in pd.read_csv(tmp_path / "csv" / "memory_report.csv").columns
    assert not (tmp_path / "csv" / "energy_report.csv").exists()


def test_the_text_lists_each_components_actions_together(capsys, tmp_path):
    # the rows come in access order (DRAM A read, abuf A write, ..., DRAM Z update, leak last);
    # the text groups them per component, in the order of "by component", read first
    code, out = _run(capsys, _arch(ENERGIES), tmp_path)
    assert code == 0
    section = out.split("  by component and action (pJ):\n")[1].splitlines()
    assert [" ".join(line.split()[:2]) for line in section] == [
        "DRAM read", "DRAM update", "DRAM leak", "abuf read", "abuf write",
        "acc read", "acc update", "pe_array mac",
    ]  # fmt: skip
