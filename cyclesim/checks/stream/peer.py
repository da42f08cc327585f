"""Run the real Stream (stream-dse 2.1.1, its own Python 3.12 environment) as a subprocess.

The interpreter is `$CYCLESIM_STREAM_PYTHON`, else `<repo>/.venv-stream/bin/python` (built by
`make peers`). Results are cached on disk by content hash (interpreter and its site-packages,
the runner, the bytes of the accelerator, its core files, the workload and the mapping): its
ZigZag searches take 10-100 s per case and give the same answer every time.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import tempfile
from pathlib import Path
from typing import Any

from cyclesim.checks.peer_python import cache_folder, environment_stamp, peer_python, run_runner
from cyclesim.checks.stream.read import read_accelerator
from cyclesim.checks.stream.schedule import StreamRun, parse_run
from cyclesim.errors import CyclesimError, PeerUnavailable
from cyclesim.outputs import run_peer, write_atomically

ENVIRONMENT_VARIABLE = "CYCLESIM_STREAM_PYTHON"
RUNNER = Path(__file__).with_name("peer_runner.py")
DEFAULT_TIMEOUT_SECONDS = 900.0
HEARTBEAT_SECONDS = 30.0  # a line saying Stream still runs (uncached runs take 20-70 s)

log = logging.getLogger("cyclesim")


class StreamRejected(CyclesimError):
    """Stream ran but refused the inputs (e.g. a tile that does not divide); has its message."""


def stream_python() -> Path:
    """Stream's interpreter. Raise PeerUnavailable saying how to get one if there is none."""
    return peer_python(
        "Stream",
        ENVIRONMENT_VARIABLE,
        ".venv-stream",
        "stream-dse 2.1.1 needs Python >= 3.12 in its own environment, .venv-stream",
    )


def stream_package() -> Path:
    """The installed `stream` package folder (shipped hardware and workload builders)."""
    environment = stream_python().parent.parent
    for folder in sorted(environment.glob("lib/python3*/site-packages/stream")):
        if (folder / "inputs" / "examples" / "hardware").is_dir():
            return folder
    raise PeerUnavailable(f"stream-dse's shipped inputs are not installed under {environment}")


def run_stream(
    accelerator: str | Path,
    workload: str | Path,
    mapping: str | Path | None = None,
    *,
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    use_cache: bool = True,
) -> StreamRun:
    """Solve the mapping with the real Stream and return its schedule.

    Raise PeerUnavailable if Stream cannot be run, StreamRejected if it refuses the inputs.
    """
    python = stream_python()
    files = [Path(accelerator).resolve(), Path(workload).resolve()]
    if mapping is not None:
        files.append(Path(mapping).resolve())
    cores = sorted({Path(c.file).resolve() for c in read_accelerator(accelerator).cores})
    key = _key(python, files + cores, mapping is not None)
    cached = cache_folder("stream-runs") / f"{key}.json"
    if use_cache:
        try:
            return parse_run(json.loads(cached.read_text()), cached=True)
        except (OSError, ValueError, KeyError):
            pass
    arguments = [str(files[0]), str(files[1])] + (["--mapping", str(files[2])] if mapping else [])
    log.warning("running Stream 2.1.1 on %s (its own process; cached after)", Path(workload).name)
    payload = _run_runner(python, arguments, timeout_seconds)
    run = parse_run(payload)
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(cached, json.dumps(payload))  # never a half-written cache entry
    except OSError:
        pass  # a read-only home: no disk cache, the answer is still right
    return run


def _key(python: Path, files: list[Path], has_mapping: bool) -> str:
    digest = hashlib.sha256()
    for part in (*environment_stamp(python), str(has_mapping), RUNNER.read_text()):
        digest.update(part.encode() + b"\0")
    for file in files:
        digest.update(file.read_bytes() + b"\0")
    return digest.hexdigest()


def _run_runner(python: Path, arguments: list[str], timeout_seconds: float) -> dict[str, Any]:
    """Run peer_runner.py in a scratch folder (Stream writes its outputs there); its JSON, or raise."""
    return run_runner(
        python,
        RUNNER,
        arguments,
        peer="Stream",
        package="stream-dse",
        timeout_seconds=timeout_seconds,
        rejected=lambda why: StreamRejected(f"Stream refused the inputs: {why}"),
        heartbeat=lambda s: log.warning("Stream still running (%.0f s)", s),
        every=HEARTBEAT_SECONDS,
    )


def build_two_conv(
    destination: str | Path,
    *,
    batch: int = 1,
    height: int = 32,
    width: int = 32,
    in_channels: int = 8,
    out_channels_1: int = 16,
    out_channels_2: int = 32,
    kernel: int = 3,
    dtype: str = "bf16",
) -> Path:
    """Write Stream's two-conv test workload (its wheel's `make_2_conv.py`, run on a copy in a
    scratch folder since it writes next to itself) to `destination`. Returns the ONNX path."""
    python = stream_python()
    builder = stream_package() / "inputs" / "testing" / "workload" / "make_2_conv.py"
    with tempfile.TemporaryDirectory(prefix="cyclesim-stream-") as workdir:
        shutil.copy(builder, workdir)
        config = (
            f"TwoConvWorkloadConfig({batch}, {height}, {width}, {in_channels}, {out_channels_1}, "
            f"{out_channels_2}, {kernel}, {dtype!r}, {dtype!r})"
        )
        code = f"from make_2_conv import *; print(make_2_conv_workload({config}))"
        completed = run_peer([str(python), "-c", code], cwd=workdir, text=True, timeout=300)
        if completed.returncode != 0:
            raise PeerUnavailable(
                f"Stream's make_2_conv.py failed: {completed.stderr.strip()[-500:]}"
            )
        built = Path(completed.stdout.strip().splitlines()[-1])
        Path(destination).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(built, destination)
    return Path(destination)
