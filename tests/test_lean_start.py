"""A lean start: the parser and a plain replay load neither pandas nor the plotting stack.

Checked in a fresh interpreter (a subprocess), because this test session has imported them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKED = ROOT / "tests" / "cases" / "worked" / "01_compute_bound"
HEAVY = ("pandas", "numpy", "matplotlib", "vcd", "tqdm", "pyarrow")


def _modules_after(code: str) -> set[str]:
    """Top-level packages imported by running code in a fresh interpreter."""
    probe = (
        code
        + "\nimport json, sys\nprint(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        check=True,
    )
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_parser_imports_no_heavy_package():
    loaded = _modules_after("import cyclesim.cli as c\nc.build_parser()")
    assert not loaded & set(HEAVY), loaded & set(HEAVY)
    # nor the engine, the YAML loader or pydantic: --help needs none of them
    assert not loaded & {"simpy", "pydantic", "yaml"}, loaded & {"simpy", "pydantic", "yaml"}


def test_version_imports_no_heavy_package():
    # found: naming the FST writer imported views/fst.py (numpy, the results): 0.13 -> 0.49 s
    code = (
        "import contextlib, io\nfrom cyclesim.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    main(['--version'])"
    )
    loaded = _modules_after(code)
    assert not loaded & set(HEAVY), loaded & set(HEAVY)


def test_help_runs_and_lists_the_commands():
    out = subprocess.run(
        [sys.executable, "-m", "cyclesim", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0
    for command in ("run", "explain", "check", "l1"):
        assert command in out.stdout


def test_report_and_json_of_a_replay_import_no_heavy_package():
    # the default path of `cyclesim run` (progress bar allowed), text report and --json
    files = [str(WORKED / f) for f in ("arch.yaml", "workload.yaml", "mapping.yaml")]
    for extra in ([], ["--json"]):
        argv = ["run", *files, *extra]
        code = (
            "import contextlib, io\nfrom cyclesim.cli import main\n"
            f"with contextlib.redirect_stdout(io.StringIO()):\n    assert main({argv!r}) == 0"
        )
        loaded = _modules_after(code)
        assert not loaded & set(HEAVY), (extra, loaded & set(HEAVY))


def test_l1_policy_choices_match_the_policy_enum():
    from cyclesim.l1.cli import POLICIES
    from cyclesim.l1.config import Policy

    assert POLICIES == tuple(p.value for p in Policy)
