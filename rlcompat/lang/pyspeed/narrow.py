"""Parse only what a rule can match: statements without a trigger are left out before LibCST sees the file.

LibCST's parse is most of a cold scan's time, and most of a file that contains a trigger is code no rule can
match. CPython's `ast` (in C, several times faster) gives each statement's line span; a module-level or
class- or function-level statement whose text has no trigger and holds no import statement is dropped, whole lines
at a time, and so are comment and blank lines between statements. Kept lines keep their columns (inside a big
statement, what is left out of a kept line is blanked), so a column is the same in both texts and a line maps back
through `Narrowed.lines`.

What is kept is all any rule looks at: rules see a node, its ancestors (a class, function, `if`, `try`, `with` or
loop is narrowed only inside its blocks, its headers stay; inside a big simple statement the parts no rule reads
beside what it visits are left out: `_inside`) and the imports seen before it (every import statement that binds a
name kept code spells, holds a trigger or binds a module fixes write: `_drop_unused_imports`). A rule that reads the
whole module (`Rule.whole_module`, the Triton model) gets the whole module, where it can match
(`Rule.whole_module_for_decorators_from`).
"""

from __future__ import annotations

import ast
import bisect
import itertools
import re
import warnings
from dataclasses import dataclass
from typing import Callable, Sequence

from rlcompat.lang.pyspeed import plain
from rlcompat.lang.pyspeed.chunks import Chunk, NotParsed, Pass, chunks, split_lines, statement_spans
from rlcompat.lang.pyspeed.parts import PartReading

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Narrowed:
    text: str  # what is parsed
    lines: tuple[int, ...]  # the original 1-based line number of each line of `text`
    # (line of `text`, first column, end column) of each part blanked inside a kept line, in order
    blanked: tuple[tuple[int, int, int], ...] = ()

    def covers_blanked(self, start: tuple[int, int], end: tuple[int, int]) -> bool:
        """Whether the range (line, column) start..end of `text` holds a blanked part: a node that does was not
        parsed as it is in the file (its code, a fix that rewrites it, would lack the part)."""
        i = bisect.bisect_left(self.blanked, (start[0], start[1], -1))
        return i < len(self.blanked) and (self.blanked[i][0], self.blanked[i][2]) <= end

    def original_line(self, line: int) -> int:
        if line > len(self.lines):
            # Just past the narrowed text (LibCST ends a node that takes the last newline at (last line + 1, 0)):
            # the line after the last kept one (a `match` statement kept last ends there).
            return (self.lines[-1] if self.lines else 0) + line - len(self.lines)
        return self.lines[line - 1]


