"""A fault in an AccelForge field names that field's own line, not the line its node starts on.

Each case edits a shipped spec, runs `cyclesim check accelforge` as a user does (default
options) and expects exit 2 and one line on stderr: `file:line: field 'path': message`, where
the line is the one holding the edited field (found in the edited text, so the expectation is
derived from the file, not copied from the output).
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cyclesim.cli import main

SPECS = Path(__file__).with_name("accelforge_specs")
ROOT = Path(__file__).resolve().parents[2]
MATMUL = SPECS / "matmul_3level.yaml"
SPATIAL = SPECS / "matmul_spatial_4x4.yaml"

# (case, spec, text to replace, replacement, the bad field, the text on the bad line, message)
CASES = [
    (
        "a scalar field of a !Memory node",
        MATMUL,
        "    size: 16384                 # bits\n",
        "    size: -5\n",
        "arch.nodes[1](GLB).size",
        "size: -5",
        "a memory size must be positive",
    ),
    (
        "an ignored field out of range",
        MATMUL,
        "    size: 16384                 # bits\n    leak_power: 0\n",
        "    size: 16384                 # bits\n    leak_power: -1\n",
        "arch.nodes[1](GLB).leak_power",
        "leak_power: -1",
        "leak_power must be a finite number >= 0",
    ),
    (
        "an unknown key",
        MATMUL,
        "    size: 64\n",
        "    size: 64\n    sise: 32\n",
        "arch.nodes[2](Reg).sise",
        "sise: 32",
        "unknown or unsupported field 'sise' of !Memory",
    ),
    (
        "an action's energy, written as a block mapping",
        MATMUL,
        "    - {name: read, energy: 5, throughput: 256}\n",
        "    - name: read\n      energy: abc\n      throughput: 256\n",
        "arch.nodes[1](GLB).actions[0].energy",
        "energy: abc",
        "unknown name 'abc' in a numeric expression",
    ),
    (
        "a set expression, evaluated after reading",
        MATMUL,
        "    area: 0\n    tensors: {keep: Nothing, may_keep: All}\n    actions:\n"
        "    - {name: read, energy: 5",
        "    area: 0\n    tensors:\n      may_keep: All\n      keep: Weights\n    actions:\n"
        "    - {name: read, energy: 5",
        "arch.nodes(GLB).tensors.keep",
        "keep: Weights",
        "unknown name 'Weights' in a set expression",
    ),
    (
        "a spatial fan-out",
        SPATIAL,
        "    - {name: Y, fanout: 4}\n",
        "    - name: Y\n      fanout: -3\n",
        "arch.nodes[2].spatial[1].fanout",
        "fanout: -3",
        "a fan-out must be a positive integer",
    ),
    (
        "a negative action energy",
        MATMUL,
        "    - {name: read, energy: 5, throughput: 256}\n",
        "    - {name: read, energy: -5, throughput: 256}\n",
        "arch.nodes[1](GLB).actions[0].energy",
        "energy: -5",
        "energy must be a finite number >= 0",
    ),
    (
        # 0 bits per action times an unbounded throughput was NaN bits per cycle: a traceback
        "an action moving no bits",
        MATMUL,
        "    - {name: read, energy: 1, throughput: inf}\n",
        "    - {name: read, energy: 1, throughput: inf, bits_per_action: 0}\n",
        "arch.nodes[2](Reg).actions[0].bits_per_action",
        "bits_per_action: 0",
        "bits_per_action must be a finite number > 0",
    ),
    (
        "a compute throughput of 0",
        MATMUL,
        "    - {name: compute, energy: 1, throughput: 1}\n",
        "    - {name: compute, energy: 1, throughput: 0}\n",
        "arch.nodes[3](MAC).actions[0].throughput",
        "throughput: 0",
        "throughput must be a number > 0 or inf",
    ),
    (
        "a bound of the iteration space",
        MATMUL,
        "    k: 0 <= k < 64\n",
        "    k: 0 <= k < K\n",
        "workload.iteration_space_shape.k",
        "k: 0 <= k < K",
        "unknown name 'K' in a numeric expression",
    ),
    (
        "a mapping node's tile shape",
        MATMUL,
        "  - !Temporal {rank_variable: k, tile_shape: 16}\n",
        "  - !Temporal\n    rank_variable: k\n    tile_shape: sixteen\n",
        "mapping.nodes[4].tile_shape",
        "tile_shape: sixteen",
        "unknown name 'sixteen' in a numeric expression",
    ),
]


def _bad_spec(tmp_path: Path, spec: Path, old: str, new: str, marker: str) -> tuple[Path, int]:
    """The edited spec and the line that holds `marker` (which the node does not start on)."""
    text = spec.read_text()
    assert text.count(old) == 1, old
    text = text.replace(old, new)
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    lines = [i for i, line in enumerate(text.splitlines(), 1) if marker in line]
    assert len(lines) == 1, marker
    return path, lines[0]


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    ("case", "spec", "old", "new", "field", "marker", "message"), CASES, ids=[c[0] for c in CASES]
)
def test_a_bad_field_is_named_with_its_own_line(
    tmp_path, monkeypatch, case, spec, old, new, field, marker, message
):
    monkeypatch.chdir(tmp_path)
    path, line = _bad_spec(tmp_path, spec, old, new, marker)
    code, _, err = _run(["check", "accelforge", str(path)])
    assert code == 2, err
    assert "Traceback" not in err
    assert err.count("\n") == 1, err
    assert f"{path}:{line}: field '{field}': {message}" in err


def test_the_command_line_names_the_field_line(tmp_path):
    # the same through `python -m cyclesim`, as a user types it
    case = CASES[3]
    path, line = _bad_spec(tmp_path, case[1], case[2], case[3], case[5])
    done = subprocess.run(
        [sys.executable, "-m", "cyclesim", "check", "accelforge", str(path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    (message,) = done.stderr.strip().splitlines()
    assert message.startswith(f"cyclesim check accelforge: {path}:{line}: field '{case[4]}': ")
    assert case[6] in message
