"""Line/column <-> offset arithmetic over decoded text, with \\r\\n, \\r and \\n all ending a line (as Python's tokenizer does)."""

from __future__ import annotations

import bisect
import re

_NEWLINE = re.compile(r"\r\n|\r|\n")


class LineIndex:
    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]

    def offset(self, line: int, column0: int) -> int:
        """Offset of 1-based `line`, 0-based `column0`."""
        return self.starts[line - 1] + column0

    def position(self, offset: int) -> tuple[int, int]:
        """(1-based line, 0-based column) of an offset."""
        line = bisect.bisect_right(self.starts, offset) - 1
        return line + 1, offset - self.starts[line]

    def line_text(self, line: int) -> str:
        if line < 1 or line > len(self.starts):
            return ""
        start = self.starts[line - 1]
        end = self.starts[line] if line < len(self.starts) else len(self.text)
        return self.text[start:end].rstrip("\r\n")

    @property
    def line_count(self) -> int:
        return len(self.starts)


def lines_at(text: str):
    """(offset, line without its line end) of each line of `text`, split as `str.splitlines` splits, for readers that
    walk a file line by line and report spans in it."""
    pos = 0
    for raw in text.splitlines(keepends=True):
        yield pos, raw.rstrip("\r\n")
        pos += len(raw)