def narrow(text: str, rules: Sequence, readers: Sequence = (),
           learnt: Callable[[Pass], None] = lambda seen: None,
           spells: Callable[[str], bool] | None = None) -> Narrowed | None:
    """`text` without the statements no rule can match, or None when the whole text is to be parsed (always with
    `RLCOMPAT_PLAIN_LIBCST=1`). CPython's tree is read a chunk of top-level statements at a time (`chunks.py`);
    `readers` read each chunk's tree too (`.chunk(tree, first line)`, then `.done(seen)` once a pass read every
    chunk), so that a big text is parsed once. What the pass learnt goes to `learnt` (the file being checked keeps
    it for the rest of its check), also where the whole text is to be parsed. `spells`: whether `text` spells a word
    (`spelled.py`: the runner's search answers the words it looked for)."""
    if plain():
        return None
    if spells is None:
        spells = text.__contains__
    whole = [r for r in rules if getattr(r, "whole_module", False)]
    if any(not getattr(r, "whole_module_for_decorators_from", ()) for r in whole):
        return None
    modules = {m for r in whole for m in r.whole_module_for_decorators_from}
    # An import that binds a name from `triton` spells `triton`: without the word, no statement need be looked at.
    kernels = _Kernels(modules) if whole and any(map(spells, modules)) else None
    # Whole-module rules cannot match in this file, and a rule that visits only imports reads nothing but imports,
    # which are kept with the headers around them (those that hold its trigger always: `_import_needed`): the
    # triggers of neither need keep any other statement.
    everyone = rules
    rules = [r for r in rules if r not in whole and not _visits_only_imports(r)]
    lines = split_lines(text)
    drop: set[int] = set()  # 0-based line numbers
    keep: set[int] = set()
    blanks: dict[int, list[tuple[int, int]]] = {}  # 0-based line -> columns blanked in it
    words = _Words(tuple({t for r in rules for t in r.triggers}), text, lines, PartReading(rules, text, spells),
                   spells)
    seen = Pass(text, [], [])  # what this pass learns, kept for the rest of the file's check
    spans = seen.spans
    try:
        for chunk in chunks(text, lines):
            seen.cuts.append(chunk.first)
            more = statement_spans(chunk.tree, chunk.first)
            if spans and more:  # comment and blank lines between the last statement of the chunk before and its first
                drop.update(i for i in range(spans[-1][1], more[0][0] - 1) if _BLANK_OR_COMMENT.fullmatch(lines[i]))
            spans.extend(more)
            if chunk.stop is None:  # one piece: its tree is kept for the settings reader and rules
                seen.tree = chunk.tree
                learnt(seen)
            if kernels is not None and kernels.found_in(chunk.tree):
                return None
            for reader in readers:
                reader.chunk(chunk.tree, chunk.first)
            _choose_in(chunk, lines, words, drop, keep, blanks)
    except NotParsed:
        return None  # the full parse reports the error, or parses what CPython's grammar here does not
    learnt(seen)
    for reader in readers:
        reader.done(seen)
    if kernels is not None and kernels.found():
        return None
    _drop_unused_imports(lines, words, drop, keep, {t for r in everyone for t in r.triggers})
    if spans:  # comments before the first statement (a licence) and after the last; a coding cookie stays
        ends = (*range(2, spans[0][0] - 1), *range(spans[-1][1], len(lines)))
        drop.update(i for i in ends if _BLANK_OR_COMMENT.fullmatch(lines[i]))
    drop -= keep  # a line shared with a kept statement (`a = 1; b = torch.bfloat16`) stays
    if not drop and not blanks:
        return None
    kept = [i for i in range(len(lines)) if i not in drop]
    blanked = tuple((n, a, b) for n, i in enumerate(kept, start=1) for a, b in sorted(blanks.get(i, ())))
    return Narrowed("".join(lines[i] for i in kept), tuple(i + 1 for i in kept), blanked)


def _choose_in(chunk: Chunk, lines: list[str], words: _Words, drop: set[int], keep: set[int],
               blanks: dict[int, list[tuple[int, int]]]) -> None:
    """`_choose` over a chunk's top-level statements, whose tree numbers lines from the chunk's first: it works on
    the chunk's own lines, and what it chooses is moved `chunk.first` lines down into `drop`, `keep` and `blanks`."""
    shift, body = chunk.first, chunk.tree.body
    own = lines if chunk.stop is None else lines[shift:chunk.stop]
    words.shift = shift
    imports = len(words.kept_imports)
    chosen_drop: set[int] = set()
    chosen_keep: set[int] = set()
    chosen_blanks: dict[int, list[tuple[int, int]]] = {}
    _choose(body, own, words, chosen_drop, chosen_keep, chosen_blanks)
    words.shift = 0
    if own is not lines:
        lines[shift:chunk.stop] = own  # what `_inside` blanked
    drop.update(i + shift for i in chosen_drop)
    keep.update(i + shift for i in chosen_keep)
    blanks.update((i + shift, columns) for i, columns in chosen_blanks.items())
    words.kept_imports[imports:] = [
        (node, _moved(span, shift), siblings and tuple(_moved(s, shift) for s in siblings))
        for node, span, siblings in words.kept_imports[imports:]]


def _moved(span: range, shift: int) -> range:
    return range(span.start + shift, span.stop + shift)


