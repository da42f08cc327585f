"""The cache of `cyclesim rank`: searches and replays as JSON files named by content hash.

The key of a task hashes its parts (input files' bytes, layer, candidate loops), zigzag-dse's
version and cyclesim's source except the rank modules themselves (analysis/rank*.py) and the
hardware variants' writer, so that a change in how rows are ranked, printed or plotted keeps
hours of replays; ROW_VERSION is bumped when what a cached row holds changes.
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import cache
from pathlib import Path


@cache
def file_digest(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@cache
def _zigzag_version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("zigzag-dse")
    except importlib.metadata.PackageNotFoundError:
        return "none"


# bump when a cached row's content changes (replay_candidate, search_layer): the rank modules
# themselves are left out of the source hash so that a change in how rows are ranked, printed
# or plotted keeps hours of replays
ROW_VERSION = 2


@cache
def simulator_fingerprint() -> str:
    """A hash of cyclesim's source except the rank modules (analysis/rank*.py) and the
    hardware variants' writer (whose output files are hashed themselves)."""
    import cyclesim

    root = Path(cyclesim.__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        if path.parent.name == "analysis" and path.name.startswith("rank"):
            continue
        if path.parent.name == "zigzag" and path.name == "variants.py":  # writes the inputs
            continue
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def content_key(*parts: object) -> str:
    """The cache key of a task: its parts, the simulator's source, zigzag-dse's version, hashed."""
    text = json.dumps(
        [ROW_VERSION, simulator_fingerprint(), _zigzag_version(), *parts],
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "cyclesim" / "rank"


class ResultCache:
    """JSON files named by content hash; a failed write (read-only home) only costs a rerun."""

    def __init__(self, folder: Path | None):
        self.folder = folder

    def get(self, key: str) -> dict | None:
        if self.folder is None:
            return None
        try:
            return json.loads((self.folder / f"{key}.json").read_text())
        except (OSError, ValueError):
            return None

    def put(self, key: str, value: dict) -> None:
        if self.folder is None:
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp = self.folder / f".{key}.{os.getpid()}.tmp"
            tmp.write_text(json.dumps(value))
            tmp.replace(self.folder / f"{key}.json")
        except OSError:
            pass
