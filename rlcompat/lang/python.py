"""The Python front end: one LibCST parse per file, one traversal dispatching to every rule.

Rules are classes with `visit_<NodeType>(self, node, ctx)` methods. The traversal keeps the ancestor
chain and the file's imports, so a rule can ask what an expression names (`ctx.qualname`) and where
it sits (`rlcompat.analysis.pyhelpers.role_of`). Positions are computed only for files with findings.

Config rules here read the file's Python settings; the training command a launcher hands a framework's launch helper
as strings (`U.execute_train(train_args=...)`) is read as shell by lang/pylaunch.py, whose shell config rules the runner
runs over it, not here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, Sequence

from rlcompat.lang import inline_script
from rlcompat.lang.scanned import ScannedView
from rlcompat.lang.pyspeed import batches, chunks, forked, heap, narrow as pynarrow, spelled
from rlcompat.lang.pyspeed.batches import Parts
from rlcompat.lang.pyspeed.lazy import lazy_import
from rlcompat.lang.pyspeed.narrow import Narrowed
from rlcompat.lang.pyspeed.parse import parse_module
from rlcompat.lang.pyspeed.walk import statements_to, walk
from rlcompat.lang.settings import ConfigRule, ConfigView
from rlcompat.lang.setup_deps import SETUP_PY_NAMES
from rlcompat.findings import Edit, Finding, Fix, FixSafety, Location
from rlcompat.rule import Rule
from rlcompat.lang.textpos import LineIndex


cst = lazy_import("libcst")  # loaded on first use: cached and trigger-free runs never parse Python


class PythonRule(Rule):
    """Base for rules over Python source. Subclasses define visit_<NodeType>(node, ctx)."""


@dataclass
class PendingFix:
    replacements: list[tuple[cst.CSTNode, str]]  # node -> its new source text
    safety: FixSafety
    description: str


@dataclass
class _Pending:
    rule: PythonRule
    node: cst.CSTNode
    message: str
    fix: PendingFix | None
    statements: tuple  # the statements holding the node, outermost first, for locating it cheaply
    severity: str = ""  # overrides the rule's severity for this finding ("warning": fails only on some releases)


class ImportMap:
    """Local name -> dotted name it is bound to by an import (`th` -> `torch`, `bf` -> `torch.bfloat16`)."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.module_level: dict[str, str] = {}  # bound for the whole file, usable by fixes anywhere

    def record(self, node: cst.Import | cst.ImportFrom, module_level: bool = True) -> None:
        before = dict(self.names)
        self._record(node)
        if module_level:
            self.module_level.update({k: v for k, v in self.names.items() if before.get(k) != v})

    def _record(self, node: cst.Import | cst.ImportFrom) -> None:
        if isinstance(node, cst.Import):
            for alias in node.names:
                dotted = _dotted(alias.name)
                if dotted is None:
                    continue
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    self.names[alias.asname.name.value] = dotted
                else:
                    top = dotted.split(".")[0]
                    self.names[top] = top
        elif node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return  # relative imports name this project's code, never torch or transformers
        else:
            module = _dotted(node.module)
            for alias in node.names:
                name = _dotted(alias.name)
                if module is None or name is None:
                    continue
                local = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else name
                self.names[local] = f"{module}.{name}"

    def local_name_for(self, dotted: str) -> str | None:
        """A name bound to `dotted` at module level (e.g. `th` for torch), if any: a fix may write it anywhere."""
        for local, full in self.module_level.items():
            if full == dotted:
                return local
        return None