class _Kernels:
    """Whether a decorated function has a decorator or a parameter annotation that starts with a name an absolute
    import of one of these top-level modules binds (`import triton` -> `@triton.jit`, `from triton import jit as j`
    -> `@j`; `import triton.language as tl` -> `@_jit def k(BLOCK: tl.constexpr)`, a kernel behind a local wrapper
    of `triton.jit`, `triton_model.is_triton_kernel`): the only way either resolves into them (`python.ImportMap`).
    Every import counts, wherever it is: the chunks of a text are read in turn, and the question is settled when a
    name is both bound and used so."""

    def __init__(self, modules: set[str]) -> None:
        self.modules = modules
        self.bound: set[str] = set()
        self.used: set[str] = set()  # the first name of each decorator and annotation of a decorated function

    def found_in(self, tree: ast.Module) -> bool:
        """Read `tree` (the next chunk); whether what is read so far settles it."""
        modules = self.modules
        decorated: list[ast.expr] = []
        for node in _statements(tree):  # imports and function definitions are statements
            if isinstance(node, ast.Import):
                self.bound.update((a.asname or a.name).split(".")[0] for a in node.names
                                  if a.name.split(".")[0] in modules)
            elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] in modules:
                self.bound.update(a.asname or a.name for a in node.names)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.decorator_list:
                decorated.extend(node.decorator_list)
                args = node.args
                decorated.extend(a.annotation for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg,
                                                        args.kwarg) if a is not None and a.annotation is not None)
        for expr in decorated:
            if isinstance(expr, ast.Call):
                expr = expr.func
            while isinstance(expr, ast.Attribute):
                expr = expr.value
            if isinstance(expr, ast.Name):
                self.used.add(expr.id)
        return self.found()

    def found(self) -> bool:
        return not self.bound.isdisjoint(self.used)


_IMPORT_VISITS = frozenset({"visit_Import", "visit_ImportFrom"})


def _visits_only_imports(rule) -> bool:
    visits = {name for name in dir(type(rule)) if name.startswith("visit_")}
    return bool(visits) and visits <= _IMPORT_VISITS


_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


def _statements(root: ast.AST) -> list:
    """`root` and every statement (and `except` handler, `match` case) under it, in no particular order."""
    out = []
    todo = [root]
    while todo:
        node = todo.pop()
        out.append(node)
        for name in _BLOCKS:
            block = getattr(node, name, None)
            if type(block) is list:
                todo.extend(block)
    return out


