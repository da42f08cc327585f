"""Where a peer's own interpreter is: the peers whose pins clash with ours (AccelForge, Stream)
run as subprocesses in environments `make peers` builds beside the repository."""

from __future__ import annotations

import os
from pathlib import Path

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
