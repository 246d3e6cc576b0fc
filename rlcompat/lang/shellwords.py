"""Words a shell command gets from variables, with the file offsets the user wrote them at.

`deepspeed --module $training_commands` runs the words of whatever `training_commands` holds; OpenRLHF's scripts
fill it with `read -r -d '' training_commands <<EOF ... EOF`. An unquoted `$VAR` (not the command's first word,
which stays a wrapper like `$PY`) whose value holds several words is split into those words, each one a `Word`
whose characters point into the assignment or the heredoc body. Flags read from them therefore have their
spans there, and a fix edits the heredoc line, not the command.

Bash splits an expansion on blanks and does no quote removal on the result; heredoc bodies with an unquoted
delimiter drop `\\`+newline first. Both are followed here; quotes inside such values are kept as quotes, except
that a value word wholly in quotes is read as its contents (a user who writes them means the value).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SIMPLE_PARAM = re.compile(r"\$([A-Za-z_]\w*)|\$\{([A-Za-z_]\w*)\}")
PYTHON_COMMAND = re.compile(r"^(?:.*/)?python(?:\d+(?:\.\d+)*)?$")


@dataclass
class HeredocValue:
    name: str
    defined_at: int  # offset of the `read` command
    body_start: int
    body_end: int
    quoted: bool  # `<<'EOF'`: no expansion, `\\`+newline kept


def heredoc_of(heredocs, text: str, start: int, end: int):
    """The first heredoc whose `<<WORD` sits inside the command at start..end: (word start, word end, body start, end)."""
    line_end = text.find("\n", start)
    line_end = len(text) if line_end < 0 else line_end
    for h in heredocs:
        if start <= h[0] < max(end, line_end):
            return h
    return None


def is_quoted_delimiter(text: str, word_start: int, word_end: int) -> bool:
    return any(ch in "'\"\\" for ch in text[word_start:word_end])


def read_target(words) -> str | None:
    """The variable `read [-r] [-d ''] NAME` assigns (the last name-like word)."""
    names = [w.text for w in words[1:] if re.fullmatch(r"[A-Za-z_]\w*", w.text)]
    return names[-1] if names else None


def body_tokens(text: str, start: int, end: int, quoted: bool) -> list[tuple[int, int]]:
    """(start, end) of the blank-separated words of text[start:end]; `\\`+newline separates too when unquoted."""
    out, i, tok = [], start, None
    while i < end:
        ch = text[i]
        if not quoted and ch == "\\" and i + 1 < end and text[i + 1] in "\r\n":
            if tok is not None:
                out.append((tok, i))
                tok = None
            i += 2 if text[i + 1] == "\n" or text[i + 1:i + 3] != "\r\n" else 3
            continue
        if ch in " \t\r\n":
            if tok is not None:
                out.append((tok, i))
                tok = None
        elif tok is None:
            tok = i
        i += 1
    if tok is not None:
        out.append((tok, end))
    return out


def value_tokens(chars: list[tuple[str, int]]) -> list[list[tuple[str, int]]]:
    """A variable's unquoted value characters split on blanks, as `$VAR` splits them."""
    out, cur = [], []
    for ch, off in chars:
        if ch in " \t\n":
            if cur:
                out.append(cur)
                cur = []
        else:
            cur.append((ch, off))
    if cur:
        out.append(cur)
    return out


def array_tokens(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """(start, end) of the items of an array assignment's text[start:end]: blank-separated, quotes kept whole,
    `#` comments and `\\`+newline skipped."""
    out, i, tok, quote = [], start, None, None
    while i < end:
        ch = text[i]
        if quote:
            if ch == "\\" and quote == '"':
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
            tok = i if tok is None else tok
        elif ch == "\\" and i + 1 < end and text[i + 1] in "\r\n":
            if tok is not None:
                out.append((tok, i))
                tok = None
            i += 1
        elif ch == "\\":
            tok = i if tok is None else tok
            i += 1
        elif ch in " \t\r\n":
            if tok is not None:
                out.append((tok, i))
                tok = None
        elif ch == "#" and tok is None:
            nl = text.find("\n", i, end)
            i = end if nl < 0 else nl
            continue
        elif tok is None:
            tok = i
        i += 1
    if tok is not None:
        out.append((tok, min(i, end)))
    return out
