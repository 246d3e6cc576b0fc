"""The JSON front end: DeepSpeed's `ds_config.json` and other JSON configs, read as settings with dotted keys.

`{"bf16": {"enabled": true}, "zero_optimization": {"stage": 3}}` gives the settings `bf16.enabled = "true"` and
`zero_optimization.stage = "3"`; an array item's key is its index (`a.0.b`). Every key and value keeps its exact
character range: a string's value span is inside its quotes, a number's or `true`/`false`/`null`'s is the
literal, so a fix rewrites those characters and every other byte (indentation, key order, spacing, line
endings) stays. Values are the text as written for literals and the decoded string for strings; DeepSpeed's
`"auto"` is the string `auto`. A string written with escapes gets no value span (it is not rewritten); a string's
`word_span` is its whole token, quotes included (the notebook front end decodes cell sources from it).

The file is validated by the standard library's parser first, so a broken file is reported with its line and
column and the parser's words; only then does a small scanner of our own collect the positions. Objects and arrays
are walked with an explicit stack (a deeply nested data file costs no recursion here; the standard parser's own
limit reports it as too deeply nested). Which `.json` files a directory walk reads: docs/configs-and-scripts.md.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Sequence

from rlcompat.lang.scanned import ScannedView
from rlcompat.lang.settings import ConfigRule, ConfigView, Setting, Span
from rlcompat.findings import Finding
from rlcompat.lang.textpos import LineIndex


class JsonSyntaxError(Exception):
    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


PARSE_ERRORS = (JsonSyntaxError,)


@dataclass
class JsonDocument:
    settings: list[Setting] = field(default_factory=list)


def syntax_error_location(exc: JsonSyntaxError) -> tuple[int, int, str]:
    return exc.line, exc.column, exc.message


def parse(text: str) -> JsonDocument:
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        raise JsonSyntaxError(f"invalid JSON: {exc.msg}", exc.lineno, exc.colno) from exc
    except ValueError as exc:  # a number too long for int() and the like
        raise JsonSyntaxError(f"invalid JSON: {exc}", 1, 1) from exc
    return JsonDocument(list(scan(text)))


_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\.)*"')
_LITERAL = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null|NaN|-?Infinity")
_SPACE = re.compile(r"[ \t\r\n]*")


def scan(text: str):
    """Settings for every scalar (and an opaque one for every empty object or array) of valid JSON `text`."""
    # Stack frames: [kind ("{" or "["), path, next array index, pending key, key span]
    stack: list[list] = []
    i = _SPACE.match(text, 0).end()
    path_key: tuple[str, Span] | None = None  # the key of the value about to be read
    while i < len(text):
        ch = text[i]
        top = stack[-1] if stack else None
        if ch in "{[":
            key, span = _value_key(top, path_key, i)
            stack.append([ch, key, 0, span])
            path_key = None
            i += 1
        elif ch in "}]":
            frame = stack.pop()
            if text[_back_to_open(text, i)] == frame[0] and frame[1]:
                # an empty object or array: a setting with no literal value, so rules can see that the key is there
                yield Setting(frame[1], None, frame[3], None, origin="json")
            i += 1
        elif ch == ",":
            i += 1
        elif ch == ":":
            i += 1
        elif ch == '"':
            m = _STRING.match(text, i)
            raw = m.group(0)
            if top is not None and top[0] == "{" and path_key is None:
                path_key = (json.loads(raw), Span(i + 1, m.end() - 1))
            else:
                key, span = _value_key(top, path_key, i)
                path_key = None
                inner = raw[1:-1]
                value_span = Span(i + 1, m.end() - 1) if "\\" not in inner else None
                if key:
                    yield Setting(key, json.loads(raw), span, value_span, origin="json", word_span=Span(i, m.end()))
            i = m.end()
        else:
            m = _LITERAL.match(text, i)
            if m is None or not m.group(0):
                raise JsonSyntaxError("invalid JSON", *_line_col(text, i))
            key, span = _value_key(top, path_key, i)
            path_key = None
            if key:
                yield Setting(key, m.group(0), span, Span(i, m.end()), origin="json")
            i = m.end()
        i = _SPACE.match(text, i).end()


def _value_key(top, path_key, offset: int) -> tuple[str, Span]:
    """Dotted key and key span of the value starting at `offset`, advancing an enclosing array's index."""
    if top is None:
        return "", Span(offset, offset)
    if top[0] == "[":
        index = top[2]
        top[2] += 1
        return (f"{top[1]}.{index}" if top[1] else str(index)), Span(offset, offset + 1)
    name, span = path_key if path_key is not None else ("", Span(offset, offset))
    return (f"{top[1]}.{name}" if top[1] else name), span


def _back_to_open(text: str, i: int) -> int:
    j = i - 1
    while j > 0 and text[j] in " \t\r\n":
        j -= 1
    return j


def _line_col(text: str, offset: int) -> tuple[int, int]:
    line, col = LineIndex(text).position(offset)
    return line, col + 1


def check(doc: JsonDocument, text: str, path: str, rules: Sequence[ConfigRule], target, *,
          scanned: ScannedView) -> list[Finding]:
    view = ConfigView("json", doc.settings)
    return scanned.run_config_rules([view], text, path, rules, target)