class _Words:
    """What makes a statement worth parsing: a trigger, an import statement inside it (`_holds_import`), or a name
    an import bound to a trigger (`from torch import bfloat16 as bf` makes `bf` one), learnt in source order as the
    walk sees imports, as the rules' import map does."""

    def __init__(self, triggers: tuple[str, ...], text: str = "", lines: Sequence[str] = (),
                 parts: PartReading | None = None, spells: Callable[[str], bool] | None = None) -> None:
        self.triggers = triggers
        # which parts of a big statement the triggers keep, rule by rule (parts.py)
        self.parts = parts if parts is not None else PartReading((), "")
        # a part of the text holds only the triggers the text holds: each statement is searched for those
        self.in_text = tuple(filter(spells or text.__contains__, triggers)) if text else triggers
        # statements are searched where they are in the text, between line starts (no copy of their lines)
        self.text = text
        self.starts = list(itertools.accumulate(map(len, lines), initial=0))
        self.shift = 0  # the text's line where the chunk being narrowed starts: its statements number lines from it
        # (import on lines of its own, its lines, the lines of each statement of its block or None at module level)
        self.kept_imports: list[tuple[ast.stmt, range, tuple[range, ...] | None]] = []
        # What an import can bind of each trigger: its longest name (`auto` of `"auto"`), so that `import torch.bfloat16
        # as bf` makes `bf` one; a call (`LLM(`, `dtype(`) is a name that ends where the call starts, so it is what an
        # imported dotted name ends with (`from vllm import LLM as Engine` makes `Engine(...)` a statement to keep;
        # `floating_types_and` of a module `common_dtype` is no `dtype(`).
        self.importable = tuple({_importable(t) for t in triggers if _NAME.search(t)})
        self.aliases: set[str] = set()
        self._alias_pattern: re.Pattern | None = None

    def keep(self, nodes: Sequence[ast.AST], parents: list[ast.AST], lines: list[str]) -> bool:
        """Whether a part of a big statement (`nodes`, under `parents`; `lines`: the chunk's) holds a trigger where a
        rule can report it (parts.py), or a name bound to one. The part is searched where it is in the text."""
        first, last = nodes[0], nodes[-1]
        a = self.starts[first.lineno - 1 + self.shift] + _char_column(lines[first.lineno - 1], first.col_offset)
        b = self.starts[last.end_lineno - 1 + self.shift] + _char_column(lines[last.end_lineno - 1],
                                                                         last.end_col_offset)
        if (self._alias_pattern is not None and any(self.text.find(n, a, b) >= 0 for n in self.aliases)
                and self._alias_pattern.search(self.text, a, b) is not None):
            return True
        return self.parts.keeps(nodes, a, b, parents, lines)

    def found_in_lines(self, span: range) -> bool:
        """Whether the lines `span` of the text (a statement's own, as the file has them) hold a trigger or a name
        bound to one."""
        text, a, b = self.text, self.starts[span.start + self.shift], self.starts[span.stop + self.shift]
        for t in self.in_text:
            if text.find(t, a, b) >= 0:
                return True
        return self._alias_pattern is not None and self._alias_pattern.search(text, a, b) is not None

    def enter(self, span: range) -> None:
        """The big statement on the lines `span` is narrowed inside next (parts.py reads it first)."""
        self.parts.enter(self.text, self.starts, self.shift, span)

    def spells(self, word: str, span: range) -> bool:
        return self.text.find(word, self.starts[span.start + self.shift], self.starts[span.stop + self.shift]) >= 0

    def learn(self, node: ast.stmt, span: range) -> None:
        """The names `node`'s imports bind to something whose dotted name holds a trigger, where the name itself holds
        none: `import torch.bfloat16 as bf` binds `bf`, `from liger_kernel.transformers import
        AutoLigerKernelForCausalLM` binds a name without `liger_kernel` (`import a.b` binds `a`, and code that uses
        it spells `a.b`)."""
        if not _holds_import(node, self, span):
            return
        known = len(self.aliases)
        for imp in _statements(node):  # imports are statements: no expression need be walked
            if isinstance(imp, (ast.Import, ast.ImportFrom)):
                self.parts.learn(imp)
                module = getattr(imp, "module", None) or ""
                for alias in imp.names:
                    bound = alias.asname or (alias.name if isinstance(imp, ast.ImportFrom) else None)
                    if (bound and bound != "*" and any(t in f"{module}.{alias.name}(" for t in self.importable)
                            and not any(t in bound for t in self.triggers)):
                        self.aliases.add(bound)
        if len(self.aliases) > known:
            self._alias_pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(self.aliases))) + r")\b")


_CALLED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\($")


def _importable(trigger: str) -> str:
    """What of `trigger` a dotted name an import binds must spell, with a `(` after it (see `_Words.importable`)."""
    called = _CALLED.search(trigger)
    return called.group() if called else max(_NAME.findall(trigger), key=len)


def _holds_import(node: ast.stmt, words: _Words, span: range) -> bool:
    """Whether `node` (on the lines `span`) is an import statement or holds one: what the rules' import map reads,
    wherever it is."""
    if not words.spells("import", span):
        return False
    todo = [node]
    while todo:
        stmt = todo.pop()
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            return True
        for name in _BLOCKS:
            block = getattr(stmt, name, None)
            if type(block) is list:
                todo.extend(block)
    return False


# Bodies narrowed statement by statement. Rules read a node's ancestors, never their siblings, so a sibling
# without a trigger changes nothing. A class or function is narrowed inside its body; so is an `if`, `try`, `with`
# or loop whose blocks' statements start lines of their own: its clauses' headers stay (their tests and handlers are
# what guards a finding), and in each block what holds a trigger or an import (or the first statement, so that no
# block is empty).
_NARROWED = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
_BLOCKED = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, getattr(ast, "TryStar", ast.Try))


