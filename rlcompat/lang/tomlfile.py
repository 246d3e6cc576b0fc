"""The TOML front end: trainer configs written in TOML (torchtitan's `train_configs/*.toml`), read as settings.

`[training]` / `mixed_precision_param = "bfloat16"` gives the setting `training.mixed_precision_param = "bfloat16"`;
`[compile]` / `enable = true` gives `compile.enable = "true"`. Keys are the full dotted path: table headers, dotted
keys (`a.b = 1`) and inline tables (`x = { y = 1 }`) all join with dots, quoted key parts are decoded, an array
item's key is its index (`model.converters.0`) and the n-th `[[table]]` of an array of tables is `table.<n>` (as the
JSON front end numbers array items). Values are the text as written for booleans, numbers and dates (`true`, `3`),
and the decoded string for strings. A single-line string's value span is inside its quotes, a literal's is the
literal, so a fix rewrites those characters and every other byte (comments, spacing, key order, line endings)
stays; a basic string written with escapes and every multi-line string get no value span (not rewritten). A
string's `word_span` is its whole token, quotes included: a string turned into a boolean loses its quotes.

The file is validated by tomllib (tomli before Python 3.11) first, so a broken file is reported with the parser's
line, column and words; only then does the small scanner below, which trusts the text to be valid TOML, collect the
positions. Which `.toml` files a directory walk reads: docs/configs-and-scripts.md (`pyproject.toml` is a declared
environment, lang/pyproject_deps.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterator, Sequence

from rlcompat._toml import TOMLDecodeError, load_toml_text
from rlcompat.lang.scanned import ScannedView
from rlcompat.lang.settings import ConfigRule, ConfigView, Setting, Span
from rlcompat.findings import Edit, Finding


class TomlSyntaxError(Exception):
    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


PARSE_ERRORS = (TomlSyntaxError,)


@dataclass
class TomlTable:
    header: Span  # `[training]` as written
    body_end: int  # where its last key-value statement ends (the header's end while it has none)


@dataclass
class TomlDocument:
    settings: list[Setting] = field(default_factory=list)
    tables: dict[str, TomlTable] = field(default_factory=dict)  # `[a.b]` headers by dotted path (not `[[arrays]]`)


def syntax_error_location(exc: TomlSyntaxError) -> tuple[int, int, str]:
    return exc.line, exc.column, exc.message


_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")


def parse(text: str) -> TomlDocument:
    try:
        load_toml_text(text)
    except TOMLDecodeError as exc:
        words = str(exc)
        m = _AT.search(words)
        line, column = (int(m.group(1)), int(m.group(2))) if m else (1, 1)
        raise TomlSyntaxError(f"invalid TOML: {_AT.sub('', words)}", line, column) from exc
    except RecursionError as exc:
        raise TomlSyntaxError("invalid TOML: arrays or inline tables nested too deeply to read", 1, 1) from exc
    try:
        scanner = _Scanner(text)
        settings = list(scanner.settings())
        return TomlDocument(settings, scanner.tables)
    except RecursionError as exc:
        raise TomlSyntaxError("arrays or inline tables nested too deeply to read", 1, 1) from exc


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_BASIC = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_LITERAL = re.compile(r"'[^'\n]*'")
_DATETIME = r"\d{4}-\d\d-\d\d(?:[Tt ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:[Zz]|[+-]\d\d:\d\d)?)?"
_SCALAR = re.compile(_DATETIME + r"|[0-9A-Za-z_+.:-]+")
_BLANK = re.compile(r"[ \t]*")


def _decode_string(token: str) -> str:
    """A TOML string token's value, decoded by the TOML parser itself (escapes, line-ending backslashes)."""
    return load_toml_text("v = " + token)["v"]


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.arrays: dict[tuple[str, ...], int] = {}  # resolved path of an array of tables -> index of its last table
        self.tables: dict[str, TomlTable] = {}

    # -- whitespace, comments -------------------------------------------------------------------------------------
    def _skip_blank(self) -> None:
        self.i = _BLANK.match(self.text, self.i).end()

    def _skip_space(self) -> None:
        """Blanks, newlines and comments (inside arrays and between statements)."""
        text = self.text
        while self.i < len(text):
            ch = text[self.i]
            if ch in " \t\r\n":
                self.i += 1
            elif ch == "#":
                end = text.find("\n", self.i)
                self.i = len(text) if end < 0 else end + 1
            else:
                return

    # -- keys -----------------------------------------------------------------------------------------------------
    def _key(self) -> tuple[list[str], Span]:
        """A dotted key at the cursor: its decoded parts and the span of the whole key as written."""
        parts: list[str] = []
        start = self.i
        while True:
            self._skip_blank()
            text, i = self.text, self.i
            if text.startswith('"', i):
                m = _BASIC.match(text, i)
                parts.append(_decode_string(m.group(0)))
            elif text.startswith("'", i):
                m = _LITERAL.match(text, i)
                parts.append(m.group(0)[1:-1])
            else:
                m = _BARE_KEY.match(text, i)
                parts.append(m.group(0))
            self.i = end = m.end()
            self._skip_blank()
            if self.text.startswith(".", self.i):
                self.i += 1
                continue
            return parts, Span(start, end)

    def _resolve(self, parts: list[str], new_array: bool) -> tuple[str, ...]:
        """A table header's path, with the index of the current table of every array of tables it passes through."""
        path: list[str] = []
        for n, part in enumerate(parts):
            path.append(part)
            last = n == len(parts) - 1
            if last and new_array:
                index = self.arrays.get(tuple(path), -1) + 1
                self.arrays[tuple(path)] = index
                path.append(str(index))
            elif tuple(path) in self.arrays:
                path.append(str(self.arrays[tuple(path)]))
        return tuple(path)

    # -- statements -----------------------------------------------------------------------------------------------
    def settings(self) -> Iterator[Setting]:
        table: tuple[str, ...] = ()
        text = self.text
        while True:
            self._skip_space()
            if self.i >= len(text):
                return
            if text.startswith("[[", self.i):
                self.i += 2
                parts, _ = self._key()
                table = self._resolve(parts, new_array=True)
                self.i = text.index("]]", self.i) + 2
            elif text.startswith("[", self.i):
                start = self.i
                self.i += 1
                parts, _ = self._key()
                table = self._resolve(parts, new_array=False)
                self.i = text.index("]", self.i) + 1
                if table == tuple(parts):  # not a sub-table of an array of tables
                    self.tables[".".join(table)] = TomlTable(Span(start, self.i), self.i)
            else:
                parts, key_span = self._key()
                self.i += 1  # "="
                self._skip_blank()
                yield from self._value(".".join(table + tuple(parts)), key_span)
                if ".".join(table) in self.tables:
                    self.tables[".".join(table)].body_end = self.i

    # -- values ---------------------------------------------------------------------------------------------------
    def _value(self, key: str, key_span: Span) -> Iterator[Setting]:
        text, i = self.text, self.i
        if text.startswith(('"""', "'''"), i):
            quote = text[i:i + 3]
            end = self._multiline_end(i, quote)
            token = text[i:end]
            self.i = end
            yield Setting(key, _decode_string(token), key_span, None, origin="toml", word_span=Span(i, end))
        elif text.startswith('"', i):
            m = _BASIC.match(text, i)
            token = m.group(0)
            value_span = Span(i + 1, m.end() - 1) if "\\" not in token else None
            self.i = m.end()
            yield Setting(key, _decode_string(token), key_span, value_span, origin="toml", word_span=Span(i, m.end()))
        elif text.startswith("'", i):
            m = _LITERAL.match(text, i)
            self.i = m.end()
            yield Setting(key, m.group(0)[1:-1], key_span, Span(i + 1, m.end() - 1), origin="toml",
                          word_span=Span(i, m.end()))
        elif text.startswith("[", i):
            yield from self._array(key, key_span)
        elif text.startswith("{", i):
            yield from self._inline_table(key, key_span)
        else:
            m = _SCALAR.match(text, i)
            self.i = m.end()
            yield Setting(key, m.group(0), key_span, Span(i, m.end()), origin="toml")

    def _multiline_end(self, start: int, quote: str) -> int:
        text, j = self.text, start + 3
        while True:
            if quote == '"""' and text[j] == "\\":
                j += 2
                continue
            if text.startswith(quote, j):
                end = j + 3
                while end < len(text) and text[end] == quote[0] and end - j < 5:  # up to two quotes of content
                    end += 1
                return end
            j += 1

    def _array(self, key: str, key_span: Span) -> Iterator[Setting]:
        self.i += 1  # "["
        index = 0
        while True:
            self._skip_space()
            ch = self.text[self.i]
            if ch == "]":
                self.i += 1
                if index == 0:  # an empty array: a setting with no literal value, so rules can see the key
                    yield Setting(key, None, key_span, None, origin="toml")
                return
            if ch == ",":
                self.i += 1
                continue
            yield from self._value(f"{key}.{index}", Span(self.i, self.i + 1))
            index += 1

    def _inline_table(self, key: str, key_span: Span) -> Iterator[Setting]:
        self.i += 1  # "{"
        empty = True
        while True:
            self._skip_space()
            ch = self.text[self.i]
            if ch == "}":
                self.i += 1
                if empty:
                    yield Setting(key, None, key_span, None, origin="toml")
                return
            if ch == ",":
                self.i += 1
                continue
            parts, inner_span = self._key()
            self.i += 1  # "="
            self._skip_blank()
            empty = False
            yield from self._value(".".join([key, *parts]), inner_span)


