"""Makefiles (`Makefile`, `GNUmakefile`, `*.mk`): their recipes are shell commands, checked by the shell front end.

The recipe lines (a tab, then the command; `@`, `-` and `+` prefixes dropped, `\\` continuations kept with the
next line's tab dropped, as make does) and the variable definitions (`NAME = value`, `:=`, `::=`, `?=`, with
`export`/`override`) become one shell script, written as an embedded block (lang/embedded.py) so that every
character keeps its offset in the Makefile: findings point at the Makefile's lines, and a fix applies there.
Make's own syntax becomes the shell's: `$(NAME)` and `${NAME}` -> `${NAME}` (resolved to the definition, as the
shell resolves an assignment), `$$` -> `$`, `$(shell CMD)` -> `$(CMD)`; a call of another make function
(`$(wildcard ...)`, `$(@D)`) is a word whose value is unknown. Each definition is a double-quoted assignment, so
a value of several words stays one variable, split where a recipe uses it.

Not followed: `define ... endef` blocks, target-specific variables, conditionals (`ifeq`: every branch is
read), `+=`, and `.ONESHELL` (each line is read as the next command of one script either way).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from rlcompat.findings import Finding
from rlcompat.lang import shell
from rlcompat.lang.embedded import Embedded, map_findings
from rlcompat.lang.scanned import ScannedView
from rlcompat.lang.textpos import LineIndex

PARSE_ERRORS = shell.PARSE_ERRORS

DEFINITION = re.compile(r"^(?:(?:export|override)[ \t]+)*([A-Za-z_][\w.]*)[ \t]*(?:::=|:=|\?=|=)[ \t]*")
RULE = re.compile(r"^[^\t#=][^=]*?(?<!:):(?![=:])")  # `target ...: prerequisites` (not `X := 1`)
UNKNOWN = "${__make_function__}"  # a make function's value: nothing rlcompat can resolve


@dataclass
class MakeScript:
    block: Embedded  # the shell script the recipes and definitions make, character by character
    script: shell.ShellScript


def parse(text: str) -> MakeScript:
    block = Embedded("shell", shell_chars(text), forbidden="$")  # a `$` a fix writes would need doubling
    try:
        script = shell.parse(block.code)
    except shell.ShellSyntaxError as exc:
        # Where the shell stopped, in the Makefile (the error's offset is the script's).
        offset = block.file_offset(exc.offset)
        exc.offset = offset
        exc.line, column0 = LineIndex(text).position(offset)
        exc.column = column0 + 1
        raise
    return MakeScript(block, script)


def syntax_error_location(exc: shell.ShellSyntaxError) -> tuple[int, int, str]:
    return exc.line, exc.column, f"{exc} (in a recipe)"


def check(tree: MakeScript, text: str, path: str, rules: Sequence, target, *,
          scanned: ScannedView) -> list[Finding]:
    code = tree.block.code
    found = shell.check(tree.script, code, path, rules, target, scanned=scanned)
    return map_findings(tree.block, found, LineIndex(text))


def shell_chars(text: str) -> list[tuple[str, int]]:
    """The shell script of a Makefile: (character, offset in the Makefile) for each character."""
    out: list[tuple[str, int]] = []
    lines = _logical_lines(text)
    in_rule = in_define = False
    for start, end in lines:
        line = text[start:end]
        first = line.split("\n", 1)[0].strip()
        if in_define:
            in_define = first != "endef"
            continue
        if re.match(r"^(?:(?:export|override)[ \t]+)*define\b", first):
            in_define = True
            continue
        if line.startswith("\t") and in_rule:
            _recipe(text, start + 1, end, out)
        else:
            m = DEFINITION.match(line)
            if m and not line.startswith("\t"):
                _definition(text, start, m, end, out)
            elif RULE.match(line):
                in_rule = True
                recipe = _inline_recipe(text, start, end)
                if recipe is not None:
                    _recipe(text, recipe, end, out)
        out.append(("\n", end - 1 if end > start and text[end - 1] == "\n" else end))
    return out


def _logical_lines(text: str) -> list[tuple[int, int]]:
    """(start, end) of each line with its `\\` continuations, end after the newline."""
    out, start, i = [], 0, 0
    while i < len(text):
        nl = text.find("\n", i)
        if nl < 0:
            out.append((start, len(text)))
            return out
        body = text[i:nl].rstrip("\r")
        if _continued(body):
            i = nl + 1
            continue
        out.append((start, nl + 1))
        start = i = nl + 1
    if start < len(text):
        out.append((start, len(text)))
    return out


def _continued(line: str) -> bool:
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def _inline_recipe(text: str, start: int, end: int) -> int | None:
    """`target: prerequisites ; command`: where the command starts."""
    line = text[start:end]
    m = RULE.match(line)
    semi = line.find(";", m.end())
    hash_ = line.find("#", m.end())
    if semi < 0 or 0 <= hash_ < semi:
        return None
    return start + semi + 1


def _recipe(text: str, start: int, end: int, out: list) -> None:
    """One recipe line (from after its tab): prefixes dropped, continuations' tabs dropped, make's `$` rewritten."""
    i = start
    while i < end and text[i] in "@-+ \t":
        i += 1
    while i < end:
        ch = text[i]
        if ch == "\n":
            out.append((ch, i))
            i += 1
            if i < end and text[i] == "\t":
                i += 1  # make drops the tab that starts a recipe's continuation line
            continue
        if ch == "$":
            i = _dollar(text, i, end, out)
            continue
        out.append((ch, i))
        i += 1
    if out and out[-1][0] == "\n":
        out.pop()  # the line's own newline is added by the caller


def _definition(text: str, start: int, m: re.Match, end: int, out: list) -> None:
    """`NAME = value` -> `NAME="value"` (the value without make's comment and trailing blanks)."""
    value_start = start + m.end()
    raw_end = end
    comment = _comment_start(text, value_start, end)
    stop = comment if comment is not None else raw_end
    while stop > value_start and text[stop - 1] in " \t\r\n\\":
        stop -= 1
    value = text[value_start:stop]
    if any(ch in value for ch in '"`'):
        return  # a value the shell could not be handed in double quotes: left unresolved
    name_start = start + m.start(1)
    for k, ch in enumerate(m.group(1)):
        out.append((ch, name_start + k))
    equals = start + m.end() - 1
    out.append(("=", equals))
    out.append(('"', value_start))
    i = value_start
    while i < stop:
        if text[i] == "$":
            i = _dollar(text, i, stop, out)
        elif text[i] == "\\" and text[i + 1:i + 2] in ("\n", "\r"):
            out.append((" ", i))  # make joins a continued value with one blank
            i += 1
            while i < stop and text[i] in " \t\r\n":
                i += 1
        else:
            out.append((text[i], i))
            i += 1
    out.append(('"', max(stop - 1, value_start)))


def _comment_start(text: str, start: int, end: int) -> int | None:
    i = start
    while i < end:
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == "#":
            return i
        i += 1
    return None


def _dollar(text: str, i: int, end: int, out: list) -> int:
    """Make's `$...` at i, written as the shell's; returns where make's reference ends."""
    nxt = text[i + 1] if i + 1 < end else ""
    if nxt == "$":
        out.append(("$", i))
        return i + 2
    if nxt in "({":
        close = _matching(text, i + 1, end)
        if close is None:
            out.append(("$", i))
            return i + 1
        inner = text[i + 2:close]
        if re.fullmatch(r"[A-Za-z_]\w*", inner):
            out.append(("$", i))
            out.append(("{", i + 1))
            out.extend((text[k], k) for k in range(i + 2, close))
            out.append(("}", close))
            return close + 1
        if inner.startswith("shell "):
            out.append(("$", i))
            out.append(("(", i + 1))
            _recipe_text(text, i + 8, close, out)
            out.append((")", close))
            return close + 1
        out.extend((ch, i) for ch in UNKNOWN)
        return close + 1
    out.append(("$", i))  # `$@`, `$<`, `$X`: the shell reads them as its own parameters
    return i + 1


def _recipe_text(text: str, start: int, end: int, out: list) -> None:
    i = start
    while i < end:
        if text[i] == "$":
            i = _dollar(text, i, end, out)
        else:
            out.append((text[i], i))
            i += 1


def _matching(text: str, open_at: int, end: int) -> int | None:
    opener = text[open_at]
    closer = ")" if opener == "(" else "}"
    depth = 0
    for k in range(open_at, end):
        if text[k] == opener:
            depth += 1
        elif text[k] == closer:
            depth -= 1
            if depth == 0:
                return k
    return None
