"""Jupyter notebooks (`.ipynb`): code cells through the Python front end, `!cmd` lines and `%%bash` / `%%sh` cells
through the shell front end, fixes written into the notebook's JSON in place.

The notebook is read with the JSON front end (lang/jsonfile.py), which gives every cell source string's exact
token. Each string is decoded character by character, keeping the file offset of every character (an escape
such as `\\n` or `\\"` maps to where it starts), so the inner front ends see the cell's code while every finding
and fix lands on the notebook file's own characters:

- **Locations** are the notebook file's line and column of the character (nbformat writes each source line as
  its own JSON string on its own line, so a file line names one cell line); the message ends with
  `(cell N, line M)`, both 1-based, N counting every cell as Jupyter shows them. SARIF and JSON reports carry the
  file position, which editors open directly.
- **Fixes** replace characters inside the source strings only: outputs, metadata, key order, indentation and line
  endings are never touched. A fix's new text is JSON-escaped; a fix over an escape sequence is not offered.
- **Python**: all code cells are checked as one program in order (a cell's `import torch` serves later cells), with
  IPython lines (`!cmd`, `%magic`, `%%cell magic` cells) blanked. If that program does not parse (a cell mid-edit),
  each cell is checked on its own.
- **Shell**: every `!cmd` line and the body of every `%%bash`, `%%sh` or `%%script bash` cell, in order.
- **`%%writefile NAME`** cells: the body through the front end NAME's extension selects (`.yaml`, `.yml`,
  `.json`, `.toml`, `.py`, `.sh`), as if it were that file.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Sequence

from rlcompat.lang.scanned import ScannedView
from rlcompat.lang import jsonfile
from rlcompat.lang.embedded import Embedded, map_findings
from rlcompat.lang.settings import ConfigRule
from rlcompat.findings import Finding
from rlcompat.lang.textpos import LineIndex
from rlcompat.lang.written_files import check_written, written_language

PARSE_ERRORS = jsonfile.PARSE_ERRORS
syntax_error_location = jsonfile.syntax_error_location
SHELL_MAGICS = re.compile(r"^%%(?:bash|sh|script[ \t]+(?:ba)?sh)\b")
_SOURCE_KEY = re.compile(r"^cells\.(\d+)\.source(?:\.(\d+))?$")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


@dataclass
class Cell:
    index: int
    kind: str  # "code" | "markdown" | "raw"
    chars: list[tuple[str, int]] = field(default_factory=list)


@dataclass
class Notebook:
    cells: list[Cell]


def parse(text: str) -> Notebook:
    doc = jsonfile.parse(text)
    kinds: dict[int, str] = {}
    sources: dict[int, list[tuple[str, int]]] = {}
    for s in doc.settings:
        m = _SOURCE_KEY.match(s.key)
        if m and s.word_span is not None:
            sources.setdefault(int(m.group(1)), []).extend(decode(text, s.word_span.start, s.word_span.end))
        elif re.fullmatch(r"cells\.\d+\.cell_type", s.key):
            kinds[int(s.key.split(".")[1])] = s.value or ""
    return Notebook([Cell(i, kinds.get(i, ""), sources.get(i, [])) for i in sorted(set(kinds) | set(sources))])


def decode(text: str, start: int, end: int) -> list[tuple[str, int]]:
    """The characters of the JSON string token text[start:end], each with the offset it is written at."""
    out, i = [], start + 1
    while i < end - 1:
        ch = text[i]
        if ch != "\\":
            out.append((ch, i))
            i += 1
            continue
        kind = text[i + 1]
        if kind != "u":
            out.append((_ESCAPES.get(kind, kind), i))
            i += 2
            continue
        code = int(text[i + 2:i + 6], 16)
        width = 6
        if 0xD800 <= code < 0xDC00 and text.startswith("\\u", i + 6):
            low = int(text[i + 8:i + 12], 16)
            if 0xDC00 <= low < 0xE000:
                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                width = 12
        out.append((chr(code), i))
        i += width
    return out


def _lines(chars: list[tuple[str, int]]) -> list[list[tuple[str, int]]]:
    lines, cur = [], []
    for c in chars:
        cur.append(c)
        if c[0] == "\n":
            lines.append(cur)
            cur = []
    if cur:
        lines.append(cur)
    return lines


def _python_of(cell: Cell) -> list[tuple[str, int]]:
    """The cell's Python with IPython lines blanked (same characters and offsets, spaces for the magic)."""
    lines = _lines(cell.chars)
    if lines and "".join(c for c, _ in lines[0]).startswith("%%"):
        return [(" " if c != "\n" else c, o) for line in lines for c, o in line]
    out = []
    for line in lines:
        text = "".join(c for c, _ in line)
        if text.lstrip().startswith(("!", "%")):
            out.extend((" " if c not in "\n" else c, o) for c, o in line)
        else:
            out.extend(line)
    return out


