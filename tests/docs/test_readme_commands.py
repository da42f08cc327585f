"""Every command of README.md and of every examples/*/README.md runs as written in a clean clone.

The clone is `git clone` of this repository's HEAD into a temporary folder (what a newcomer
gets), with `.venv` pointing at the interpreter's environment running the tests, so
`.venv/bin/cyclesim` and a bare `cyclesim` are this checkout's. A command fails the test when
it exits with a code its text does not announce (readme_commands.py says how text announces).
Commands that take minutes are listed in SLOW with what the test does instead, and why.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from readme_commands import Command, commands_of

ROOT = Path(__file__).resolve().parents[2]
READMES = [ROOT / "README.md", *sorted((ROOT / "examples").glob("*/README.md"))]

# command substring -> (how the test runs it, why). "skip" runs nothing.
SLOW = {
    "make demo": ("skip", "builds .venv; the demo's script runs below as written in its README"),
    "make test": ("skip", "the whole suite: this test is part of it"),
    "make peers": ("skip", "builds the peers' environments (minutes of pip)"),
    "make bench": ("skip", "minutes of benchmarks, run by the lead"),
    "resnet18.csv": ("--no-peer", "SCALE-Sim itself takes ~4 minutes on the 21 layers"),
    "resnet50_conv2x.csv": ("--no-peer", "SCALE-Sim itself takes a minute on conv2_x"),
    "bench_dram.py": ("skip", "a benchmark: `make bench` runs it"),
    "rank accelforge": (
        "skip",
        "minutes of AccelForge's mapper (in its own environment, which a clean clone has "
        "not); tests/analysis/test_rank_accelforge.py runs the command (marked peer)",
    ),
    "eyeriss_memsize/sweep.yaml": (
        "skip",
        "2.5 minutes, mostly ZigZag's own mapping search at each of 14 points; "
        "tests/analysis/test_sweep.py runs sweeps",
    ),
}
# runs that take more than a few seconds even so: marked slow
SLOW_MARK = (
    "examples/eyeriss_memsize/run.py",
    "sweep",
    "explain",
    "check zigzag",
    "l1_placement/run.py",
    "cyclesim rank",
)


def _all_commands() -> list[Command]:
    return [command for readme in READMES for command in commands_of(readme, ROOT)]


def _param(command: Command):
    marks = [pytest.mark.slow] if any(s in command.text for s in SLOW_MARK) else []
    return pytest.param(command, id=command.source, marks=marks)


@pytest.fixture(scope="module")
def clean_clone(tmp_path_factory) -> Path:
    """A `git clone` of HEAD: only what is committed, nothing built."""
    clone = tmp_path_factory.mktemp("clone") / "cyclesim"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    (clone / ".venv").symlink_to(Path(sys.prefix))
    return clone


def test_every_readme_has_commands_to_try() -> None:
    # an example whose README shows no command cannot be tried as written
    for readme in READMES:
        assert commands_of(readme, ROOT), f"{readme.relative_to(ROOT)} shows no `sh` command"


@pytest.mark.parametrize("command", [_param(c) for c in _all_commands()])
def test_command_runs_as_written(command: Command, clean_clone: Path) -> None:
    text = command.text
    for needle, (how, why) in SLOW.items():
        if needle in text:
            if how == "skip":
                pytest.skip(f"{needle}: {why}")
            text = f"{text} {how}"
    env = dict(os.environ)
    env["PATH"] = f"{clean_clone / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(clean_clone)
    env["MPLBACKEND"] = "Agg"
    bash = shutil.which("bash") or "/bin/bash"
    done = subprocess.run(
        [bash, "-c", text],
        cwd=clean_clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == command.exit_code, (
        f"{command.source}: `{text}` exited {done.returncode} "
        f"(announced {command.exit_code})\n{done.stderr[-3000:]}"
    )


def test_the_first_report_the_readme_shows_is_what_the_command_prints(capsys, monkeypatch):
    # the README teaches by a real report: the block after the first run's command is its
    # output, all but the replay's wall time, which varies from run to run
    from cyclesim.cli import main

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## A first run") :]
    blocks = section.split("```")
    command, shown = blocks[1].removeprefix("sh\n").strip(), blocks[3].removeprefix("text\n")
    argv = command.split()[1:]  # after `cyclesim`
    monkeypatch.chdir(ROOT)
    assert main([*argv, "--no-progress"]) == 0
    printed = capsys.readouterr().out.splitlines()
    wall = "replayed in "
    assert [x for x in printed if not x.startswith(wall)] == [
        x for x in shown.strip("\n").splitlines() if not x.startswith(wall)
    ]
