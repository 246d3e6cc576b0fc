"""pip requirement files (requirements*.txt, constraints*.txt): one group per file.

Lines are what pip reads: `\\` continues a line, `#` after a blank starts a comment, option lines (`--index-url`,
`--extra-index-url`, `-f`, `-r`, `-c`) and one requirement per line. Nothing is resolved or downloaded; `-r` files
are checked on their own when they are scanned.
"""

from __future__ import annotations

import re
from typing import Sequence

from rlcompat.lang.scanned import ScannedView
from rlcompat.lang.declared import Declared, pip_arguments, requirement_at, run
from rlcompat.lang.settings import Span
from rlcompat.findings import Finding


class RequirementsError(Exception):
    """Never raised: pip's format has no syntax a line-based reader could refuse."""


PARSE_ERRORS = (RequirementsError,)
COMMENT = re.compile(r"(^|\s)#.*$")
WORD = re.compile(r"\S+")


def syntax_error_location(exc: Exception) -> tuple[int, int, str]:
    return 1, 1, str(exc)


def parse(text: str) -> Declared:
    group = Declared("requirements", anchor=Span(0, 0))
    for start, line in logical_lines(text):
        body = COMMENT.sub("", line).rstrip()
        stripped = body.lstrip()
        if not stripped:
            continue
        offset = start + len(body) - len(stripped)
        if stripped.startswith("-"):
            words = [(m.group(0), Span(offset + m.start(), offset + m.end())) for m in WORD.finditer(stripped)]
            pip_arguments(words, group)
            continue
        # A requirement may carry per-requirement options (`--hash=...`) after it.
        requirement = re.split(r"\s+--?[A-Za-z]", stripped, maxsplit=1)[0].rstrip()
        req = requirement_at(requirement, offset)
        if req is not None:
            group.requirements.append(req)
    return group


def logical_lines(text: str) -> list[tuple[int, str]]:
    """(offset, text) of each logical line; a `\\` at a line's end joins the next one (blanked, offsets kept)."""
    out: list[tuple[int, str]] = []
    pos, pending_start, pending = 0, None, ""
    for raw in text.splitlines(keepends=True):
        line = raw.rstrip("\r\n")
        if pending_start is None:
            pending_start, pending = pos, ""
        if line.endswith("\\"):
            pending += line[:-1] + " " + " " * (len(raw) - len(line))
        else:
            pending += line
            out.append((pending_start, pending))
            pending_start = None
        pos += len(raw)
    if pending_start is not None:
        out.append((pending_start, pending))
    return out


def check(group: Declared, text: str, path: str, rules: Sequence, target, *,
          scanned: ScannedView) -> list[Finding]:
    return run([group], text, path, rules, target, scanned)
