"""The YAML front end: a YAML parser's event stream gives every key's and value's position; settings come out as
dotted keys.

Nothing is constructed: the parser's events (mapping start, scalar, alias, ...) are read once, in order, into
each document's settings, so no Python object is ever built from a tag. The events come from libyaml's C
parser through PyYAML when that is installed with it (about 40x faster than a pure-Python parser: verl's 51
configs take 15 ms instead of 0.6 s); otherwise, and whenever libyaml rejects a text, from ruamel.yaml's
YAML 1.2 parser, which also words the error a user sees. Both produce the same kinds of events with 0-based
line and character-column marks, so the rest of this module does not know which one ran.

Fixes never re-dump the document: a setting's value span is the exact characters of its scalar (inside its
quotes), so a fix replaces those and every comment, blank line, quote style and flow mapping stays as it was.
A file inside verl's `trainer/config/<group>/` is a Hydra config group: its keys are mounted where
verl's knowledge (rlcompat/knowledge/data/verl/<version>.toml) says, e.g. rollout/rollout.yaml under `actor_rollout_ref.rollout`.
"""

from __future__ import annotations

import functools
import json
import os
import re
import warnings
from dataclasses import dataclass, field
from typing import Iterable, NamedTuple, Sequence

from rlcompat.lang.scanned import ScannedView
from rlcompat.lang.settings import ConfigRule, ConfigView, Setting, Span
from rlcompat.findings import Edit, Finding
from rlcompat.lang.textpos import LineIndex

# Plain scalars that YAML (1.1 and 1.2 core schema alike) reads as null; `key:` with nothing after it is one too.
_NULL_WORDS = {"", "~", "null", "Null", "NULL"}
_MERGE_KEY = "<<"
# Both parsers check every open flow level for a pending key at each token, so time grows with the square of the
# nesting depth (libyaml: 0.3 s at 10,000 levels, 96 s for a 200,000-level `[[[...]]]` file). Configs nest a few
# dozen levels; past this the file is reported as too deep, as the Python front end reports one, after ~10 ms.
MAX_NESTING = 1000
# libyaml 0.2.6 (in PyYAML's wheels from 6.0.4 on) stops at 1,000 levels itself (yaml/libyaml#287) with this problem
# ("while increasing flow level" or "block level"). That is the same verdict as MAX_NESTING, not a YAML 1.1 quirk for
# ruamel.yaml to judge again: its pure-Python scanner takes seconds to reach 1,000 levels.
_LIBYAML_TOO_DEEP = "exceeded maximum nesting depth"


class YamlSyntaxError(Exception):
    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


PARSE_ERRORS = (YamlSyntaxError,)


class Entry(NamedTuple):
    """One key of a mapping (not itself a mapping) with where its key and value start (0-based line, column)."""

    key: str  # dotted
    key_mark: tuple[int, int]
    key_length: int  # of the key as written unquoted (a YAML key may itself hold dots: `a.b: 1`)
    kind: str  # "scalar" (value_mark is where it starts), "null", "sequence" or "alias"
    value_mark: tuple[int, int] | None
    flow: bool  # inside a flow mapping (`{a: 1, b: 2}`), where `,` `]` `}` end a plain scalar


class Section(NamedTuple):
    """A mapping that is the value of a key (`fsdp_config:` and the keys under it, `override_config: {}`), for a key
    the file leaves out: where its key is written, where the mapping starts (a flow mapping's `{`), the column of its
    own keys and where its last value ends (a flow mapping's: just after its `}`). 0-based (line, column)."""

    key_mark: tuple[int, int]
    key_length: int
    indent: int | None  # the column of its first key; None for an empty mapping
    last: tuple[int, int] | None  # the end of its last value
    flow: bool
    start: tuple[int, int]


@dataclass
class YamlDocument:
    """A document whose root is a mapping (others configure nothing): its top-level keys, its entries and its
    nested mappings (`sections`, by dotted key; a block root mapping under "")."""

    top_keys: set[str] = field(default_factory=set)
    entries: list[Entry] = field(default_factory=list)
    sections: dict[str, Section] = field(default_factory=dict)


class YamlDocuments(list):
    """The mapping documents of one file (a file may hold several, separated by `---`)."""


