"""The names `cyclesim.l1` exports are the functions and classes, whatever was imported first.

A submodule named like one of its functions (l1/replay.py holding `replay`) shadowed it: once
anything imported the submodule, `from cyclesim.l1 import replay` gave the module. Checked in
fresh interpreters, since this session has imported everything already.
"""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import cyclesim.l1

ROOT = Path(__file__).resolve().parents[2]
# every submodule, found rather than listed: a split that adds one (errors, events) is covered
SUBMODULES = sorted(m.name for m in pkgutil.iter_modules(cyclesim.l1.__path__))


@pytest.mark.parametrize("first", SUBMODULES)
def test_every_exported_name_is_not_a_module_after_any_submodule_import(first):
    code = (
        f"import types, cyclesim.l1.{first}\n"
        "import cyclesim.l1 as l1\n"
        "bad = [n for n in l1.__all__ if isinstance(getattr(l1, n), types.ModuleType)]\n"
        "assert not bad, bad\n"
        "from cyclesim.l1 import replay\n"
        "assert callable(replay) and not isinstance(replay, types.ModuleType)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "MPLBACKEND": "Agg"},
    )
    assert out.returncode == 0, out.stderr
