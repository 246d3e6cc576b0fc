"""CPython's tree of a big text a few top-level statements at a time, so the whole file's tree is never alive at once.

CPython's `ast` tree costs about 150 bytes of memory a byte of source (a 3 MB file: 465 MB, more while it is built),
and `compile` about 130. The narrowing step (`narrow.py`), the Python settings reader (`lang/pysettings.py`) and the
fixer's compile check read a text of `WHOLE_MAX_CHARS` or more in chunks of about `CHUNK_CHARS`, each parsed (or
compiled) alone and let go before the next.

Where a chunk may end, without a tokenizer: before a line that starts at column 0 with a name or a decorator, is not
an `else`, `elif`, `except` or `finally` clause, and does not follow a backslash continuation. Such a line may still
be inside a string or a bracket; then the chunk before it does not parse (a string or bracket left open at its end),
and the chunk is tried again up to a later line, twice as long. A chunk that parses, from a place where a top-level
statement starts, ends where CPython's tokenizer of the whole text is outside any string or bracket (tokenizing is
left to right, so the chunk's tokens are the whole text's), and the next line starts a top-level statement of its
own: the chunks' statements are the whole text's. A chunk that does not parse and runs to the end of the text means
the text does not parse (`NotParsed`). tests/test_chunks.py holds the chunks to the whole tree on verl and the
fixtures, cut everywhere a cut is allowed.

What a pass over the chunks learnt (`Pass`) is kept by the file being checked (rlcompat/pipeline/scanned_file.py) and handed
back to what reads the same text again (`seen`): where its top-level statements are (the LibCST parts are cut there,
`batches.py`), where the chunks end (a second pass does not look for them again), and, for a text parsed in one
piece, the tree itself (the settings reader and rules read it again instead of parsing again).
"""

from __future__ import annotations

import __future__
import ast
import bisect
import itertools
import re
import warnings
from dataclasses import dataclass, field
from typing import Iterator

from rlcompat.lang.pyspeed import plain

CHUNK_CHARS = 32_000  # about 5 MB of CPython tree a chunk
WHOLE_MAX_CHARS = 2 * CHUNK_CHARS  # shorter texts are parsed whole


class NotParsed(Exception):
    """The text does not parse (CPython's parser or compiler says no, or the text is nested too deeply)."""


@dataclass
class Chunk:
    first: int  # the 0-based line of the text where the chunk starts: its tree's line n is line `first` + n
    stop: int | None  # the 0-based line after its last; None: the text's last
    tree: ast.Module | None  # None once the next chunk is asked for


@dataclass
class Pass:
    """What a pass over a text's chunks learnt (kept by the file being checked: `ScannedFile.seen`)."""

    text: str
    spans: list[tuple[int, int]]  # (first line, last line), 1-based, of each top-level statement, decorators included
    cuts: list[int]  # the 0-based first line of each chunk
    tree: ast.Module | None = None  # the whole tree, where the text was one chunk
    extra: dict = field(default_factory=dict)  # what readers of the same pass left for later (the settings)


def in_chunks(text: str) -> bool:
    """Whether `text` is read in chunks (never with `RLCOMPAT_PLAIN_LIBCST=1`: the reference parses whole)."""
    return len(text) >= WHOLE_MAX_CHARS and not plain()


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")


def split_lines(text: str) -> list[str]:
    """The lines of `text` with their ends (`\r\n`, `\r` or `\n`, as CPython numbers lines; the last may have none)."""
    if "\r" in text:
        lines = [m.group() for m in _LINE.finditer(text)]
        if lines and lines[-1] == "":
            lines.pop()
        return lines
    parts = text.split("\n")  # most files: the same lines as the pattern gives, without a match object each
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def line_starts(lines: list[str]) -> list[int]:
    """The offset of each line's start, and the text's length last."""
    return list(itertools.accumulate(map(len, lines), initial=0))


_CONTINUES = re.compile(r"(?:else|elif|except|finally)\b")
_STARTS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_@")


def _may_start(lines: list[str], i: int) -> bool:
    """Whether a chunk may start on line `i` (0-based, after the first line)."""
    line, before = lines[i], lines[i - 1]
    return (line[:1] in _STARTS and not _CONTINUES.match(line) and before[:1] != "@"
            and not before.rstrip("\r\n").endswith("\\"))


def _next_cut(lines: list[str], starts: list[int], first: int, chars: int) -> int:
    """The first line where a chunk starting on line `first` may end after at least `chars` characters, or the
    number of lines."""
    i = max(first + 1, bisect.bisect_left(starts, starts[first] + chars))
    while i < len(lines) and not _may_start(lines, i):
        i += 1
    return min(i, len(lines))


