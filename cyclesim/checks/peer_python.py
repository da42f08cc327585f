"""Where a peer's own interpreter is: the peers whose pins clash with ours (AccelForge, Stream)
run as subprocesses in environments `make peers` builds beside the repository."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cyclesim.errors import PeerUnavailable

REPO_ROOT = Path(__file__).resolve().parents[2]


def peer_python(peer: str, variable: str, environment: str, missing: str) -> Path:
    """The interpreter named by $variable, else `<repo>/<environment>/bin/python`.

    Raise PeerUnavailable if $variable names nothing, or (unset) the environment is not built,
    saying how to get one; `missing` says what the peer needs.
    """
    configured = os.environ.get(variable)
    if configured:
        path = Path(configured)
        if not path.exists():
            raise PeerUnavailable(f"{variable}={configured} does not exist")
        return path
    default = REPO_ROOT / environment / "bin" / "python"
    if default.exists():
        return default
    raise PeerUnavailable(f"no {peer} environment: set {variable} or run `make peers` ({missing})")


def environment_stamp(python: Path) -> list[str]:
    """What identifies a peer's environment in a cache key: its interpreter and its
    site-packages folders' modification times (pip install changes them)."""
    stamp = [str(python), str(_mtime(python.resolve()))]
    return stamp + [str(_mtime(p)) for p in python.parent.parent.glob("lib/python3*/site-packages")]


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return -1.0


def cache_folder(name: str) -> Path:
    """The folder under the user's cache (XDG_CACHE_HOME, else ~/.cache) where a peer's slow
    results are kept by content hash."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "cyclesim" / name


def run_runner(
    python: Path,
    runner: Path,
    arguments: list[str],
    *,
    peer: str,
    package: str,
    timeout_seconds: float,
    rejected: Callable[[str], Exception],
    **watch: Any,
) -> dict[str, Any]:
    """Run a peer's runner script with its interpreter in a scratch folder (the peer may write
    its outputs there) and return the JSON object of its last line of output.

    Raise PeerUnavailable when it cannot start, runs out of time, prints no JSON or cannot
    import `package`; rejected("type: message") when the peer refused the inputs. `watch`
    goes to outputs.run_peer (a heartbeat while a slow peer runs).
    """
    import json
    import subprocess
    import tempfile

    from cyclesim.outputs import run_peer

    command = [str(python), "-I", "-B", str(runner), *arguments]
    with tempfile.TemporaryDirectory(prefix=f"cyclesim-{package}-") as workdir:
        try:
            completed = run_peer(command, cwd=workdir, text=True, timeout=timeout_seconds, **watch)
        except subprocess.TimeoutExpired:
            raise PeerUnavailable(f"{peer} did not finish within {timeout_seconds:g} s") from None
        except OSError as error:
            raise PeerUnavailable(f"cannot start {python}: {error.strerror}") from None
    try:
        payload = json.loads(completed.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        said = completed.stderr.strip()[-800:] or completed.stdout.strip()[-800:] or "no output"
        raise PeerUnavailable(
            f"the {peer} runner printed no JSON (exit {completed.returncode}): {said}"
        ) from None
    if "error" in payload:
        error = payload["error"]
        if error.get("type") in ("ModuleNotFoundError", "ImportError"):
            raise PeerUnavailable(f"{package} is not importable: {error.get('message')}")
        raise rejected(f"{error.get('type')}: {error.get('message')}")
    return payload
