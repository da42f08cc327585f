"""The commands a README shows, read the way a reader reads them.

A fenced block tagged `sh` holds commands, one a line (`\\` continues a line, `#` starts a
comment); a block tagged `console` holds a session, commands after `$ `, their output below.
Untagged and `text` blocks are output or synopses (`cyclesim run ARCH ...`) and are not run.
A command's comment announces a nonzero exit as `exits N`; in a session, a following
`$ echo $?` and its number announce it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

FENCE = re.compile(r"^```(\w*)\s*$")
ANNOUNCED_EXIT = re.compile(r"#.*\bexits? (\d+)")


@dataclass(frozen=True)
class Command:
    """One command as written, where it is written, and the exit code its text announces."""

    source: str  # README path relative to the repository, and line
    text: str
    exit_code: int


def _strip_comment(line: str) -> str:
    """The command without a trailing `# comment` (a `#` inside quotes is kept)."""
    quote = None
    for i, ch in enumerate(line):
        if ch in "'\"" and quote in (None, ch):
            quote = None if quote else ch
        elif ch == "#" and quote is None and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def commands_of(readme: Path, root: Path) -> list[Command]:
    """Every command of the README's `sh` and `console` blocks, in order."""
    lines = readme.read_text(encoding="utf-8").splitlines()
    out: list[Command] = []
    kind = None  # the tag of the block we are in, None outside a block
    pending = ""  # a command continued with a backslash
    start = 0
    for number, line in enumerate(lines, 1):
        fence = FENCE.match(line)
        if fence:
            kind = None if kind is not None else fence.group(1) or "text"
            continue
        if kind == "sh" or (kind == "console" and (line.startswith("$ ") or pending)):
            body = line[2:] if kind == "console" and not pending else line
            if not pending:
                start = number
            announced = ANNOUNCED_EXIT.search(body)
            body = _strip_comment(body)
            if body.endswith("\\"):
                pending += body[:-1] + " "
                continue
            text = (pending + body).strip()
            pending = ""
            if not text:
                continue
            if text == "echo $?" and out:  # the session shows the previous command's exit code
                code = int(lines[number].strip())
                out[-1] = Command(out[-1].source, out[-1].text, code)
                continue
            where = f"{readme.relative_to(root)}:{start}"
            out.append(Command(where, text, int(announced.group(1)) if announced else 0))
    return out