def _literal(value: str) -> str:
    """A value from the knowledge as TOML: booleans and numbers as they are, anything else a basic string."""
    if value in ("true", "false") or re.fullmatch(r"[+-]?\d+(\.\d+)?", value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _adder(doc: TomlDocument, text: str):
    """`add(key, value)` for a file that leaves `key` out: the key goes on a line of its own after the last statement
    of its table (a new table at the end of the file when there is none), in the file's line ending."""
    newline = "\r\n" if "\r\n" in text else "\n"

    def add(key: str, value: str) -> Edit | None:
        table, _, leaf = key.rpartition(".")
        line = f"{leaf} = {_literal(value)}"
        if table in doc.tables:
            end = text.find("\n", doc.tables[table].body_end)
            if end < 0:
                return Edit(len(text), len(text), newline + line + newline)
            return Edit(end + 1, end + 1, line + newline)
        if not table or any(s.key.startswith(table + ".") for s in doc.settings):
            return None  # a root key, or a table made by dotted keys: a `[table]` header would redefine it
        tail = "" if not text or text.endswith("\n") else newline
        blank = newline if text.strip() else ""
        return Edit(len(text), len(text), f"{tail}{blank}[{table}]{newline}{line}{newline}")

    return add


def check(doc: TomlDocument, text: str, path: str, rules: Sequence[ConfigRule], target, *,
          scanned: ScannedView) -> list[Finding]:
    first_line = text.find("\n")
    view = ConfigView("toml", doc.settings, anchor=Span(0, len(text) if first_line < 0 else first_line),
                      sections={name: table.header for name, table in doc.tables.items()},
                      _adder=_adder(doc, text))
    return scanned.run_config_rules([view], text, path, rules, target)
