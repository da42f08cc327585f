"""A case folder (arch.yaml, workload.yaml, mapping.yaml, and differences.txt whose first line
names the reuse policy) compared reference against replay: for recorded differences."""

from __future__ import annotations

from pathlib import Path

from cyclesim.spec import load_architecture, load_mapping, load_workload

from .compare import compare


def reuse_of(folder: Path) -> str:
    notes = folder / "differences.txt"
    if notes.exists():
        first = notes.read_text(encoding="utf-8").splitlines()[0]
        if first.startswith("reuse:"):
            return first.split()[1]
    return "retain"


def compare_folder(folder: str | Path) -> list[str]:
    folder = Path(folder)
    a = load_architecture(str(folder / "arch.yaml"))
    w = load_workload(str(folder / "workload.yaml"))
    m = load_mapping(str(folder / "mapping.yaml"), a, w)
    return compare(a, w, m, reuse_of(folder))


def show(folder: str | Path) -> None:
    print("\n".join(compare_folder(folder)) or "no difference")