def parse(text: str) -> YamlDocuments:
    libyaml_error = None
    fast = _libyaml_events()
    if fast is not None:
        try:
            return _read_documents(fast(text))
        except YamlSyntaxError as exc:
            # libyaml implements YAML 1.1 (U+0085 ends a line there, not in 1.2): let the YAML 1.2 parser decide.
            libyaml_error = exc
    try:
        return _read_documents(_ruamel_events(text))
    except (YamlSyntaxError, RecursionError, MemoryError):
        raise
    except Exception as exc:  # ruamel.yaml trips over some invalid input (`%YAML 1.3`: an AssertionError)
        raise libyaml_error or YamlSyntaxError(f"invalid YAML ({type(exc).__name__}: {exc})", 1, 1) from exc


def syntax_error_location(exc: YamlSyntaxError) -> tuple[int, int, str]:
    return exc.line, exc.column, exc.message


@functools.cache
def _libyaml_events():
    """A function text -> events on libyaml, or None without it (PyYAML missing or built without libyaml)."""
    try:
        from yaml import YAMLError
        from yaml.cyaml import CParser
    except ImportError:
        return None

    def events(text: str) -> Iterable:
        parser = CParser(text)
        try:
            while parser.check_event():
                yield parser.get_event()
        except YAMLError as exc:
            if getattr(exc, "problem", None) == _LIBYAML_TOO_DEEP:
                raise RecursionError(f"nested deeper than {MAX_NESTING} levels") from exc
            raise _syntax_error(exc) from exc
        finally:
            parser.dispose()

    return events


def _ruamel_events(text: str) -> Iterable:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            yield from YAML(typ="rt").parse(text)
        except YAMLError as exc:
            raise _syntax_error(exc) from exc


def _syntax_error(exc: Exception) -> YamlSyntaxError:
    mark = getattr(exc, "problem_mark", None)
    if mark is not None:
        problem = getattr(exc, "problem", None) or getattr(exc, "context", None) or "invalid YAML"
        return YamlSyntaxError(problem, mark.line + 1, mark.column + 1)
    words = str(exc).splitlines()
    return YamlSyntaxError(words[0] if words else "invalid YAML", 1, 1)


# --- events -> entries ------------------------------------------------------------------------------------

class _Frame:
    """A mapping or sequence being read."""

    __slots__ = ("mapping", "prefix", "flow", "settings", "scope", "anchor", "first", "is_key", "key", "seen",
                 "section", "indent", "start", "last")

    def __init__(self, mapping: bool, prefix: str, flow: bool, settings: bool, scope: int, anchor: str | None,
                 first: int, is_key: bool = False) -> None:
        self.mapping = mapping
        self.prefix = prefix  # this mapping's dotted key within its scope
        self.flow = flow
        self.settings = settings  # whether its keys are settings (not in a list, a complex key or a merge)
        self.scope = scope  # nested mappings share a scope; a list item or a complex key starts a new one
        self.anchor = anchor
        self.first = first  # how many entries the document had when this node opened
        self.is_key = is_key  # a complex key (`? [a, b]`): when it ends, its mapping's value comes next
        self.key: tuple | None = None  # (name, mark, length) of the key whose value comes next
        self.seen: dict[str, int] = {}  # key -> line, to refuse a duplicate key as a YAML loader does
        self.section: tuple | None = None  # (dotted key, mark, length) of the key whose value this mapping is
        self.indent: int | None = None  # the column of this mapping's first key
        # The parser's marks, turned into (line, column) once per mapping when it closes, not once per event.
        self.start = None  # where it starts
        self.last = None  # where its last node ends


