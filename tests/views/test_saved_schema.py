"""A saved run is validated by a versioned schema before anything is replayed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cyclesim.cli import main
from cyclesim.errors import SpecError
from cyclesim.views.saved import SCHEMA_VERSION, read_saved_run

WORKED = Path(__file__).resolve().parents[1] / "cases" / "worked" / "03_single_buffer"


@pytest.fixture
def saved(tmp_path, capsys) -> Path:
    path = tmp_path / "run.json"
    files = [str(WORKED / f"{p}.yaml") for p in ("arch", "workload", "mapping")]
    assert main(["run", *files, "--no-progress", "--save-run", str(path)]) == 0
    capsys.readouterr()
    return path


def test_a_saved_run_carries_its_schema_version_and_reads_back(saved):
    doc = read_saved_run(str(saved))
    assert doc["schema_version"] == SCHEMA_VERSION == 1 and doc["cycles"] == 52


def test_a_run_saved_before_schema_version_existed_still_reads(saved):
    doc = json.loads(saved.read_text())
    del doc["schema_version"]
    saved.write_text(json.dumps(doc, indent=1, sort_keys=True))
    assert read_saved_run(str(saved))["cycles"] == 52


@pytest.mark.parametrize(
    "change, says",
    [
        (lambda d: d.update(schema_version=2), "field 'schema_version': Input should be 1"),
        (
            lambda d: d.update(cycles=-5),
            "field 'cycles': Input should be greater than or equal to 0",
        ),
        (lambda d: d.update(cycles=52.5), "field 'cycles': Input should be a valid integer"),
        (lambda d: d.update(isolate_einsums="yes"), "field 'isolate_einsums'"),
        (lambda d: d["inputs"].pop("mapping"), "field 'inputs.mapping': Field required"),
        (lambda d: d.update(extra=1), "field 'extra': unknown field"),
    ],
)
def test_a_damaged_saved_run_gets_the_field_and_line(saved, change, says):
    doc = json.loads(saved.read_text())
    change(doc)
    saved.write_text(json.dumps(doc, indent=1, sort_keys=True))
    with pytest.raises(SpecError) as info:
        read_saved_run(str(saved))
    assert says in str(info.value) and str(info.value).startswith(f"{saved}:")


def test_explain_replays_a_saved_run(saved, capsys):
    assert main(["explain", str(saved), "-", "-", "--no-verify"]) == 0
    assert "why" in capsys.readouterr().out
