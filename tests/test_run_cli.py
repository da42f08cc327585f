"""`cyclesim run`: the readable report and the --json object."""

from __future__ import annotations

import json
from pathlib import Path

from replay_helpers import WORKED

from cyclesim.cli import main


def run_json(capsys, *extra) -> dict:
    case = WORKED / "03_single_buffer"
    code = main(
        [
            "run",
            str(case / "arch.yaml"),
            str(case / "workload.yaml"),
            str(case / "mapping.yaml"),
            "--json",
            "--no-progress",
            *extra,
        ]
    )
    assert code == 0
    return json.loads(capsys.readouterr().out)


def test_json_has_the_documented_keys(capsys):
    out = run_json(capsys)
    for key in (
        "cycles",
        "ideal_compute_cycles",
        "stall_cycles",
        "stalls",
        "accesses",
        "events",
        "wall_seconds",
    ):
        assert key in out
    assert (out["cycles"], out["ideal_compute_cycles"], out["stall_cycles"]) == (52, 16, 24)
    stall = next(s for s in out["stalls"] if s["phase"] == "compute")
    assert {k: stall[k] for k in ("cause", "memory", "tensor", "port", "competitor", "cycles")} == {
        "cause": "bandwidth",
        "memory": "abuf",
        "tensor": "A",
        "port": "dram_rd",
        "competitor": None,
        "cycles": 24,
    }
    row = next(a for a in out["accesses"] if a["tensor"] == "Z" and a["memory"] == "DRAM")
    assert row == {
        "einsum": "matvec",
        "tensor": "Z",
        "memory": "DRAM",
        "action": "write",
        "values": 4,
        "bits": 32,
    }


def test_strict_policy_is_reported(capsys):
    out = run_json(capsys, "--reuse", "strict")
    assert out["reuse"] == "strict" and out["isolate_einsums"] is False


def test_text_report_splits_cycles_and_ranks_causes(capsys):
    case = WORKED / "03_single_buffer"
    assert (
        main(
            [
                "run",
                str(case / "arch.yaml"),
                str(case / "workload.yaml"),
                str(case / "mapping.yaml"),
                "--no-progress",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "cycles                      52" in text
    assert "compute bandwidth             24" in text


def test_the_accesses_table_keeps_long_names_apart(capsys):
    # examples/resnet50_dram's Einsum is 'res2a_branch2c' (14 characters, the column was 12
    # wide): its rows read 'res2a_branch2cB' until each column was sized to its names
    root = Path(__file__).resolve().parents[1]
    example = root / "examples" / "resnet50_dram"
    files = [str(root / "hw_models" / "tpu_like.yaml")]
    files += [str(example / "workload.yaml"), str(example / "mapping.yaml")]
    assert main(["run", *files, "--no-progress"]) == 0
    out = capsys.readouterr().out
    rows = out.split("accesses (values / bits):\n")[1].split("\n\n")[0].splitlines()
    assert len(rows) == 11  # A, B and Z at their memories, as the report lists them
    for row in rows:
        einsum, tensor, memory, action, values, bits = row.split()
        assert einsum == "res2a_branch2c" and tensor in ("A", "B", "Z")
        assert action in ("read", "write") and int(bits.replace(",", "")) > 0