class _Reader:
    """Every mapping document's entries from the event stream, read iteratively (a config may nest deeper than
    Python's recursion limit). Anchored mappings are remembered, so `other: *anchor` holds their settings too,
    placed where they are written (a fix there changes both)."""

    def __init__(self) -> None:
        self.docs = YamlDocuments()
        self._start_document()

    def _start_document(self) -> None:
        self.doc: YamlDocument | None = None
        self.stack: list[_Frame] = []
        self.recorded: list[tuple[Entry, int, bool]] = []  # (entry, scope, is a setting)
        self.anchored: dict[str, list[Entry]] = {}  # anchor -> its mapping's entries, keys relative to it
        self.defined: set[str] = set()
        self.scopes = 0

    def read(self, events: Iterable) -> YamlDocuments:
        for event in events:
            kind = type(event).__name__
            if kind in ("ScalarEvent", "AliasEvent", "MappingStartEvent", "SequenceStartEvent"):
                self._node(event, kind)
            elif kind in ("MappingEndEvent", "SequenceEndEvent"):
                self._close(event)
            elif kind == "DocumentEndEvent":
                self._end_document()
        self._end_document()
        return self.docs

    def _end_document(self) -> None:
        if self.doc is not None:
            self.doc.entries = [entry for entry, _, is_setting in self.recorded if is_setting]
        self._start_document()

    def _close(self, event) -> None:
        done = self.stack.pop()
        if done.flow:  # a block collection's end event stands where the next token starts; a flow one's at `}`/`]`
            done.last = event.end_mark
        if done.section is not None and done.settings and self.doc is not None:
            key, mark, length = done.section
            last = (done.last.line, done.last.column) if done.last is not None else None
            self.doc.sections[key] = Section(mark, length, done.indent, last, done.flow,
                                             (done.start.line, done.start.column))
        elif not self.stack and done.mapping and not done.flow and done.seen and self.doc is not None:
            # the document's root mapping, under "": where a key no mapping of the file carries yet is added
            last = (done.last.line, done.last.column) if done.last is not None else None
            start = (done.start.line, done.start.column)
            self.doc.sections[""] = Section(start, len(next(iter(done.seen))), done.indent, last, False, start)
        if self.stack and done.last is not None:
            self.stack[-1].last = done.last
        if done.anchor is not None and done.mapping:
            cut = len(done.prefix) + 1 if done.prefix else 0
            self.anchored[done.anchor] = [
                entry._replace(key=entry.key[cut:]) for entry, scope, _ in self.recorded[done.first:] if scope == done.scope
            ]
        if self.stack and self.stack[-1].mapping and not done.is_key:
            self.stack[-1].key = None

    def _open(self, event, kind: str, prefix: str, flow: bool, settings: bool, scope: int | None, is_key: bool = False):
        if len(self.stack) >= MAX_NESTING:
            raise RecursionError(f"nested deeper than {MAX_NESTING} levels")
        if scope is None:
            self.scopes += 1
            scope = self.scopes
        flow = flow or bool(event.flow_style)
        frame = _Frame(kind == "MappingStartEvent", prefix, flow, settings, scope, event.anchor, len(self.recorded),
                       is_key)
        frame.start = event.start_mark
        self.stack.append(frame)

    def _node(self, event, kind: str) -> None:
        mark = (event.start_mark.line, event.start_mark.column)
        opens = kind != "ScalarEvent" and kind != "AliasEvent"
        if kind == "AliasEvent":
            if event.anchor not in self.defined:
                raise YamlSyntaxError(f'found undefined alias "{event.anchor}"', mark[0] + 1, mark[1] + 1)
        elif event.anchor is not None:
            self.defined.add(event.anchor)
        if not self.stack:  # a document's root: only a mapping configures anything
            if kind == "MappingStartEvent":
                self.doc = YamlDocument()
                self.docs.append(self.doc)
            if opens:
                self._open(event, kind, "", False, kind == "MappingStartEvent", None)
            return
        frame = self.stack[-1]
        if not opens:
            frame.last = event.end_mark
        if frame.mapping and frame.key is None:
            if frame.indent is None:
                frame.indent = mark[1]
            self._key(frame, event, kind, mark)
            return
        # A value in a mapping, or an item of a list.
        name, key_mark, key_length = frame.key if frame.mapping else (None, None, 0)
        if name is None:  # a list item, a merge (`<<: *base`) or the value of a complex key: no setting
            if opens:
                self._open(event, kind, "", False, False, None)
            elif frame.mapping:
                frame.key = None
            return
        key = f"{frame.prefix}.{name}" if frame.prefix else name
        if kind == "MappingStartEvent":
            self._open(event, kind, key, frame.flow, frame.settings, frame.scope)
            self.stack[-1].section = (key, key_mark, key_length)
            return
        if kind == "SequenceStartEvent":
            self._record(frame, Entry(key, key_mark, key_length, "sequence", None, frame.flow))
            self._open(event, kind, "", frame.flow, False, None)
            return
        if kind == "AliasEvent":
            shared = self.anchored.get(event.anchor)
            if shared is None:  # a scalar's or a list's anchor, or a mapping's from inside itself
                self._record(frame, Entry(key, key_mark, key_length, "alias", None, frame.flow))
            for entry in shared or ():
                self._record(frame, entry._replace(key=f"{key}.{entry.key}"))
        elif _is_null(event):
            self._record(frame, Entry(key, key_mark, key_length, "null", None, frame.flow))
        else:
            self._record(frame, Entry(key, key_mark, key_length, "scalar", mark, frame.flow))
        frame.key = None

    def _key(self, frame: _Frame, event, kind: str, mark: tuple[int, int]) -> None:
        if kind != "ScalarEvent":
            frame.key = (None, None, 0)  # a complex key (`? [a, b]`) or an alias as a key: no setting
            if kind != "AliasEvent":
                self._open(event, kind, "", False, False, None, is_key=True)
            return
        name = event.value
        if name == _MERGE_KEY or _is_null(event):
            # Merged keys are the anchor's, read where the anchor is written; a null key names no setting.
            frame.key = (None, None, 0)
            return
        if name in frame.seen:
            raise YamlSyntaxError(f'found duplicate key "{name}" (first on line {frame.seen[name]})', mark[0] + 1,
                                  mark[1] + 1)
        frame.seen[name] = mark[0] + 1
        if self.doc is not None and frame is self.stack[0]:
            self.doc.top_keys.add(name)
        if event.style in ("'", '"'):
            mark = (mark[0], mark[1] + 1)  # point at the key's text, inside its quotes
        frame.key = (name, mark, len(name))

    def _record(self, frame: _Frame, entry: Entry) -> None:
        self.recorded.append((entry, frame.scope, frame.settings))


