"""Code of one language written inside a file of another: Python in a shell heredoc (`python - <<EOF`), in
`python -c '...'`, in a notebook cell. The inner front end checks the code alone; findings and fixes come back
at the offsets of the file the user edits.

An `Embedded` block is the code's characters with the file offset each one was read from (a shell word's quotes
and escapes are not part of the code, so the mapping is per character). A fix is kept only where every edited
character range is contiguous in the file and its new text needs no quoting where it lands (`'` inside a
single-quoted shell word would end the word); otherwise the finding stays, without a fix.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Sequence

from rlcompat.lang.scanned import ScannedView
from rlcompat.findings import Edit, Finding, Fix, Location
from rlcompat.lang.textpos import LineIndex


@dataclass
class Embedded:
    language: str  # "python" | "shell", or what a written file holds: "yaml", "json", "toml" (lang/written_files.py)
    chars: list[tuple[str, int]]  # the code's characters and their offsets in the file
    forbidden: str = ""  # characters a fix may not write here (they would end or change the enclosing quoting)
    escape: Callable[[str], str | None] | None = None  # how a fix's text is written here (a JSON string: json escapes)
    # How an edit of the code lands in the file where characters are not simply copied (an argument list's elements:
    # lang/argv.py); None: it cannot. Without it, the contiguous-range rule below applies.
    place: Callable[[Edit], Edit | None] | None = None
    # Why a fix found in this code is not offered where it cannot be placed ("" says nothing): appended to the
    # finding's message as `(no fix: ...)`, as a config rule's refused edit is.
    why_no_fix: str = ""

    @property
    def code(self) -> str:
        return "".join(c for c, _ in self.chars)

    def file_offset(self, i: int) -> int:
        """File offset of code offset i (i == len: just after the last character)."""
        if i < len(self.chars):
            return self.chars[i][1]
        return self.chars[-1][1] + 1 if self.chars else 0

    def contiguous(self, i: int, j: int) -> bool:
        return i >= j or self.chars[j - 1][1] - self.chars[i][1] == j - 1 - i


def map_findings(block: Embedded, findings: Sequence[Finding], index: LineIndex) -> list[Finding]:
    """Findings on `block.code` placed in the file (`index` is the file's): locations, fixes and source lines."""
    code_index = LineIndex(block.code)
    out = []
    for f in findings:
        loc = f.location
        start = block.file_offset(code_index.offset(loc.line, loc.column - 1))
        end = block.file_offset(code_index.offset(loc.end_line, loc.end_column - 1))
        line, col = index.position(start)
        end_line, end_col = index.position(max(start, end))
        fix = _map_fix(block, f.fix) if f.fix is not None else None
        message = f.message
        if f.fix is not None and fix is None and block.why_no_fix and "(no fix:" not in message:
            message = f"{message} (no fix: {block.why_no_fix})"
        out.append(replace(f, location=Location(line, col + 1, end_line, end_col + 1), fix=fix, message=message,
                           source_line=index.line_text(line)))
    return out


def _map_fix(block: Embedded, fix: Fix) -> Fix | None:
    edits = []
    code = block.code
    for e in fix.edits:
        e = _trimmed(code, e)
        if block.place is not None:
            placed = block.place(e)
            if placed is None:
                return None
            edits.append(placed)
            continue
        if not block.contiguous(e.start, e.end) or any(ch in block.forbidden for ch in e.content):
            return None
        start = block.file_offset(e.start)
        end = start if e.end == e.start else block.file_offset(e.end - 1) + 1
        content = block.escape(e.content) if block.escape else e.content
        if content is None:
            return None  # text this place cannot hold
        edits.append(Edit(start, end, content))
    return Fix(tuple(sorted(edits)), fix.safety, fix.description)


def _trimmed(code: str, e: Edit) -> Edit:
    """The edit without the characters it leaves as they are (`"bfloat16"` -> `"float32"` edits inside the quotes),
    so a fix whose changed part needs no quoting applies inside a quoted shell word."""
    old, new = code[e.start:e.end], e.content
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head and old[len(old) - 1 - tail] == new[len(new) - 1 - tail]:
        tail += 1
    return Edit(e.start + head, e.end - tail, new[head:len(new) - tail])


def check_python(block: Embedded, path: str, rules: Sequence, target, index: LineIndex,
                 scanned: ScannedView) -> list[Finding]:
    """Python rules over one embedded block; code that does not parse is left alone (the file is not Python)."""
    if not rules or not block.chars:
        return []
    code = block.code
    try:
        code.encode("utf-8")
    except UnicodeEncodeError:
        return []  # a lone surrogate (`\ud800` in a notebook's JSON): no Python parser reads it
    triggered = scanned.woken(rules, "python", code)
    if not triggered:
        return []
    from rlcompat.lang import python as py

    try:
        module = py.parse(code)
        found = py.check(module, code, path, triggered, target, scanned=scanned)  # a big block is parsed as walked
    except (py.PythonSyntaxError, RecursionError, MemoryError):
        return []
    return map_findings(block, found, index)


def split_rules(rules: Sequence, is_inner: Callable[[object], bool]) -> tuple[list, list]:
    inner = [r for r in rules if is_inner(r)]
    outer = [r for r in rules if not is_inner(r)]
    return outer, inner
