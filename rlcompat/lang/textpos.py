"""Line/column <-> offset arithmetic over decoded text, with \\r\\n, \\r and \\n all ending a line (as Python's tokenizer does);
and a view of a text that keeps every offset, for a front end that reads part of a file as another language."""

from __future__ import annotations

import bisect
import itertools
import re
from typing import Iterable

_NEWLINE = re.compile(r"\r\n|\r|\n")


def line_starts(text: str) -> list[int]:
    """The offset where each line of `text` starts (`\\r\\n`, `\\r` and `\\n` end a line), 0 first."""
    if "\r" in text:
        return [0, *(m.end() for m in _NEWLINE.finditer(text))]
    # most files: the same offsets from the lengths of the lines, without a match object a line (a 1.4 MB file's
    # index is built several times a scan)
    return list(itertools.accumulate(map((1).__add__, map(len, text.split("\n")[:-1])), initial=0))


class LineIndex:
    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = line_starts(text)

    def offset(self, line: int, column0: int) -> int:
        """Offset of 1-based `line`, 0-based `column0`."""
        return self.starts[line - 1] + column0

    def ast_offset(self, line: int, byte_column: int) -> int:
        """Offset of a position CPython's `ast` gives: 1-based `line`, a column counted in UTF-8 bytes."""
        text = self.line_text(line)
        return self.starts[line - 1] + (byte_column if text.isascii() else
                                        len(text.encode("utf-8")[:byte_column].decode("utf-8", "ignore")))

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


def blank_outside(text: str, keep: Iterable[tuple[int, int]], overwrite: Iterable[tuple[int, str]] = ()) -> str:
    """`text` with every character outside the `keep` spans made a space, line ends kept, and each `(offset, char)` of
    `overwrite` written over what is there: a view in which every offset, line and column is the file's (a Dockerfile's
    shell code, Markdown's shell blocks, a script's inline TOML)."""
    mask = bytearray(len(text))
    for a, b in keep:
        mask[a:b] = b"\x01" * (b - a)
    chars = [ch if mask[i] or ch in "\r\n" else " " for i, ch in enumerate(text)]
    for i, ch in overwrite:
        chars[i] = ch
    return "".join(chars)