def _read_documents(events: Iterable) -> YamlDocuments:
    return _Reader().read(events)


def _is_null(event) -> bool:
    if event.tag in ("tag:yaml.org,2002:null", "!!null"):
        return True
    implicit = event.implicit[0] if isinstance(event.implicit, tuple) else event.implicit
    return bool(implicit) and not event.style and event.value in _NULL_WORDS


# --- entries -> settings ----------------------------------------------------------------------------------

def check(docs: YamlDocuments, text: str, path: str, rules: Sequence[ConfigRule], target, *,
          scanned: ScannedView) -> list[Finding]:
    return scanned.run_config_rules(_views(docs, text, path, scanned), text, path, rules, target)


def check_targets(docs: YamlDocuments, text: str, path: str, groups: Sequence[tuple[Sequence[ConfigRule], object]], *,
                  scanned: ScannedView) -> list[list[Finding]]:
    """`check` for several (rules, target) groups (`rlcompat matrix`): the settings are read once for all."""
    views = _views(docs, text, path, scanned)
    return [scanned.run_config_rules(views, text, path, rules, target) for rules, target in groups]


def _views(docs: YamlDocuments, text: str, path: str, scanned: ScannedView) -> list[ConfigView]:
    index = LineIndex(text)
    mounts = _mounts_for(path, scanned.mounts)
    top_keys = scanned.config_top_keys
    views = []
    for doc in docs:
        settings = [_setting(entry, text, index) for entry in doc.entries]
        is_verl = mounts != ("",) or bool(top_keys & doc.top_keys)
        sections = {}
        for name, section in doc.sections.items():
            start = index.offset(section.key_mark[0] + 1, section.key_mark[1])
            sections[name] = Span(start, start + section.key_length)
        views.append(ConfigView("yaml", settings, mounts=mounts, is_verl=is_verl, sections=sections,
                                _adder=_adder(doc, text, index)))
    return views


_PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")


