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
