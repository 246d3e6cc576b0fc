"""Parse only what a rule can match: statements without a trigger are left out before LibCST sees the file.

LibCST's parse is most of a cold scan's time, and most of a file that contains a trigger is code no rule can
match. CPython's `ast` (in C, several times faster) gives each statement's line span; a module-level or
class- or function-level statement whose text has no trigger and no `import` is dropped, whole lines at a time. Kept lines
are unchanged, so a column is the same in both texts and a line maps back through `Narrowed.lines`.

What is kept is all any rule looks at: rules see a node, its ancestors (a class or function is narrowed only
inside its body, any other statement is kept whole) and the imports seen before it (every statement mentioning
`import` is kept). A rule that reads the whole module (`Rule.whole_module`, the Triton model) gets the whole
module.
"""

from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass
from typing import Sequence

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")


@dataclass(frozen=True)
class Narrowed:
    text: str  # what is parsed
    lines: tuple[int, ...]  # the original 1-based line number of each line of `text`

    def original_line(self, line: int) -> int:
        if line > len(self.lines):
            # Just past the narrowed text (LibCST ends a node that takes the last newline at (last line + 1, 0)):
            # the line after the last kept one. Found by tests/test_fuzz.py: a `match` statement kept last crashed.
            return (self.lines[-1] if self.lines else 0) + line - len(self.lines)
        return self.lines[line - 1]


def narrow(text: str, rules: Sequence) -> Narrowed | None:
    """`text` without the statements no rule can match, or None when the whole text is to be parsed."""
    if any(getattr(r, "whole_module", False) for r in rules):
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # the full parse reports the error, or parses what CPython's grammar here does not
    from rlcompat.lang.pysettings import remember_tree

    remember_tree(text, tree)  # the settings reader (lang/pysettings.py) walks the same tree
    lines = [m.group() for m in _LINE.finditer(text)]
    if lines and lines[-1] == "":
        lines.pop()
    drop: set[int] = set()  # 0-based line numbers
    keep: set[int] = set()
    _choose(tree.body, lines, _Words(tuple({t for r in rules for t in r.triggers})), drop, keep)
    drop -= keep  # a line shared with a kept statement (`a = 1; b = torch.bfloat16`) stays
    if not drop:
        return None
    kept = [i for i in range(len(lines)) if i not in drop]
    return Narrowed("".join(lines[i] for i in kept), tuple(i + 1 for i in kept))


class _Words:
    """What makes a statement worth parsing: a trigger, an import, or a name an import bound to a trigger
    (`from torch import bfloat16 as bf` makes `bf` one), learnt in source order as the walk sees imports,
    as the rules' import map does."""

    def __init__(self, triggers: tuple[str, ...]) -> None:
        self.triggers = triggers
        self.aliases: set[str] = set()
        self._alias_pattern: re.Pattern | None = None

    def found_in(self, segment: str) -> bool:
        if "import" in segment or any(t in segment for t in self.triggers):
            return True
        return self._alias_pattern is not None and self._alias_pattern.search(segment) is not None

    def learn(self, node: ast.stmt, segment: str) -> None:
        if "import" not in segment or " as " not in segment:
            return
        known = len(self.aliases)
        for imp in ast.walk(node):
            if isinstance(imp, (ast.Import, ast.ImportFrom)):
                module = getattr(imp, "module", None) or ""
                for alias in imp.names:
                    if alias.asname and any(t in f"{module}.{alias.name}" for t in self.triggers):
                        self.aliases.add(alias.asname)
        if len(self.aliases) > known:
            self._alias_pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(self.aliases))) + r")\b")


# Bodies narrowed statement by statement. Rules read a node's ancestors, never its siblings, so a sibling
# without a trigger changes nothing; `if`, `try`, `with` and loops are kept whole (their tests and handlers are
# what guards a finding).
_NARROWED = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def _start(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", ())
    return min([node.lineno, *(d.lineno for d in decorators)])


def _choose(body: list[ast.stmt], lines: list[str], words: _Words, drop: set[int], keep: set[int]) -> None:
    for node in body:
        first, last = _start(node) - 1, (node.end_lineno or node.lineno) - 1
        span = range(first, last + 1)
        segment = "".join(lines[first : last + 1])
        if not words.found_in(segment):
            drop.update(span)
        elif isinstance(node, _NARROWED) and node.body[0].lineno > node.lineno and _members_matter(node, lines, words):
            keep.update(range(first, node.body[0].lineno - 1))  # decorators and the header
            _choose(node.body, lines, words, drop, keep)
        else:
            keep.update(span)
            words.learn(node, segment)


def _members_matter(node: ast.stmt, lines: list[str], words: _Words) -> bool:
    """Whether a body statement holds a trigger: if only the header does, the statement is kept whole (a body
    narrowed to nothing would not parse)."""
    return any(words.found_in("".join(lines[_start(m) - 1 : m.end_lineno or m.lineno])) for m in node.body)