def _adder(doc: YamlDocument, text: str, index: LineIndex):
    """`add(key, value)` for a key the document leaves out, written into the deepest mapping of the document that
    holds it (`trainer.policy.fsdp_config` for `trainer.policy.fsdp_config.mixed_precision.param_dtype`, the mappings
    in between added too). A block mapping gets lines after its last line, indented as its keys are; a flow mapping
    an entry before its `}` (`override_config: {}` -> `override_config: {attn_implementation: sdpa}`); a key no
    mapping of the file carries goes at the end of the root mapping (`mixed_precision:` and its key). None where a
    block mapping is empty, or the document gives one of the keys in between a value of its own (a scalar, or an
    alias of another mapping)."""
    newline = "\r\n" if "\r\n" in text else "\n"
    written = {entry.key for entry in doc.entries}

    def add(key: str, value: str) -> Edit | None:
        parts = key.split(".")
        depth = next((n for n in range(len(parts) - 1, 0, -1) if ".".join(parts[:n]) in doc.sections), 0)
        if not depth and "" not in doc.sections:
            return None
        section = doc.sections[".".join(parts[:depth])]  # depth 0: the root mapping
        between = [".".join(parts[:n]) for n in range(depth + 1, len(parts) + 1)]
        if any(p in written or any(k.startswith(p + ".") for k in written) for p in between):
            return None  # the document gives that key a value, or takes its mapping from an alias
        scalar = value if _PLAIN.fullmatch(value) else json.dumps(value)
        rest = parts[depth:]
        if section.flow:
            return _add_to_flow(section, rest, scalar, text, index)
        if section.indent is None or section.last is None:
            return None
        step = section.indent - section.key_mark[1] if section.indent > section.key_mark[1] else 2
        lines = [" " * (section.indent + i * step) + part + ":" + (f" {scalar}" if i == len(rest) - 1 else "")
                 for i, part in enumerate(rest)]
        line, column = section.last
        if column:  # after the line its last value ends on (and that line's comment); a block scalar ends at column 0
            line += 1
        at = index.starts[line] if line < index.line_count else len(text)
        if at == len(text) and text and not text.endswith(("\n", "\r")):
            return Edit(at, at, newline + newline.join(lines))  # a file without a final line end stays so
        return Edit(at, at, newline.join(lines) + newline)

    return add


def _add_to_flow(section: Section, rest: list[str], scalar: str, text: str, index: LineIndex) -> Edit | None:
    """`rest[0]: {rest[1]: ... scalar}` as the last entry of a flow mapping."""
    entry = f"{rest[-1]}: {scalar}"
    for part in reversed(rest[:-1]):
        entry = f"{part}: {{{entry}}}"
    start = index.offset(section.start[0] + 1, section.start[1])
    close = index.offset(section.last[0] + 1, section.last[1]) - 1
    if text[start:start + 1] != "{" or text[close:close + 1] != "}":
        return None
    inner = text[start + 1:close]
    if not inner.strip():
        return Edit(start, close + 1, "{" + entry + "}")
    at = start + 1 + len(inner.rstrip())
    return Edit(at, at, " " + entry if inner.rstrip().endswith(",") else ", " + entry)


def _setting(entry: Entry, text: str, index: LineIndex) -> Setting:
    key_start = index.offset(entry.key_mark[0] + 1, entry.key_mark[1])
    key_span = Span(key_start, key_start + entry.key_length)
    if entry.kind == "null":
        return Setting(entry.key, "", key_span, None, origin="yaml")
    if entry.kind != "scalar":
        # A list, or a value taken from an anchor: nothing a rule rewrites in place.
        return Setting(entry.key, None, key_span, None, origin="yaml")
    literal, span = _scalar_at(text, index.offset(entry.value_mark[0] + 1, entry.value_mark[1]), entry.flow)
    return Setting(entry.key, literal, key_span, span, origin="yaml")


def _mounts_for(path: str, table: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    normalized = path.replace(os.sep, "/")
    for group_file, at in table.items():
        if normalized.endswith("trainer/config/" + group_file):
            return at
    return ("",)


def _scalar_at(text: str, start: int, flow: bool) -> tuple[str | None, Span | None]:
    """The scalar written at `start`: its unquoted text and the span to replace (inside quotes)."""
    if start >= len(text):
        return "", None
    first = text[start]
    if first in "'\"":
        end = start + 1
        while end < len(text):
            ch = text[end]
            if ch == "\\" and first == '"':
                end += 2
                continue
            if ch == first:
                if first == "'" and text[end + 1: end + 2] == "'":
                    end += 2
                    continue
                break
            if ch in "\r\n":
                return None, None  # a multi-line quoted scalar: not rewritten in place
            end += 1
        return text[start + 1: end], Span(start + 1, end)
    if first in "|>&*!{[":
        return None, None  # block scalars, anchors, aliases, tags, flow collections: no in-place rewrite
    end = start
    stops = "\r\n" + (",]}" if flow else "")
    while end < len(text) and text[end] not in stops:
        if text[end] == "#" and end > start and text[end - 1] in " \t":
            break
        end += 1
    raw = text[start:end].rstrip(" \t")
    return raw, Span(start, start + len(raw))