def _start(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", ())
    return min([node.lineno, *(d.lineno for d in decorators)])


def _span(node: ast.stmt) -> range:
    return range(_start(node) - 1, node.end_lineno or node.lineno)


# Blocks nest this deep at most before a statement is kept whole: an `elif` is an `if` inside the `else` of the one
# before it, and a chain of a thousand is valid Python (the narrowing recurses once per level).
_MAX_DEPTH = 64


def _choose(body: list[ast.stmt], lines: list[str], words: _Words, drop: set[int], keep: set[int],
            blanks: dict[int, list[tuple[int, int]]], depth: int = 0) -> bool:
    """Choose what of `body` stays (into `drop`, `keep`, `blanks`); whether anything does."""
    kept = False
    body_lines: tuple[range, ...] | None = None  # the lines of each statement of `body`, for the imports kept in it
    for node in body:
        span = _span(node)
        triggered = words.found_in_lines(span)
        if not triggered and not _holds_import(node, words, span):
            drop.update(span)
            continue
        kept = True
        if (depth < _MAX_DEPTH and isinstance(node, _NARROWED) and _start(node.body[0]) > node.lineno
                and _members_matter(node, words)):
            # decorators and the header, up to the first member's decorators (not the first member's own line)
            keep.update(range(span.start, _start(node.body[0]) - 1))
            _choose(node.body, lines, words, drop, keep, blanks, depth + 1)
        elif depth < _MAX_DEPTH and isinstance(node, _BLOCKED) and _blocks_on_own_lines(node, lines):
            for block in _blocks(node):
                if not _choose(block, lines, words, drop, keep, blanks, depth + 1):
                    keep.update(_span(block[0]))  # an empty block would not parse
        else:
            inner = _inside(node, lines, words, blanks) if len(span) >= INSIDE_MIN_LINES else set()
            keep.update(i for i in span if i not in inner)
            drop.update(inner)
            words.learn(node, span)
            if isinstance(node, (ast.Import, ast.ImportFrom)) and _on_lines_of_its_own(node, lines):
                # with the lines of the statements of its block, unless that is the module's (never left empty)
                if depth and body_lines is None:
                    body_lines = tuple(_span(s) for s in body)
                words.kept_imports.append((node, span, body_lines))
    # Comment and blank lines between two statements of the body: no rule reads them (suppressions are read from
    # the file's own text).
    for a, b in zip(body, body[1:]):
        drop.update(i for i in range(a.end_lineno or a.lineno, _start(b) - 1) if _BLANK_OR_COMMENT.fullmatch(lines[i]))
    return kept


def _members_matter(node: ast.stmt, words: _Words) -> bool:
    """Whether a body statement holds a trigger or an import: if only the header does, the statement is kept whole
    (a body narrowed to nothing would not parse)."""
    for member in node.body:
        span = _span(member)
        if words.found_in_lines(span) or _holds_import(member, words, span):
            return True
    return False


def _blocks(node: ast.stmt) -> list[list[ast.stmt]]:
    handlers = [h.body for h in getattr(node, "handlers", ())]
    return [b for b in (node.body, *handlers, getattr(node, "orelse", []), getattr(node, "finalbody", [])) if b]


def _blocks_on_own_lines(node: ast.stmt, lines: list[str]) -> bool:
    """Whether every statement of the blocks of `node` starts a line of its own: then leaving one out leaves every
    clause's header (`if ...:`, `else:`, `except ...:`) where it was."""
    for block in _blocks(node):
        for stmt in block:
            line = lines[_start(stmt) - 1]
            if getattr(stmt, "decorator_list", None):
                if not line.lstrip().startswith("@"):
                    return False
            elif line.encode("utf-8")[:stmt.col_offset].strip():
                return False
    return True


# --- imports nothing kept uses ---------------------------------------------------------------------------------
# What the rules read of imports (python.ImportMap): the name a kept statement uses (`qualname`, `imports.names`),
# a module-level name bound to one of these modules (`local_name_for`, for fixes that write `torch.float32`; held
# to the rules' calls by tests/test_trigger_gates.py), and the imports a rule visits (they hold its trigger).
NAMES_FOR_FIXES = frozenset({"torch"})


def _drop_unused_imports(lines: list[str], words: _Words, drop: set[int], keep: set[int], triggers: set[str]) -> None:
    """Leave out the kept imports that bind no name the kept code spells, hold no trigger and bind no module in
    `NAMES_FOR_FIXES` (a verl file imports much of verl for code no rule reads). A block left empty keeps one."""
    if not words.kept_imports:
        return
    import_lines = {i for _, span, _ in words.kept_imports for i in span}
    used = "".join(line for i, line in enumerate(lines) if (i not in drop or i in keep) and i not in import_lines)
    emptied: dict[tuple[range, ...], range] = {}
    for node, span, block in words.kept_imports:
        if not _import_needed(node, "".join(lines[span.start : span.stop]), used, triggers):
            drop.update(span)
            keep.difference_update(span)
            if block is not None:
                emptied.setdefault(block, span)
    for block, span in emptied.items():
        if all(i in drop and i not in keep for s in block for i in s):
            keep.update(span)  # an empty block would not parse


def _import_needed(node: ast.Import | ast.ImportFrom, segment: str, used: str, triggers: set[str]) -> bool:
    if isinstance(node, ast.ImportFrom) and node.module == "__future__" or any(t in segment for t in triggers):
        return True
    for alias in node.names:
        if isinstance(node, ast.Import):
            top = alias.name.split(".")[0]
            if (alias.asname or top) in used or (top in NAMES_FOR_FIXES and (not alias.asname or alias.name == top)):
                return True
        elif alias.name != "*" and (alias.asname or alias.name) in used:
            return True
    return False


def _on_lines_of_its_own(node: ast.stmt, lines: list[str]) -> bool:
    """Nothing but blanks before it on its first line, and nothing but blanks or a comment after it on its last."""
    first, last = lines[node.lineno - 1], lines[(node.end_lineno or node.lineno) - 1]
    after = last.encode("utf-8")[node.end_col_offset or 0 :].strip()
    return not first.encode("utf-8")[: node.col_offset].strip() and (not after or after.startswith(b"#"))


# --- inside one big statement ----------------------------------------------------------------------------------
# A statement of this many lines or more is narrowed inside too (torch's `op_db = [OpInfo(...), ...]` is 10,000
# lines whose elements mostly hold no trigger that can be a finding).
INSIDE_MIN_LINES = 32
# Keyword arguments that rules (and their helpers) compare an argument's keyword with, so never left out: a rule
# may read one beside the node it visits (RLC103 reads `fp16=` of the call whose `bf16=` it reports).
# tests/test_narrowing_safety.py finds every keyword name the rules compare with and fails if one is missing here.
_READ_KEYWORDS = frozenset({
    "attention", "attn_implementation", "axis", "bf16", "configs", "default", "disable", "dtype", "enabled", "fp16",
    "including_emulation", "kv_cache_dtype", "kwargs", "load_in_4bit", "load_in_8bit", "mixed_precision", "model",
    "model_id", "model_name", "model_name_or_path", "num_stages", "num_warps", "out_dtype", "param_dtype",
    "pretrained_model_name_or_path", "quantization", "quantization_config", "sem", "tf32", "torch_dtype",
    "use_flash_attention_2", "use_liger",
})
_SIMPLE = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Return)
_DISPLAYS = (ast.List, ast.Tuple, ast.Set)