def _dotted(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


class Context:
    """What a rule sees while the traversal is at a node."""

    def __init__(self, target, path: str, scanned: ScannedView | None = None) -> None:
        self.target = target
        self.path = path
        self.scanned = scanned  # the file as the runner scanned it: its tree's identity and framework knowledge
        self.imports = ImportMap()
        self.ancestors: list[cst.CSTNode] = []
        self.pending: list[_Pending] = []
        self._rule: PythonRule | None = None
        self.source_text = ""  # the whole file's text

    @property
    def verl(self):
        """verl's knowledge for the file's tree (rlcompat/knowledge/verl_config.py), None where the caller gave none."""
        return self.scanned.for_rules if self.scanned is not None else None

    def release(self, framework: str) -> str | None:
        """The release of `framework` the file's tree runs (its package, its pin, or the installed one for a file that
        uses it: rlcompat/knowledge/identity.py), or None where none is known."""
        return self.scanned.framework(framework).release if self.scanned is not None else None

    def model_shape(self, model_path: str):
        """The shape of the local model `model_path` names, looked for beside the file through its knowledge, which
        records the look-up (the result then depends on another file)."""
        return self.scanned.model_shape(model_path)

    def qualname(self, expr: cst.CSTNode) -> str | None:
        """The dotted name an expression refers to through this file's imports, or None.

        `th.bfloat16` with `import torch as th`, `bfloat16` with `from torch import bfloat16`, and
        `getattr(torch, "bfloat16")` all give `torch.bfloat16`.
        """
        if isinstance(expr, cst.Name):
            return self.imports.names.get(expr.value)
        if isinstance(expr, cst.Attribute):
            base = self.qualname(expr.value)
            return f"{base}.{expr.attr.value}" if base else None
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "getattr":
            if expr.func.value in self.imports.names or len(expr.args) < 2:
                return None  # `getattr` rebound by an import is not the builtin
            attr = expr.args[1].value
            if isinstance(attr, cst.SimpleString):
                base = self.qualname(expr.args[0].value)
                value = attr.evaluated_value
                return f"{base}.{value}" if base and isinstance(value, str) else None
        return None

    def top_level_trees(self):
        """CPython trees of the whole file's top-level statements, a few at a time (a big file's whole tree can be
        hundreds of MB), for a rule that must read beyond what the traversal was handed (the narrowing keeps only the
        statements a rule's words are in). Raises SyntaxError (or RecursionError) where CPython cannot parse it."""
        try:
            for chunk in chunks.chunks(self.source_text):
                yield chunk.tree
        except chunks.NotParsed as exc:
            raise SyntaxError(str(exc)) from exc

    def report(self, node: cst.CSTNode, message: str, fix: PendingFix | None = None, severity: str = "") -> None:
        assert self._rule is not None
        statements = tuple(a for a in self.ancestors if isinstance(a, cst.BaseStatement))
        self.pending.append(_Pending(self._rule, node, message, fix, statements, severity))


def _handlers(rules: Sequence[PythonRule], ctx: Context, table: dict | None = None) -> dict[type, list[tuple[PythonRule, Callable, Context]]]:
    table = {} if table is None else table
    for rule in rules:
        for attr in dir(type(rule)):
            if attr.startswith("visit_"):
                node_type = getattr(cst, attr[len("visit_"):])
                table.setdefault(node_type, []).append((rule, getattr(rule, attr), ctx))
    return table


class PythonSyntaxError(Exception):
    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


PARSE_ERRORS = (PythonSyntaxError,)


def narrow(text: str, rules: Sequence, file: ScannedView | None = None) -> Narrowed | None:
    """What LibCST parses: only for the Python rules (config rules read settings from CPython's `ast`, see
    lang/pysettings.py); nothing at all when only config rules run. What the pass over `text` learnt is kept in
    `file` (the file being checked) for its parse and check."""
    python_rules = [r for r in rules if not isinstance(r, ConfigRule)]
    if not python_rules:
        return Narrowed("", ())
    triggers = None  # the words that mark the statements whose settings are read in the same pass
    if chunks.in_chunks(text):
        # A big text's CPython tree is built a chunk at a time and let go: the settings are read from the same chunks.
        config = [r for r in rules if isinstance(r, ConfigRule) and "python" in r.languages]
        if any(r.reads_python(text, file) for r in config):
            triggers = _triggers(config)
    spells = _spelling(text, file)
    if file is not None and forked.worth_forking(text):
        got = forked.narrow(text, python_rules, triggers, spells)
        if got is not None:
            narrowed, seen = got
            if seen is not None:
                file.seen = seen
                _plan_cuts(narrowed, file)
            return narrowed
    readers = []
    if triggers is not None:
        from rlcompat.lang.pysettings import SettingsReading

        readers.append(SettingsReading(text, triggers, spells))
    if file is None:
        return pynarrow.narrow(text, python_rules, readers, spells=spells)

    def learnt(seen: chunks.Pass) -> None:
        file.seen = seen

    narrowed = pynarrow.narrow(text, python_rules, readers, learnt, spells)
    _plan_cuts(narrowed, file)
    return narrowed


def _spelling(text: str, file: ScannedView | None):
    """Whether `text` spells a word: from the runner's search over the file's text (`file.searched`) where `text` is
    that text, else searched for (lang/pyspeed/spelled.py)."""
    searched = getattr(file, "searched", None) if file is not None and text is getattr(file, "text", None) else None
    return spelled.spelling(text, searched)


def _plan_cuts(narrowed: Narrowed | None, file: ScannedView) -> None:
    """Where a big narrowed text may be cut (at the top-level statements the pass found), kept in `file` for its
    parse."""
    if narrowed is not None and file.seen is not None:
        file.planned = batches.plan_narrowed(narrowed.text, narrowed.lines, file.seen.spans)


def parse(text: str, file: ScannedView | None = None) -> cst.Module | Parts | None:
    """LibCST's module of `text`; for a big text its parts, parsed one at a time as they are walked
    (lang/pyspeed/batches.py: a whole file's tree can be hundreds of MB), cut where `file`'s narrowing pass found the
    top-level statements (its plan for the narrowed text serves one parse)."""
    planned = None
    if file is not None:
        planned, file.planned = file.planned, None
    if not text:
        return None  # nothing to parse (narrowed to nothing): no LibCST import, no statements, no findings
    seen = file.seen if file is not None else None
    parts = batches.split(text, lambda t: chunks.spans_of(t, seen), planned)
    return parts if parts is not None else parse_whole(text)


def parse_whole(text: str) -> cst.Module:
    """LibCST's module of all of `text` at once."""
    try:
        return parse_module(text)
    except cst.ParserSyntaxError as exc:
        # CPython's own parser places syntax errors more precisely than LibCST's; prefer its words and place.
        import ast

        try:
            ast.parse(text)
        except SyntaxError as py_exc:
            raise PythonSyntaxError(py_exc.msg, py_exc.lineno or 1, py_exc.offset or 1) from exc
        except (ValueError, RecursionError, MemoryError):
            pass
        raise PythonSyntaxError(exc.message, exc.raw_line, exc.raw_column + 1) from exc


def validate(text: str) -> None:
    """`PythonSyntaxError` where LibCST does not parse `text` (a fixed text, before it is written). A big text that
    CPython parses is parsed in the parts a scan walks, each let go before the next (LibCST's tree of a whole 3 MB
    file is 2.5 GB); the parts are cut between top-level statements, so they parse where the whole text does. A part
    that does not parse: the whole text, for the error as it places it."""
    parts = batches.split(text, chunks.spans_of)
    if parts is None:
        parse_whole(text)
        return
    for part in parts.parts:
        try:
            parse_module(part.text)
        except (cst.ParserSyntaxError, RecursionError):
            parse_whole(text)
            return


def syntax_error_location(exc: PythonSyntaxError) -> tuple[int, int, str]:
    return exc.line, exc.column, exc.message


def check(module: cst.Module | None, text: str, path: str, rules: Sequence, target,
          narrowed: Narrowed | None = None, *, scanned: ScannedView) -> list[Finding]:
    """Findings of Python rules (LibCST) and of config rules over the file's settings (lang/pysettings.py)."""
    return check_targets(module, text, path, [(rules, target)], narrowed, scanned=scanned)[0]


def check_targets(module: cst.Module | Parts | None, text: str, path: str, groups: Sequence[tuple[Sequence, object]],
                  narrowed: Narrowed | None = None, *, scanned: ScannedView) -> list[list[Finding]]:
    """`check` for several (rules, target) groups over one tree (`rlcompat matrix`): the Python rules of every group
    in one walk, then each group's config rules over the file's settings; a list of findings per group."""
    split = []
    for rules, target in groups:
        # The config rules that read Python (a launcher's shell config rules read its commands only: lang/pylaunch.py)
        config = [r for r in rules if isinstance(r, ConfigRule) and "python" in r.languages]
        # (Python rules, config rules, those that read this file's Python (asked once: `reads_python`), target)
        split.append(([r for r in rules if not isinstance(r, ConfigRule)], config,
                      [r for r in config if r.reads_python(text, scanned)], target))
    try:
        # The settings are read first, from the tree the narrowing step built (or, for a big text, as it read each
        # chunk), so that what it left (a tree costs 70 to 150 bytes a byte of source) need not live on beside
        # LibCST's parts of a big file.
        seen = scanned.seen
        settings = [_settings(text, config, seen, scanned) if reading else [] for _, config, reading, _ in split]
        if isinstance(module, Parts):
            scanned.seen = seen = None
        if module is not None and any(python_rules for python_rules, *_ in split):
            walked = _walk_targets(module, text, path, [(python_rules, target) for python_rules, _, _, target in split],
                                   narrowed, scanned)
        else:
            walked = [[] for _ in groups]
    finally:
        scanned.seen = None  # what the pass learnt (a whole CPython tree) is not held on while the walk's findings
        # are judged
        if isinstance(module, Parts):
            heap.give_back(text)
    found_by_group = [found + _config_findings(text, path, reading, found_settings,
                                               target, python_rules, found, scanned)
                      if found_settings or any(r.reads_parameters(text, scanned) for r in reading) else found
                      for (python_rules, _, reading, target), found_settings, found in zip(split, settings, walked)]
    setup_py, script = os.path.basename(path) in SETUP_PY_NAMES, inline_script.MARK in text
    if setup_py or script:
        found_by_group = [found + _declared_findings(text, path, config, target, scanned, setup_py, script)
                          for found, (_, config, _, target) in zip(found_by_group, split)]
    return found_by_group


def _declared_findings(text: str, path: str, config: Sequence[ConfigRule], target, scanned: ScannedView,
                       setup_py: bool, script: bool) -> list[Finding]:
    """What the file declares it installs, for the declared-environment rules: a setup.py's requirements
    (lang/setup_deps.py), a script's inline metadata (lang/inline_script.py)."""
    from rlcompat.lang.declared import DeclaredRule
    from rlcompat.lang.setup_deps import check_setup_py

    declared = [r for r in config if isinstance(r, DeclaredRule)]
    if not declared:
        return []
    return ((check_setup_py(text, path, declared, target, scanned) if setup_py else [])
            + (inline_script.check_script(text, path, declared, target, scanned) if script else []))


def _settings(text: str, config: Sequence[ConfigRule], seen, scanned: ScannedView) -> list:
    """The file's settings, read once for every config rule (with the triggers of all of them): asked where a rule
    reads this file's Python (`reads_python`: a framework's keys the file spells); `seen`: what the narrowing's pass
    over the text learnt."""
    from rlcompat.lang.pysettings import settings_of

    return settings_of(text, _triggers(config), seen, _spelling(text, scanned))


def _triggers(config: Sequence[ConfigRule]) -> tuple[str, ...]:
    """The words that mark the statements the settings are read from."""
    return tuple({t for r in config for t in r.python_triggers})


def _config_findings(text: str, path: str, config: Sequence[ConfigRule], settings: list, target, python_rules: Sequence,
                     python_found: list[Finding], scanned: ScannedView) -> list[Finding]:
    """The config rules' findings over the file's settings, less those the runner's layer finds a Python rule reports
    already (`scanned.settle_python_overlaps`: one hazard, one finding)."""
    found = scanned.run_config_rules([ConfigView("python", settings)], text, path, config, target)
    return scanned.settle_python_overlaps(found, python_found, text, path, target, python_rules) if found else found


def check_python(module: cst.Module, text: str, path: str, rules: Sequence[PythonRule], target,
                 narrowed: Narrowed | None = None, scanned: ScannedView | None = None) -> list[Finding]:
    """Findings in `text`. With `narrowed`, `module` was parsed from `narrowed.text` (lang/pyspeed/narrow.py): positions
    are found there and mapped back to `text` line by line (columns are the same)."""
    return _walk_targets(module, text, path, [(rules, target)], narrowed, scanned)[0]


class _NeedsWholeFile(Exception):
    """A reported node spans lines or parts the narrowing left out: only the whole file gives its extent and code."""


class _NeedsWholeModule(Exception):
    """A node was reported outside the part being walked: the module is walked whole."""


def _walk_targets(module: cst.Module | Parts, text: str, path: str, groups: Sequence[tuple[Sequence[PythonRule], object]],
                  narrowed: Narrowed | None = None, scanned: ScannedView | None = None) -> list[list[Finding]]:
    """The Python rules of several (rules, target) groups over one tree: one walk and one position lookup for all
    of them; a list of findings per group. Each group's rules see their own target in their context and report
    into their own list; the walk's ancestors and imports are the same for all."""
    if isinstance(module, Parts):
        # A narrowed text is one where no rule that reads the whole module can match (lang/pyspeed/narrow.py).
        if narrowed is None and any(batches.reads_whole_module(rules, text) for rules, _ in groups):
            return _walk_unsplit(module, text, path, groups, narrowed, scanned)
        return _walk_parts(module, text, path, groups, narrowed, scanned)
    contexts, handlers = _contexts(groups, path, text, scanned)
    walk(module, handlers, contexts[0])
    try:
        return _found(module, narrowed.text if narrowed else text, contexts, narrowed, 0, lambda: LineIndex(text))
    except _NeedsWholeFile:
        return _walk_targets(parse(text, scanned), text, path, groups, None, scanned)


def _contexts(groups: Sequence[tuple[Sequence[PythonRule], object]], path: str, text: str,
              scanned: ScannedView | None = None) -> tuple[list[Context], dict]:
    contexts = [Context(target, path, scanned) for _, target in groups]
    for ctx in contexts:
        ctx.source_text = text  # the whole file (the walked module may be narrowed), for a rule that must read it all
    handlers: dict = {}
    for (rules, _), ctx in zip(groups, contexts):
        ctx.imports, ctx.ancestors = contexts[0].imports, contexts[0].ancestors
        _handlers(rules, ctx, handlers)
    return contexts, handlers


def _walk_parts(parts: Parts, text: str, path: str, groups: Sequence[tuple[Sequence[PythonRule], object]],
                narrowed: Narrowed | None, scanned: ScannedView | None = None) -> list[list[Finding]]:
    """The walk over a big text's parts (lang/pyspeed/batches.py): each part parsed, walked and its findings located,
    then dropped before the next; the context (imports above all) goes on from part to part."""
    contexts, handlers = _contexts(groups, path, text, scanned)
    found: list[list[Finding]] = [[] for _ in groups]
    index: list[LineIndex] = []

    def text_index() -> LineIndex:
        if not index:
            index.append(LineIndex(text))
        return index[0]

    for part in parts.parts:
        try:
            module = parse_module(part.text)
        except (cst.ParserSyntaxError, RecursionError):
            return _walk_unsplit(parts, text, path, groups, narrowed, scanned)
        walk(module, handlers, contexts[0])
        try:
            part_found = _found(module, part.text, contexts, narrowed, part.first_line - 1, text_index, in_part=True)
        except _NeedsWholeModule:
            return _walk_unsplit(parts, text, path, groups, narrowed, scanned)
        except _NeedsWholeFile:
            return _walk_targets(parse(text, scanned), text, path, groups, None, scanned)
        for mine, more, ctx in zip(found, part_found, contexts):
            mine.extend(more)
            ctx.pending = []  # what holds the part's nodes: let its tree go before the next part is parsed
        del module
    return found


def _walk_unsplit(parts: Parts, text: str, path: str, groups: Sequence[tuple[Sequence[PythonRule], object]],
                  narrowed: Narrowed | None, scanned: ScannedView | None = None) -> list[list[Finding]]:
    """The walk over the whole module that `parts` were cut from. Where LibCST does not parse it, what the runner
    does when a text does not parse: the whole file if `parts` are of the narrowed text, else the error."""
    try:
        module = parse_whole(parts.text)
    except (PythonSyntaxError, RecursionError):
        if narrowed is None:
            raise
        return _walk_targets(parse(text, scanned), text, path, groups, None, scanned)
    return _walk_targets(module, text, path, groups, narrowed, scanned)


def _found(module: cst.Module, located_text: str, contexts: list[Context], narrowed: Narrowed | None, shift: int,
           text_index: Callable[[], LineIndex], in_part: bool = False) -> list[list[Finding]]:
    """The findings the walk of `module` reported, located in `located_text` (the text `module` was parsed from,
    which starts on line `shift` + 1 of the narrowed text, or of the file's text)."""
    pending = [p for ctx in contexts for p in ctx.pending]
    if not pending:
        return [[] for _ in contexts]
    requests = [(p.node, p.statements) for p in pending]
    requests += [(n, p.statements) for p in pending if p.fix for n, _ in p.fix.replacements]
    # A rule may report a node outside the statement it was visiting (RLC301: a `triton.Config` in a module-level
    # list the decorator names); find that node's own statements rather than locating in the whole module.
    unplaced = [n for n, chain in requests if not chain]
    if unplaced:
        chains = statements_to(module, unplaced)
        if in_part and any(id(n) not in chains for n in unplaced):
            raise _NeedsWholeModule
        requests = [(n, chain or chains.get(id(n), ())) for n, chain in requests]
    from rlcompat.lang.pyspeed.positions import locate

    positions = locate(module, located_text, requests)
    original = narrowed.original_line if narrowed else (lambda n: n)
    line = (lambda n: original(n + shift)) if shift else original
    if narrowed and any(line(r.end.line) - line(r.start.line) != r.end.line - r.start.line
                        or narrowed.covers_blanked((r.start.line + shift, r.start.column), (r.end.line + shift, r.end.column))
                        for r in positions.values()):
        raise _NeedsWholeFile
    index = text_index()
    shared: dict[str, str] = {}
    return [[_finding(p, positions, line, index, ctx.path, ctx.target, shared) for p in ctx.pending] for ctx in contexts]


def _finding(p: _Pending, positions: dict, line: Callable[[int], int], index: LineIndex, path: str, target,
             shared: dict[str, str]) -> Finding:
    """`shared`: one string object for equal messages and fix descriptions (rules format one per finding; a file
    can have thousands that read the same)."""
    rng = positions[p.node]
    start = line(rng.start.line)
    end = start if rng.end.line == rng.start.line else line(rng.end.line)
    loc = Location(start, rng.start.column + 1, end, rng.end.column + 1)
    fix = None
    if p.fix is not None:
        edits = []
        for node, new_text in p.fix.replacements:
            r = positions[node]
            edits.append(Edit(index.offset(line(r.start.line), r.start.column),
                              index.offset(line(r.end.line), r.end.column), new_text))
        fix = Fix(tuple(sorted(edits)), p.fix.safety, shared.setdefault(p.fix.description, p.fix.description))
    return Finding(
        code=p.rule.code,
        name=p.rule.name,
        message=shared.setdefault(p.message, p.message),
        path=path,
        location=loc,
        target=target.name,
        severity=p.severity or p.rule.severity,
        fix=fix,
        source_line=index.line_text(loc.line),
    )