def parse(text: str) -> ast.Module:
    """CPython's tree of `text`; `NotParsed` where there is none."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences and the like: the user's, not ours
            return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise NotParsed(str(exc)) from None


def chunks(text: str, lines: list[str] | None = None, spelling: str = "", seen: Pass | None = None) -> Iterator[Chunk]:
    """The chunks of `text` in order, each parsed (the tree or cuts of `text` where `seen`, a pass over it, learnt
    them); with `spelling`, where the cuts are known, only the chunks that spell it. Raises `NotParsed` (after the
    chunks that parsed) where the text does not parse."""
    seen = of_text(seen, text)
    if seen is not None and seen.tree is not None:
        yield Chunk(0, None, seen.tree)
        return
    if not in_chunks(text):
        yield Chunk(0, None, parse(text))
        return
    if lines is None:
        lines = split_lines(text)
    starts = line_starts(lines)
    if seen is not None:
        bounds = [*seen.cuts, len(lines)]
        for first, stop in zip(bounds, bounds[1:]):
            if not spelling or text.find(spelling, starts[first], starts[stop]) >= 0:
                yield from _let_go(Chunk(first, stop, parse(text[starts[first]:starts[stop]])))
        return
    first = 0
    while first < len(lines):
        chars = CHUNK_CHARS
        while True:
            stop = _next_cut(lines, starts, first, chars)
            try:
                tree = parse(text[starts[first]:starts[stop]])
                break
            except NotParsed:
                if stop == len(lines):
                    raise
                chars = 2 * (starts[stop] - starts[first])  # it may end inside a string or a bracket: a longer chunk
        chunk = Chunk(first, stop, tree)
        del tree
        yield from _let_go(chunk)
        first = stop


def _let_go(chunk: Chunk) -> Iterator[Chunk]:
    """`chunk`, whose tree is let go once the consumer asks for the next one: the consumer's loop variable still
    holds the chunk while the next is parsed, and two trees would be alive at once."""
    yield chunk
    chunk.tree = None


def nodes(root: ast.AST) -> list[ast.AST]:
    """`root` and every node under it, in the order `ast.walk` yields them (breadth first), about twice as fast: one
    loop over a list that grows as it is read, where `ast.walk` stacks three generators for each node."""
    out = [root]
    append, tree_node = out.append, ast.AST
    for node in out:
        for name in node._fields:
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, tree_node):
                        append(item)
            elif isinstance(value, tree_node):
                append(value)
    return out


def statement_spans(tree: ast.Module, shift: int = 0) -> list[tuple[int, int]]:
    """(first line, last line) of each top-level statement, its decorators included, `shift` lines down."""
    return [(min([s.lineno, *(d.lineno for d in getattr(s, "decorator_list", ()))]) + shift,
             (s.end_lineno or s.lineno) + shift) for s in tree.body]


def spans_of(text: str, seen: Pass | None = None) -> list[tuple[int, int]] | None:
    """The top-level statements' lines of `text` (what `seen` learnt of it, or from a pass over its chunks), or None
    where it does not parse."""
    seen = of_text(seen, text)
    if seen is not None:
        return seen.spans
    try:
        return [span for chunk in chunks(text) for span in statement_spans(chunk.tree, chunk.first)]
    except NotParsed:
        return None


def of_text(seen: Pass | None, text: str) -> Pass | None:
    """`seen` if it is what a pass learnt of `text` (the very text object that pass read); never a new parse."""
    return seen if seen is not None and seen.text is text else None


# --- the fixer's compile check ----------------------------------------------------------------------------------
_FUTURE_FLAGS = 0
for _name in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _name).compiler_flag
# A `global` statement at module level makes CPython's compiler compare it with every use of the name before it in
# the module, and a `from __future__` import is allowed only at the top: either may make a whole text fail to
# compile where each chunk compiles, so a text that spells one after its first chunk is compiled whole.
_WHOLE_MODULE_CHECKS = re.compile(r"^global\b|__future__", re.MULTILINE)


def compile_error(text: str) -> str | None:
    """CPython's complaint about `text` as a module (syntax the grammar allows but the compiler does not), or None;
    a big text is compiled a chunk at a time, each with the `__future__` features of the chunks before it."""
    if not in_chunks(text):
        return _compile(text, 0, 0)[0]
    lines = split_lines(text)
    starts = line_starts(lines)
    if _WHOLE_MODULE_CHECKS.search(text, starts[_next_cut(lines, starts, 0, CHUNK_CHARS)]):
        return _compile(text, 0, 0)[0]
    first, flags = 0, 0
    while first < len(lines):
        chars = CHUNK_CHARS
        while True:
            stop = _next_cut(lines, starts, first, chars)
            chunk = text[starts[first]:starts[stop]]
            error, more = _compile(chunk, first, flags)
            if error is None or stop == len(lines) or _parses(chunk):
                break  # compiled, or the compiler's own complaint about a chunk that parses: the text's
            chars = 2 * (starts[stop] - starts[first])  # it may end inside a string or a bracket: a longer chunk
        if error is not None or more is None:
            return error
        flags |= more
        first = stop
    return None


def _parses(text: str) -> bool:
    try:
        parse(text)
        return True
    except NotParsed:
        return False


def _compile(text: str, shift: int, flags: int) -> tuple[str | None, int | None]:
    """(the complaint about `text`, whose first line is line `shift` + 1 of the file, or None; the `__future__`
    features it turns on, None where it is too deep to compile)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid escape sequences and the like: the user's, not ours
        try:
            code = compile(text, "<fixed>", "exec", flags=flags, dont_inherit=True)
        except (SyntaxError, ValueError) as exc:
            line = f"line {exc.lineno + shift}: " if getattr(exc, "lineno", None) else ""
            return f"{line}{getattr(exc, 'msg', None) or exc}", 0
        except (RecursionError, MemoryError):
            return None, None  # too deep for CPython's compiler here: nothing to compare against
    return None, code.co_flags & _FUTURE_FLAGS
