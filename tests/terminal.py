"""Run the CLI as a user does at a terminal (imported by tests by name)."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import tempfile
import termios
from pathlib import Path

from replay_helpers import ROOT


def on_a_terminal(*args: str, cwd: Path = ROOT, columns: int = 120) -> tuple[int, str, str]:
    """`python -m cyclesim ARGS` with stderr on a pseudo-terminal `columns` wide (tqdm draws
    nothing on a terminal of width 0, a new pty's): (exit code, stdout, stderr)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS=str(columns))
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    cmd = [sys.executable, "-m", "cyclesim", *args]
    with tempfile.TemporaryFile() as out:  # a file, not a pipe: stdout never fills and blocks
        p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=follower)
        os.close(follower)
        err = b""
        while True:  # drain the terminal so the bar never blocks the run
            ready, _, _ = select.select([leader], [], [], 1.0)
            if ready:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:  # EIO: the child closed its end
                    break
                if not chunk:
                    break
                err += chunk
            elif p.poll() is not None:
                break
        code = p.wait(timeout=300)
        os.close(leader)
        out.seek(0)
        return code, out.read().decode(), err.decode(errors="replace")
