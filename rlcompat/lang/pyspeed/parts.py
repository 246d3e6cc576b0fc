"""Which parts of a big statement a rule's triggers keep: a trigger keeps a part only where the rule could report it.

Inside a big statement (narrow.py, `_inside`) a keyword argument, a display's element or a dict's entry that holds no
trigger is left out. A trigger alone says too little there: torch's `op_db` spells `torch.bfloat16` 1,069 times,
nearly all in lists of the dtypes a test covers (`dtypes=floating_types_and(torch.bfloat16)`), where no rule
reports a dtype. So where a rule says more about what it reports or reads, its triggers keep a part only where that
can hold:

| what the rule declares or is | a trigger of it keeps a part that |
|---|---|
| `reports_roles` (rule.py) | spells it in a node whose role (`pyroles.kind_of`, as `pyhelpers.role_of`) is one of them |
| visits only string literals (`visit_SimpleString`) | spells it in a string literal |
| `reads_calls`, `reads_keywords` (a rule that visits only calls) | holds a call of one of those names or keywords |
| `resolves_from` modules (not `ANY_MODULE`) | lies in a statement that spells a module's name or a name an import of it bound |

Each is a condition every node the rule reports (or, for `reads_calls`, reads) meets, so a part that fails one for
every rule whose trigger it holds holds nothing any of them reports; what a rule reads beside the node it visits is
never left out (narrow.py). A name an import bound to a trigger (`_Words.aliases`) keeps a part as before.
`tests/test_narrowing_safety.py` holds every rule to the same findings narrowed this way.
"""

from __future__ import annotations

import ast
import bisect
from functools import lru_cache
from typing import Callable, Sequence

from rlcompat.lang.pyroles import kind_of
from rlcompat.rule import ANY_MODULE

_STRING_VISITS = frozenset({"visit_SimpleString"})
_CALL_VISITS = frozenset({"visit_Call"})


class _Reading:
    """One rule's triggers (those its file holds) and the conditions a part must meet for them to keep it (the
    table above)."""

    def __init__(self, rule, triggers: tuple[str, ...]) -> None:
        self.triggers = triggers
        visits = _visits(type(rule))
        self.roles = frozenset(getattr(rule, "reports_roles", ()))
        self.strings = bool(visits) and visits <= _STRING_VISITS
        self.calls = frozenset(getattr(rule, "reads_calls", ()) if visits and visits <= _CALL_VISITS else ())
        self.keywords = frozenset(getattr(rule, "reads_keywords", ()) if self.calls else ())
        self.call_words = tuple(sorted({*self.calls, *self.keywords}))  # what a call it reads spells, as a word
        resolves = getattr(rule, "resolves_from", ())
        self.modules = () if ANY_MODULE in resolves else tuple(resolves)

    def refined(self) -> bool:
        return bool(self.roles or self.strings or self.calls or self.modules)


@lru_cache(maxsize=None)
def _visits(cls: type) -> frozenset[str]:
    return frozenset(n for n in dir(cls) if n.startswith("visit_"))


