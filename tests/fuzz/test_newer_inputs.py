"""Each bad input of issue 29 (sweep, check scalesim, dram) gives its exit code and one line."""

from __future__ import annotations

import pytest
from newer_inputs import CASES, run_case

PASSWD_WORDS = ("root:x:0", "/bin/bash", "nologin")


@pytest.mark.parametrize("case", CASES, ids=[c.what for c in CASES])
def test_bad_input_gets_one_clear_message(case, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_case(case, tmp_path)
    assert code == case.code, err
    assert "Traceback" not in err, err
    if code == 2:  # bad input: one line on stderr
        assert err.count("\n") == 1, err
    for text in case.says:
        assert text in out + err, err
    for word in PASSWD_WORDS:  # a file of another kind is never quoted
        assert word not in out + err, err


def test_a_sweep_never_writes_a_foreign_file_into_its_table(tmp_path, monkeypatch):
    # issue 29: `dram: {config: ../../etc/passwd}` put the passwd line into sweep.csv
    from bad_inputs import WORKED

    from cyclesim.cli import main

    monkeypatch.chdir(tmp_path)
    arch = (WORKED / "arch.yaml").read_text()
    arch = arch.replace("name: 03_single_buffer", "name: 03_single_buffer\nclock_mhz: 1000", 1)
    arch = arch.replace(
        "  tensors: [A, Z]\n", "  tensors: [A, Z]\n  dram: {config: DDR4_8Gb_x8_2400}\n", 1
    )
    (tmp_path / "arch.yaml").write_text(arch)
    (tmp_path / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    (tmp_path / "s.yaml").write_text(
        f"architecture: arch.yaml\nworkload: {WORKED / 'workload.yaml'}\n"
        f"mapping: {WORKED / 'mapping.yaml'}\naxes:\n"
        "  - field: architecture.memories.DRAM.dram.config\n"
        "    values: [DDR4_8Gb_x8_2400, passwd]\n"
    )
    assert main(["sweep", "s.yaml", "--out", "out", "--workers", "1", "--no-progress"]) == 0
    table = (tmp_path / "out" / "sweep.csv").read_text()
    assert "not a DRAMsim3 .ini" in table and "passwd:1" in table
    for word in PASSWD_WORDS:
        assert word not in table
