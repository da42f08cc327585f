"""Each class of bad input gives its exit code and one message naming the file."""

from __future__ import annotations

import pytest
from bad_inputs import CASES, run_case


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


def test_a_spec_cannot_run_code(tmp_path):
    # the Jinja payload of the issue would create PWNED in the working directory
    case = next(c for c in CASES if c.kind == "code execution")
    run_case(case, tmp_path)
    assert not (tmp_path / "PWNED").exists()
