"""docs/glossary.md and docs/causes.md name every root cause a report can show, and DESIGN links
the glossary: a cause added to the code without a line for its reader fails here."""

from __future__ import annotations

import re
from pathlib import Path

from cyclesim.results.stall_span import CAUSES

DOCS = Path(__file__).resolve().parents[2] / "docs"


def named(page: str) -> set[str]:
    """Every `code` span of a page's table rows' first column, split at commas and slashes."""
    out = set()
    for line in (DOCS / page).read_text().splitlines():
        if line.startswith("| `"):
            first = line.split("|")[1]
            out |= set(re.findall(r"`([^`]+)`", first))
    return out


# the causes only `cyclesim chip` charges, between a core's steps (docs/multicore.md, "Causes";
# cyclesim/chip/attribution.py): they were missing from both pages
CHIP_CAUSES = ("link", "dram_port", "idle")


def test_the_glossary_and_the_causes_page_name_every_cause():
    for page in ("glossary.md", "causes.md"):
        missing = [c for c in (*CAUSES, *CHIP_CAUSES) if c not in named(page)]
        assert not missing, f"docs/{page} has no row for {missing}"


def test_design_links_the_glossary():
    assert "(glossary.md)" in (DOCS / "design.md").read_text()