def _inside(stmt: ast.stmt, lines: list[str], words: _Words, blanks: dict[int, list[tuple[int, int]]]) -> set[int]:
    """Lines to leave out of `stmt`: the elements of list, tuple and set displays, the entries of dicts and the
    keyword arguments of calls that hold no trigger where a rule could report it (parts.py: `dtypes=floating_types_and(
    torch.bfloat16)` holds RLC101's word in a table of dtypes, where it reports none), and comment lines between them. A part is blanked with spaces
    (with its comma) in `lines`, so columns stay; a line left with nothing but blanks or a comment is left out.

    Only what is reached from the statement's value through displays, dicts and call arguments is narrowed, never
    the inside of an `if` expression (rules read the tests of conditional expressions), lambda, comprehension or
    subscript. Rules read a display's elements and a dict's entries only as ancestors of what they report
    (`pyhelpers.role_of`: a table, or the entry's own key), except RLC113, which reads the entries of a dict that
    is the value of a string key: such a dict is never narrowed. Of a call's arguments they read the positional ones
    (positions, dtype counts: none is left out, and keywords follow them) and a few keywords (`_READ_KEYWORDS`).
    Whatever is left out, CPython must parse the narrowed statement to the original AST less exactly those
    parts, or the statement is kept whole."""
    if not isinstance(stmt, _SIMPLE) or getattr(stmt, "value", None) is None:
        return set()
    words.enter(_span(stmt))
    dropped: set[int] = set()  # comment lines between children
    cut: list = []  # the elements, entries and keyword arguments left out
    removed: list[tuple[list, list]] = []  # (a display's elts, the elements left out of it)
    todo: list[tuple[ast.expr, list[ast.AST]]] = [(stmt.value, [stmt])]  # (node, its parents in the statement)
    while todo:
        node, parents = todo.pop()
        under = [*parents, node]
        if isinstance(node, ast.Call):
            out = [k for k in node.keywords if k.arg is not None and k.arg not in _READ_KEYWORDS
                   and not words.keep([k], under, lines)]
            if out:
                cut.extend(out)
                removed.append((node.keywords, out))
            left_out = {id(k) for k in out}
            todo.extend((a, under) for a in node.args)
            todo.extend((k.value, [*under, k]) for k in node.keywords if id(k) not in left_out)
            dropped.update(_comment_lines_between([*node.args, *node.keywords], lines))
        elif isinstance(node, ast.Dict):
            entries = [_Entry(k, v) for k, v in zip(node.keys, node.values) if k is not None]  # never a `**spread`
            out = [e for e in entries if not words.keep([e.key, e.value], under, lines)]
            if out and len(out) == len(entries):
                out = out[1:]  # a dict without a trigger keeps its first entry, as displays do
            if out:
                cut.extend(out)
                removed.append((node.keys, [e.key for e in out]))
                removed.append((node.values, [e.value for e in out]))
            left_out = {id(e.key) for e in out}
            # RLC113 reads the entries of a dict that is the value of a string key (DeepSpeed's
            # `"fp16": {"enabled": ...}`): such a dict is never narrowed.
            todo.extend((v, under) for k, v in zip(node.keys, node.values) if k is not None and id(k) not in left_out
                        and not (isinstance(v, ast.Dict) and isinstance(k, ast.Constant) and isinstance(k.value, str)))
            dropped.update(_comment_lines_between([*(e.key for e in entries), *node.values], lines))
        elif isinstance(node, _DISPLAYS):
            out = [e for e in node.elts if not words.keep([e], under, lines)]
            if out and len(out) == len(node.elts):
                out = out[1:]  # the first element stays: an empty display would not be the same kind of node
            if out and isinstance(node, ast.Tuple) and len(out) == len(node.elts) - 1 and not _comma_after(
                    next(e for e in node.elts if e not in out), lines):
                out = out[1:]  # `(x)` would be no tuple: one more element stays, with its comma
            left_out = {id(e) for e in out}
            kept = [e for e in node.elts if id(e) not in left_out]
            if not out:
                todo.extend((e, under) for e in node.elts)
                continue
            cut.extend(out)
            removed.append((node.elts, out))
            todo.extend((e, under) for e in kept)
            dropped.update(_comment_lines_between(node.elts, lines))
    if not dropped and not cut:
        return set()
    ranges: dict[int, list[tuple[int, int]]] = {}
    blanked = _blank(cut, lines, ranges)
    dropped.update(i for i, line in blanked.items() if _BLANK_OR_COMMENT.fullmatch(line))
    if not _parses_as_expected(stmt, _Lines(lines, blanked),
                               dropped, removed):
        return set()
    for i, line in blanked.items():
        lines[i] = line  # what is left out of a line that stays is blanked: columns stay where they were
        if i not in dropped:
            blanks.setdefault(i, []).extend(ranges[i])
    return dropped


