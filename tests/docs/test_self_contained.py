"""The repository stands alone: no tracked file names a path outside it or an internal issue.

A clone on another machine has no `../shared/`, no `/work/...` of the machine it was written
on, and no tracker the numbers of "issue 16" point into; a reader meets such a citation as a
dead end. A peer's own public issues ("ZigZag issue #52", "tt-metal#10325") are fine.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# a path outside the repository: up into a sibling folder, or an absolute path of one machine
OUTSIDE_PATH = re.compile(
    r"\.\./shared|(?<![\w.])/(?:work|home|Users|root)/\w"
    r"|(?<![\w/])shared/(?:cases|reference|DESIGN|STYLE)"
    # the steering folder's documents, cited as if they were here (ours live under docs/)
    r"|(?<![\w/.-])(?:reference/[a-z_]+\.md|DESIGN\.md|STYLE\.md)"
)
# "issue 16", "Issue 6 asks": our own tracker's numbers; a peer's public issue is written
# with its "#" ("ZigZag issue #52", "tt-metal#10325")
INTERNAL_ISSUE = re.compile(r"(?<![\w-])[Ii]ssues? \d+")


def tracked_text_files() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    files = []
    for name in out.split("\0"):
        path = ROOT / name
        if not name or not path.is_file():
            continue
        head = path.read_bytes()[:8192]
        if b"\0" in head:  # binary (PNG, parquet)
            continue
        files.append(path)
    return files


def offending_lines(pattern: re.Pattern[str]) -> list[str]:
    found = []
    for path in tracked_text_files():
        if path == Path(__file__).resolve():  # it quotes what it looks for
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            if pattern.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:120]}")
    return found


def test_the_patterns_catch_what_they_are_for() -> None:
    # each line below is one a clone could not follow
    for bad in (
        "cyclesim check accelforge ../shared/cases/accelforge_persist/seed_fused_n1.yaml",
        "`/work/shared/cases/accelforge_persist/` (arch + workload)",
        "(Normative text: `../shared/DESIGN.md`.)",
        "# reference/zigzag.md §6.1 and shared/cases/zigzag_memsize/tm_large_setting.json.",
        "translated from shared/cases/worked_examples/01_compute_bound.json",
    ):
        assert OUTSIDE_PATH.search(bad), bad
    for bad in ("Issue 6 asks an empirical question", "(issue 16)", "issues 9 and 14"):
        assert INTERNAL_ISSUE.search(bad), bad
    for fine in (
        "docs/reference/zigzag.md §6.3",
        "docs/design.md",
        "ZigZag issue #52",
        "issue #125 (2026-03-29, GEMM",
        "tt-metal#10325",
        "examples/accelforge_persist/seed_fused_n1.yaml",
        "the issue layout",
    ):
        assert not OUTSIDE_PATH.search(fine) and not INTERNAL_ISSUE.search(fine), fine


def test_no_tracked_file_names_a_path_outside_the_repository() -> None:
    assert offending_lines(OUTSIDE_PATH) == []


def test_no_tracked_file_cites_an_internal_issue_number() -> None:
    assert offending_lines(INTERNAL_ISSUE) == []


def test_error_messages_point_at_pages_that_exist():
    """A file that is not a mapping of fields names where its fields are described: that page
    and heading must be in the repository (they once pointed at README sections that moved)."""
    from cyclesim.spec.field_errors import DOCUMENTED_IN

    for what, where in DOCUMENTED_IN.items():
        page, _, heading = where.partition(": ")
        path = ROOT / page
        assert path.is_file(), f"{what}: {page} is not in the repository"
        headings = [line.lstrip("#").strip() for line in path.read_text().splitlines()
                    if line.startswith("#")]  # fmt: skip
        assert any(h.startswith(heading.strip("'")) for h in headings), (
            f"{what}: {page} has no heading {heading}"
        )