def shell_code(text: str) -> list[tuple[str, int]]:
    """The shell a notebook runs (`!cmd` lines, `%%bash`/`%%sh` cells), each character with its offset in `text`:
    what `fix`'s load check composes (rlcompat/schema/loadcheck.py)."""
    return _shell_of([c for c in parse(text).cells if c.kind == "code"], text)


def _shell_of(cells: list[Cell], notebook_text: str) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    for cell in cells:
        lines = _lines(cell.chars)
        if lines and SHELL_MAGICS.match("".join(c for c, _ in lines[0])):
            for line in lines[1:]:
                out.extend(line)
            out.extend(_newline(out, notebook_text))
            continue
        for line in lines:
            text = "".join(c for c, _ in line)
            stripped = text.lstrip()
            if stripped.startswith("!"):
                lead = len(text) - len(stripped) + 1
                out.extend(line[lead:])
                out.extend(_newline(out, notebook_text))
    return out


def _newline(chars: list[tuple[str, int]], text: str) -> list[tuple[str, int]]:
    """A line end for a block that needs one, at the offset right after the last character as the file writes it
    (`\\n`, `\\"`: two characters, `\\u00e9`: six): an override a fix appends to the cell's last command goes
    there, after its last word. (At the last character's own offset it went in before that character: inside a
    closing quote, where the command never read it, so every pass of `fix` appended it again.)"""
    if chars and chars[-1][0] != "\n":
        return [("\n", chars[-1][1] + _written_width(text, chars[-1][1]))]
    return []


def _written_width(text: str, offset: int) -> int:
    if text[offset:offset + 1] != "\\":
        return 1
    if text[offset + 1:offset + 2] != "u":
        return 2
    return 12 if text.startswith("\\u", offset + 6) and 0xD800 <= int(text[offset + 2:offset + 6], 16) < 0xDC00 else 6


def _json_escape(content: str) -> str:
    return json.dumps(content, ensure_ascii=False)[1:-1]


def check(nb: Notebook, text: str, path: str, rules: Sequence, target, *, scanned: ScannedView) -> list[Finding]:
    from rlcompat.lang import shell
    from rlcompat.lang.embedded import check_python

    index = LineIndex(text)
    code_cells = [c for c in nb.cells if c.kind == "code"]
    python_rules = [r for r in rules if "python" in r.languages]
    shell_rules = [r for r in rules if isinstance(r, ConfigRule) and "shell" in r.languages]
    findings: list[Finding] = []
    if python_rules and code_cells:
        blocks = [Embedded("python", _python_of(c), escape=_json_escape) for c in code_cells]
        whole = Embedded("python", [ch for b in blocks for ch in b.chars + _newline(b.chars, text)], escape=_json_escape)
        if _parses(whole.code):
            findings += check_python(whole, path, python_rules, target, index, scanned)
        else:
            for block in blocks:
                findings += check_python(block, path, python_rules, target, index, scanned)
    shell_chars = _shell_of(code_cells, text)
    code = "".join(c for c, _ in shell_chars)
    if shell_rules and shell_chars and scanned.woken(shell_rules, "shell", code):
        block = Embedded("shell", shell_chars, escape=_json_escape)
        try:
            script = shell.parse(code)
        except shell.PARSE_ERRORS:
            script = None
        if script is not None:
            findings += map_findings(block, shell.check(script, code, path, shell_rules, target, scanned=scanned), index)
    findings += _written_files(code_cells, path, rules, target, index, scanned)
    return [_with_cell(f, nb, index) for f in findings]


WRITEFILE = re.compile(r"^%%writefile(?:[ \t]+-a)?[ \t]+(\S+)")


def _written_files(cells: list[Cell], path: str, rules: Sequence, target, index: LineIndex,
                   scanned: ScannedView) -> list[Finding]:
    """`%%writefile config.yaml` cells (how Colab notebooks write a trainer's config): the body through the front
    end of the file it writes, which the knowledge hands over (lang/written_files.py)."""
    out: list[Finding] = []
    for cell in cells:
        lines = _lines(cell.chars)
        m = WRITEFILE.match("".join(c for c, _ in lines[0])) if lines else None
        language = written_language(m.group(1)) if m else None
        if language is not None:
            block = Embedded(language, [ch for line in lines[1:] for ch in line], escape=_json_escape)
            out += check_written(block, path, rules, target, index, scanned)
    return out


def _parses(code: str) -> bool:
    import ast
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(code)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def _with_cell(f: Finding, nb: Notebook, index: LineIndex) -> Finding:
    offset = index.offset(f.location.line, f.location.column - 1)
    for cell in nb.cells:
        if cell.chars and cell.chars[0][1] <= offset <= cell.chars[-1][1]:
            line = 1 + sum(1 for c, o in cell.chars if o < offset and c == "\n")
            return replace(f, message=f"{f.message} (cell {cell.index + 1}, line {line})")
    return f
