"""Offsets into a document's text <-> LSP positions.

An LSP position is a 0-based line and a character offset counted in the code units of the negotiated position
encoding: UTF-16 unless client and server agreed on another (LSP 3.17, "Position" and "PositionEncodingKind":
https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#position). Lines end at
\\n, \\r\\n or \\r, as the specification says and as `textpos.LineIndex` splits them. rlcompat counts in characters
(code points), so a line holding an emoji (two UTF-16 units) or an accented letter (two UTF-8 bytes) shifts every
column after it.

No pygls here: the arithmetic is tested on its own.
"""

from __future__ import annotations

from rlcompat.lang.textpos import LineIndex

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"


def units(chars: str, encoding: str = UTF16) -> int:
    """How many code units of `encoding` spell `chars`."""
    if encoding == UTF32:
        return len(chars)
    if encoding == UTF8:
        return len(chars.encode("utf-8", "surrogatepass"))
    return len(chars) + sum(1 for c in chars if ord(c) > 0xFFFF)


class PositionMap:
    def __init__(self, text: str, encoding: str = UTF16) -> None:
        self.text = text
        self.encoding = encoding
        self.lines = LineIndex(text)

    def position(self, offset: int) -> tuple[int, int]:
        """(0-based line, character in code units) of a character offset."""
        offset = max(0, min(offset, len(self.text)))
        line, column = self.lines.position(offset)
        start = self.lines.starts[line - 1]
        return line - 1, units(self.text[start:start + column], self.encoding)

    def offset(self, line: int, character: int) -> int:
        """The character offset of an LSP position; past a line's end means its end, past the last line the text's
        end (the specification's rule for a character beyond the line's length)."""
        if line >= self.lines.line_count:
            return len(self.text)
        text = self.lines.line_text(line + 1)
        count = 0
        for i, c in enumerate(text):
            if count >= character:
                return self.lines.starts[line] + i
            count += units(c, self.encoding)
        return self.lines.starts[line] + len(text)

    def location_offset(self, line: int, column: int) -> int:
        """The offset of rlcompat's 1-based line and 1-based character column, kept inside the text."""
        if line > self.lines.line_count:
            return len(self.text)
        length = len(self.lines.line_text(line))
        return self.lines.starts[line - 1] + max(0, min(column - 1, length))