class PartReading:
    """For the rules narrowing a text: whether a part of a big statement holds what one of them can report."""

    def __init__(self, rules: Sequence, text: str, spells: Callable[[str], bool] | None = None) -> None:
        # worked out when a first big statement is narrowed inside (`enter`): most files have none
        self.rules, self.text = rules, text
        self.spells = spells or text.__contains__  # whether the text spells a word (spelled.py)
        self.readings: list[_Reading] | None = None
        # the statement last `enter`ed: its text's line starts, the chunk's first line, whether it has a `\r`,
        # where the triggers of rules without conditions are, where each reading's triggers and words are, and the
        # innermost node found at each position
        self._starts, self._shift, self._crlf = (), 0, False
        self._plain_at: list[int] = []
        self._at: list[tuple[_Reading, list[int], list[int]]] = []
        self._deepest: dict[tuple[int, int], tuple] = {}
        self.bound: dict[str, set[str]] = {}  # names bound by absolute imports, per top-level module (`learn`)

    def _read_rules(self) -> None:
        plain: set[str] = set()
        self.readings = []
        for rule in self.rules:
            present = tuple(filter(self.spells, rule.triggers))
            if not present:
                continue
            reading = _Reading(rule, present)
            if reading.refined():
                self.readings.append(reading)
            else:
                plain.update(present)
        self.plain = tuple(plain)  # triggers that keep any part that spells them

    def learn(self, node: ast.Import | ast.ImportFrom) -> None:
        """The names `node` binds to a top-level module (what `python.ImportMap` binds: no relative or star import),
        in source order as the rules' import map learns them."""
        for alias in node.names:
            if isinstance(node, ast.Import):
                top = alias.name.split(".")[0]
                bound = alias.asname or top
            elif not node.level and node.module and alias.name != "*":
                top, bound = node.module.split(".")[0], alias.asname or alias.name
            else:
                continue
            self.bound.setdefault(top, set()).add(bound)

    def keeps(self, nodes: Sequence[ast.AST], a: int, b: int, parents: list[ast.AST], lines: Sequence[str]) -> bool:
        """Whether the part made of `nodes` (a keyword argument, an element, a dict entry's key and value) under
        `parents` (the statement's nodes above it, nearest last), at `text[a:b]` of the statement last `enter`ed,
        holds a trigger where one of the rules can report it; `lines`: the lines its tree numbers."""
        if _any_in(self._plain_at, a, b):
            return True
        for reading, triggers_at, words_at in self._at:
            if not _any_in(triggers_at, a, b):
                continue
            if self._crlf:
                return True  # positions are counted in `\n` lines: keep it rather than count them otherwise
            if not (reading.roles or reading.strings or reading.calls):
                return True
            found = words_at if reading.calls else triggers_at
            for offset in found[bisect.bisect_left(found, a):bisect.bisect_left(found, b)]:
                position = self._position(offset, lines)
                # the innermost node at a position is the same from whichever part of the statement it is looked for
                if position not in self._deepest:
                    self._deepest[position] = _deepest(nodes, parents, position)
                node, above = self._deepest[position]
                if node is None or _counts(reading, node, above, lines):
                    return True
        return False

    def enter(self, text: str, starts: Sequence[int], shift: int, span: range) -> None:
        """Read the big statement on the lines `span` of the chunk whose first line is line `shift` of `text`
        (`starts`: where each line of `text` starts) before its parts are asked about: where the rules' words are
        in it (once, not again in each part), and for each rule that resolves what it reports through a module,
        whether the statement spells the module's name or a name an import of it bound (what it reports is spelled
        there, and it may read other parts of the statement: RLC413 reads every word of a command's argument
        list): a rule whose module it does not spell keeps no part of it."""
        if self.readings is None:
            self._read_rules()
        start, end = starts[span.start + shift], starts[span.stop + shift]
        self._starts, self._shift = starts, shift
        self._crlf = text.find("\r", start, end) >= 0
        self._deepest = {}
        # rules share words (`bfloat16` is four rules' trigger) and modules (`torch`): each is searched for once
        found = _Found(text, start, end)
        self._plain_at = found.offsets(self.plain)
        self._at = []
        for reading in self.readings:
            if reading.modules and not any(found.spells(name) for m in reading.modules
                                           for name in {m, *self.bound.get(m, ())}):
                continue
            words_at = found.offsets(reading.call_words, whole=True) if reading.calls else []
            self._at.append((reading, found.offsets(reading.triggers), words_at))

    def _position(self, offset: int, lines: Sequence[str]) -> tuple[int, int]:
        """An offset into the text as CPython's tree of the chunk gives positions: (1-based line of the chunk, UTF-8
        column)."""
        line = bisect.bisect_right(self._starts, offset) - 1
        column = offset - self._starts[line]
        own = lines[line - self._shift]
        return line - self._shift + 1, column if own.isascii() else len(own[:column].encode("utf-8"))


def _any_in(offsets: list[int], a: int, b: int) -> bool:
    i = bisect.bisect_left(offsets, a)
    return i < len(offsets) and offsets[i] < b


class _Found:
    """Where words are in `text[start:end]`, each searched for once."""

    def __init__(self, text: str, start: int, end: int) -> None:
        self.text, self.start, self.end = text, start, end
        self._at: dict[str, list[int]] = {}
        self._spelled: dict[str, bool] = {}

    def offsets(self, words: Sequence[str], whole: bool = False) -> list[int]:
        """Where each of `words` starts, sorted; `whole`: only where it is a word of its own."""
        out = []
        for word in words:
            at = self._at.get(word)
            if at is None:
                at = self._at[word] = _offsets(word, self.text, self.start, self.end)
            if whole:
                out.extend(i for i in at if _is_word_at(self.text, i, len(word)))
            else:
                out.extend(at)
        out.sort()
        return out

    def spells(self, word: str) -> bool:
        """Whether `word` is there as a word of its own."""
        found = self._spelled.get(word)
        if found is None:
            found = self._spelled[word] = _spells_word(self.text, self.start, self.end, word)
        return found