class _Lines:
    """`lines` with some of them replaced, read by index."""

    def __init__(self, lines: list[str], replaced: dict[int, str]) -> None:
        self.lines, self.replaced = lines, replaced

    def __getitem__(self, i: int) -> str:
        return self.replaced.get(i, self.lines[i])


def _char_column(line: str, byte_column: int) -> int:
    return byte_column if line.isascii() else len(line.encode("utf-8")[:byte_column].decode("utf-8", "ignore"))


def _blank(cut: list, lines: list[str], ranges: dict[int, list[tuple[int, int]]]) -> dict[int, str]:
    """The lines of the parts left out, with each part and the comma after it (on its last line) blanked; the
    columns blanked go to `ranges`."""
    out: dict[int, str] = {}
    for node in cut:
        first, last = node.lineno - 1, node.end_lineno - 1
        start = _char_column(lines[first], node.col_offset)
        end_line = out.get(last, lines[last])
        end = _char_column(lines[last], node.end_col_offset)
        rest = end_line[end:]
        stripped = rest.lstrip(" \t")
        if stripped.startswith(","):
            end += len(rest) - len(stripped) + 1
        for i in range(first, last + 1):
            line = out.get(i, lines[i])
            body = len(line.rstrip("\r\n"))
            a, b = (start if i == first else 0), (end if i == last else body)
            out[i] = line[:a] + " " * (b - a) + line[b:]
            if b > a:
                ranges.setdefault(i, []).append((a, b))
    return out


