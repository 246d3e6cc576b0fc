"""Which parts of a big statement a rule's triggers keep: a trigger keeps a part only where the rule could report it.

Inside a big statement (narrow.py, `_inside`) a keyword argument, a display's element or a dict's entry that holds no
trigger is left out. A trigger alone says too little there: torch's `op_db` spells `torch.bfloat16` 1,069 times,
nearly all in lists of the dtypes a test covers (`dtypes=floating_types_and(torch.bfloat16)`), where no rule
reports a dtype. So where a rule says more about what it reports or reads, its triggers keep a part only where that
can hold:

| what the rule declares or is | a trigger of it keeps a part that |
|---|---|
| `reports_roles` (rule.py) | spells it in a node whose role (`roles.kind_of`, as `pyhelpers.role_of`) is one of them |
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
import re
from functools import lru_cache
from typing import Sequence

from rlcompat.analysis.roles import kind_of
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
        # a call it reads spells one of these names or keywords, as a word of its own
        self.call_pattern = _words_pattern(tuple(sorted({*self.calls, *self.keywords}))) if self.calls else None
        resolves = getattr(rule, "resolves_from", ())
        self.modules = () if ANY_MODULE in resolves else tuple(resolves)

    def refined(self) -> bool:
        return bool(self.roles or self.strings or self.calls or self.modules)


@lru_cache(maxsize=None)
def _visits(cls: type) -> frozenset[str]:
    return frozenset(n for n in dir(cls) if n.startswith("visit_"))


@lru_cache(maxsize=None)
def _words_pattern(words: tuple[str, ...]) -> re.Pattern:
    return re.compile(r"\b(?:" + "|".join(map(re.escape, words)) + r")\b")


class PartReading:
    """For the rules narrowing a text: whether a part of a big statement holds what one of them can report."""

    def __init__(self, rules: Sequence, text: str) -> None:
        # worked out when a first big statement is narrowed inside (`enter`): most files have none
        self.rules, self.text = rules, text
        self.readings: list[_Reading] | None = None
        self._modules_spelled: dict[int, bool] = {}  # per reading, for the statement being narrowed (`enter`)
        self._deepest: dict[tuple[int, int], tuple] = {}  # position -> `_deepest` there, in that statement
        self.bound: dict[str, set[str]] = {}  # names bound by absolute imports, per top-level module (`learn`)

    def _read_rules(self) -> None:
        plain: set[str] = set()
        self.readings = []
        text = self.text
        for rule in self.rules:
            present = tuple(t for t in rule.triggers if t in text)
            if not present:
                continue
            reading = _Reading(rule, present)
            if reading.refined():
                self.readings.append(reading)
            else:
                plain.update(present)
        self.plain = tuple(plain)  # triggers that keep any part that spells them
        self._bound_pattern: dict[str, re.Pattern] = {}


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

    def keeps(self, nodes: Sequence[ast.AST], segment: str, at: tuple[int, int], parents: list[ast.AST],
              lines: Sequence[str]) -> bool:
        """Whether the part made of `nodes` (a keyword argument, an element, a dict entry's key and value) under
        `parents` (the statement's nodes above it, nearest last), whose text `segment` starts at `at` (0-based line,
        character column of `lines`), holds a trigger where one of the rules can report it."""
        if any(t in segment for t in self.plain):
            return True
        for reading in self.readings:
            present = tuple(t for t in reading.triggers if t in segment)
            if not present:
                continue
            if "\r" in segment:
                return True  # positions are counted in `\n` lines: keep it rather than count them otherwise
            if reading.modules and not self._modules_spelled.get(id(reading), True):
                continue
            if not (reading.roles or reading.strings or reading.calls):
                return True
            starts = (m.start() for m in reading.call_pattern.finditer(segment)) if reading.calls else \
                (i for word in present for i in _finds(word, segment))
            for found in _positions(starts, segment, at, lines):
                # the innermost node at a position is the same from whichever part of the statement it is looked for
                if found not in self._deepest:
                    self._deepest[found] = _deepest(nodes, parents, found)
                node, above = self._deepest[found]
                if node is None or _counts(reading, node, above, lines):
                    return True
        return False

    def enter(self, text: str, start: int, end: int) -> None:
        """Read the big statement at `text[start:end]` before its parts are asked about: for each rule that resolves
        what it reports through a module, whether the statement spells the module's name or a name an import of it
        bound (what it reports is spelled there, and it may read other parts of the statement: RLC413 reads every
        word of a command's argument list)."""
        if self.readings is None:
            self._read_rules()
        self._modules_spelled = {}
        self._deepest = {}
        self._bound_pattern = {}  # imports learnt since the last statement may have bound more names
        for reading in self.readings:
            if reading.modules:
                self._modules_spelled[id(reading)] = any(
                    self._pattern(m).search(text, start, end) is not None for m in reading.modules)

    def _pattern(self, module: str) -> re.Pattern:
        pattern = self._bound_pattern.get(module)
        if pattern is None:
            names = sorted({module, *self.bound.get(module, ())})
            pattern = self._bound_pattern[module] = _words_pattern(tuple(names))
        return pattern


def _finds(word: str, segment: str):
    i = segment.find(word)
    while i >= 0:
        yield i
        i = segment.find(word, i + 1)


def _positions(offsets, segment: str, at: tuple[int, int], lines: Sequence[str]):
    """Each offset into `segment` (which starts at `at` in `lines`) as CPython's tree gives positions: (1-based line,
    UTF-8 column)."""
    for i in offsets:
        line = at[0] + segment.count("\n", 0, i)
        start = segment.rfind("\n", 0, i)
        column = i - start - 1 if start >= 0 else at[1] + i
        text = lines[line]
        yield line + 1, column if text.isascii() else len(text[:column].encode("utf-8"))


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