def _offsets(word: str, text: str, start: int, end: int) -> list[int]:
    """Where `word` starts in `text[start:end]`, in order."""
    out = []
    i = text.find(word, start, end)
    while i >= 0:
        out.append(i)
        i = text.find(word, i + 1, end)
    return out


def _is_word_at(text: str, i: int, length: int) -> bool:
    return not (i and _is_name_char(text[i - 1])) and not (i + length < len(text) and _is_name_char(text[i + length]))


def _is_name_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def _spells_word(text: str, start: int, end: int, word: str) -> bool:
    i = text.find(word, start, end)
    while i >= 0:
        if _is_word_at(text, i, len(word)):
            return True
        i = text.find(word, i + 1, end)
    return False


# The innermost node at a position that no node spells (a comment, a comma): no rule reports it.
_NO_NODE = ast.Pass()


def _deepest(nodes: Sequence[ast.AST], parents: list[ast.AST], position: tuple[int, int]):
    """The innermost node of `nodes` whose span holds `position`, with its parents (`_NO_NODE` where none does);
    None where the position is inside an f-string (CPython 3.11 places the parts of one loosely: the caller then
    keeps the part)."""
    above = list(parents)
    node = None
    children = list(nodes)
    while True:
        found = _at(children, position)
        if found is None:
            return (_NO_NODE if node is None else node), above
        between, child = found
        if node is not None:
            above.append(node)
        above.extend(between)
        node = child
        if isinstance(node, ast.JoinedStr):
            return None, above
        children = _children(node)


def _at(children: list[ast.AST], position: tuple[int, int]) -> tuple[list[ast.AST], ast.AST] | None:
    """The child whose span holds `position`, with the nodes without a position passed on the way (a lambda's
    `arguments`, a comprehension's `for`: they are looked into)."""
    for child in children:
        start = getattr(child, "lineno", None)
        if start is None:
            inner = _at(_children(child), position)
            if inner is not None:
                return [child, *inner[0]], inner[1]
        elif (start, child.col_offset) <= position < (child.end_lineno, child.end_col_offset):
            return [], child
    return None


def _children(node: ast.AST) -> list[ast.AST]:
    """`ast.iter_child_nodes(node)` as a list, without its generators."""
    out = []
    for name in node._fields:
        value = getattr(node, name, None)
        if type(value) is list:
            out.extend(v for v in value if isinstance(v, ast.AST))
        elif isinstance(value, ast.AST):
            out.append(value)
    return out


def _counts(reading: _Reading, node: ast.AST, parents: list[ast.AST], lines: Sequence[str]) -> bool:
    """Whether the innermost node at an occurrence of a word is one the rule reports or reads."""
    if reading.calls:
        holder = parents[-1] if parents else None
        if isinstance(node, ast.keyword):
            return node.arg in reading.keywords and isinstance(holder, ast.Call)
        return (isinstance(node, (ast.Name, ast.Attribute)) and isinstance(holder, ast.Call) and holder.func is node
                and _called_name(node) in reading.calls)
    if reading.strings:
        return isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes))
    return _reported_in_role(reading, node, parents, lines)


def _called_name(func: ast.Name | ast.Attribute) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id


def _reported_in_role(reading: _Reading, node: ast.AST, parents: list[ast.AST], lines: Sequence[str]) -> bool:
    """Whether `node`, the innermost node at a trigger, is one a rule reporting only in `reading.roles` could report:
    a name, an attribute or a string (the name `getattr(x, "name")` gives: the call) in one of those roles. A
    keyword's or a parameter's own name counts wherever it is (no role says where it sits)."""
    if isinstance(node, (ast.keyword, ast.arg)):
        return True
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
        holder = parents[-1] if parents else None
        if (isinstance(holder, ast.Call) and isinstance(holder.func, ast.Name) and holder.func.id == "getattr"
                and len(holder.args) >= 2 and holder.args[1] is node):
            return kind_of(holder, parents[:-1], _text_at(lines)) in reading.roles
    elif not isinstance(node, (ast.Attribute, ast.Name)):
        return False  # a comment, or punctuation between nodes: nothing a rule reports spells it
    return kind_of(node, parents, _text_at(lines)) in reading.roles


def _text_at(lines: Sequence[str]):
    def at(line: int, byte_column: int) -> str:
        text = lines[line - 1]
        if not text.isascii():
            byte_column = len(text.encode("utf-8")[:byte_column].decode("utf-8", "ignore"))
        return text[byte_column:byte_column + 1]
    return at