class _Entry:
    """A dict entry's extent, from its key to its value."""

    def __init__(self, key: ast.expr, value: ast.expr) -> None:
        self.key, self.value = key, value
        self.lineno, self.col_offset = key.lineno, key.col_offset
        self.end_lineno, self.end_col_offset = value.end_lineno, value.end_col_offset


_BLANK_OR_COMMENT = re.compile(r"[ \t]*(?:#[^\r\n]*)?(?:\r\n|\r|\n)?")


def _comment_lines_between(children: list, lines: list[str]) -> list[int]:
    """Lines between two neighbouring arguments or elements that hold only blanks or a comment (no rule reads
    them; between two children they cannot be inside a string)."""
    ordered = sorted(children, key=lambda c: (c.lineno, c.col_offset))
    out = []
    for a, b in zip(ordered, ordered[1:]):
        out.extend(i for i in range(a.end_lineno, b.lineno - 1) if _BLANK_OR_COMMENT.fullmatch(lines[i]))
    return out


def _comma_after(node: ast.expr, lines: list[str]) -> bool:
    return lines[node.end_lineno - 1].encode("utf-8")[node.end_col_offset :].lstrip().startswith(b",")


def _parses_as_expected(stmt: ast.stmt, lines: _Lines, dropped: set[int], removed: list) -> bool:
    """The narrowed statement, parsed by CPython, is the original one without exactly the elements left out."""
    first, last = _start(stmt) - 1, (stmt.end_lineno or stmt.lineno) - 1
    text = "".join(lines[i] for i in range(first, last + 1) if i not in dropped)
    wrapped = text[:1] in (" ", "\t")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parsed = ast.parse("if 1:\n" + text if wrapped else text).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    got = parsed[0].body if wrapped else parsed
    saved = [(elts, list(elts)) for elts, _ in removed]
    try:
        for elts, out in removed:
            left_out = {id(e) for e in out}
            elts[:] = [e for e in elts if id(e) not in left_out]
        return len(got) == 1 and _same_tree(got[0], stmt)
    finally:
        for elts, original in saved:
            elts[:] = original


def _same_tree(a: ast.AST, b: ast.AST) -> bool:
    """`ast.dump(a) == ast.dump(b)` (node types and fields, not positions), without writing out either tree: the
    two are walked side by side and the walk stops at the first difference. A value that is not a node compares by
    type and value, and by `repr` where `==` says no (as `dump` writes it: a NaN equals itself there)."""
    todo = [(a, b)]
    pop, push, tree_node = todo.pop, todo.append, ast.AST
    while todo:
        x, y = pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, tree_node):
            for name in x._fields:
                push((getattr(x, name, None), getattr(y, name, None)))
        elif type(x) is list:
            if len(x) != len(y):
                return False
            todo.extend(zip(x, y))
        elif x != y and repr(x) != repr(y):
            return False
    return True
