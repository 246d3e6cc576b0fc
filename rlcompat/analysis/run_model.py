"""The run a launch script starts, and which findings it reaches (`rlcompat scan|fix|matrix --run LAUNCH.sh`).

A launch script's verl command runs an entry point of the verl package the script's tree runs (the tree's own, else
the installed one: rlcompat/analysis/run_package.py `package_run`), with the Hydra overrides the command passes. Which code of
that package the run reaches is worked out statically, from the package's knowledge
(rlcompat/knowledge/data/verl/<version>.toml):

- the modules the entry point imports at module level, transitively (read with `ast`; nothing is imported), plus the
  modules a `[[run_module]]` row adds when the command's config selects it (an engine, a trainer, a rollout that verl
  imports inside the function reading the key), and their imports;
- minus the files and functions of every `[[run_option]]` the config does not select (the Megatron engine when
  model_engine stays dp, the critic's value-head loader for GRPO, the checkpoint engines other than the one named).

A finding is reached unless one of these says otherwise (`NotReached.reason`): `option` (in code or a config only
another option's run reaches), `not-imported` (a Python file the run never imports), `overridden` (a config key the
command sets on its command line), `not-executed` (a trace of the run, `verify --trace`, shows its lines never ran).
Where the command's value for a key cannot be known (a shell variable), the option it would decide is taken as
selected: nothing is left out without a reason.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from functools import lru_cache

from rlcompat.knowledge import identity, verl_config
from rlcompat.analysis import command_config, run_config, run_scope
from rlcompat.findings import Finding
from rlcompat.pipeline.source import text_of

OPTION, NOT_IMPORTED, OVERRIDDEN, NOT_EXECUTED = "option", "not-imported", "overridden", "not-executed"
FALLBACK = "fallback"
REASONS = {
    OPTION: "in code only another run option reaches",
    NOT_IMPORTED: "in files the run never imports",
    FALLBACK: "in fallbacks that run only when an earlier call raises",
    OVERRIDDEN: "on config keys the command overrides",
    NOT_EXECUTED: "on lines the traced run never executed",
}


class RunError(Exception):
    """A launch script whose run cannot be worked out: one line naming the file and what to do."""


@dataclass(frozen=True)
class NotReached:
    reason: str  # one of REASONS
    detail: str  # the option's name, the key, the module ...


@dataclass
class Run:
    script: str
    package: str  # the verl package directory the command runs
    knowledge: verl_config.Knowledge
    entry: str
    overrides: dict[str, str | None]
    defaults: dict[str, str | None] | None = None  # a fork's own config values
    modules: frozenset[str] = frozenset()  # real paths of the package files the run imports
    left_out: tuple[verl_config.RunOption, ...] = ()  # options this run does not select
    selected: tuple[str, ...] = ()  # names of the options and modules it selects, for the report
    composed: run_config.Composed = field(default_factory=lambda: run_config.Composed(""))  # the config it composes
    command: str = ""  # the command line, where `--run` was given one instead of a script (`script` labels it)

    @property
    def config_name(self) -> str:
        return self.composed.name

    @property
    def label(self) -> str:
        """The script's path, or the command line in backquotes."""
        return f"`{' '.join(self.command.split())}`" if self.command else self.script

    def describe(self) -> str:
        picked = f"; selects {', '.join(self.selected)}" if self.selected else ""
        default = os.path.basename(self.knowledge.run_config)
        other = ""
        if self.config_name:
            unread = f", which rlcompat could not follow ({self.composed.unread})" if self.composed.unread else ""
            other = (f" (composes {self.config_name}, which composes {default})" if self.composed.known else
                     f" (composes {self.config_name}{unread}: what it leaves unset is not taken from {default})")
        return f"{self.label}: {self.entry} of verl {self.knowledge.version} at {self.package}{other}{picked}"

    def classify(self, finding: Finding) -> NotReached | None:
        """None when the run reaches `finding`, else why not."""
        full = os.path.realpath(finding.path)
        if not full.startswith(os.path.realpath(self.package) + os.sep):
            return None  # the script itself, or the user's own files: the run reads them
        relative = os.path.relpath(full, os.path.realpath(self.package)).replace(os.sep, "/")
        for option in self.left_out:
            if option.covers(relative) or any(_in_region(self.package, code, relative, finding.location.line)
                                              for code in option.functions + option.code):
                return NotReached(OPTION, option.name)
        if full.endswith(".py"):
            if full not in self.modules:
                return NotReached(NOT_IMPORTED, relative)
            guard = fallback_of(full, finding.location.line)
            return NotReached(FALLBACK, f"{relative}:{guard}") if guard else None
        if full.endswith((".yaml", ".yml")):
            key = _overridden_key(self, relative, finding)
            return NotReached(OVERRIDDEN, key) if key else None
        return NotReached(NOT_IMPORTED, relative)  # a file of the package no entry point runs (a script, a doc)


def resolve(script: str, tree_identity, text: str | None = None, command: bool = False) -> Run:
    """The run of `script`'s first verl command. `tree_identity`: the script's tree's identity (Checker.tree_identity);
    `text`: the script's text where it is not what is on disk (`fix --diff`: the fixed text, never written).
    `command`: `script` labels a command line given as `text` (`--run "python3 -m ... k=v"`), read as a one-line
    script of the directory `script` is in."""
    from rlcompat.lang import shell
    from rlcompat.analysis.run_package import fork_values, package_run
    from rlcompat.pipeline.scanned_file import ScannedFile

    what = "command line" if command else "launch script (bash)"
    text = text_of(script, "shell") if text is None else text
    if text is None:
        raise RunError(f"{script}: cannot be read; --run takes a launch script (bash) that runs verl's main_ppo")
    scanned = ScannedFile(script, tree_identity, text)
    package = package_run(scanned.framework(identity.VERL), tree_identity.root)
    if package is None:
        raise RunError(f"{script}: no verl package found for its run (neither in its tree nor installed, or the tree "
                       "pins another version); install verl or scan the tree that holds it")
    package_identity = identity.verl_package(package, tree_identity.root)
    knowledge = verl_config.knowledge_of(package_identity)
    try:
        parsed = shell.parse(text)
        commands = shell.entry_commands(parsed, scanned)
        arguments = shell.entry_arguments(parsed, scanned)
    except shell.ShellSyntaxError as exc:
        raise RunError(f"{script}: not a {what} rlcompat can read ({exc}); fix its syntax first")
    entries = ", ".join(knowledge.run_entry) or "an entry point"
    for (entry, _, settings), words in zip(commands, arguments):
        if not run_scope.runs_entry(knowledge, entry):
            if command:
                raise RunError(f"{script}: {entry} is not an entry point whose run rlcompat knows for verl "
                               f"{knowledge.version} (it knows {entries}); give the command that starts training")
            continue
        written = [(w.text, w.dynamic) for w in words]
        bad = run_config.malformed(written)
        if bad is not None:
            raise RunError(f"{script}: `{bad}` after {entry} is not a Hydra override (key=value, +key=value, "
                           "++key=value or ~key); fix it, as Hydra would refuse it")
        overrides = {s.key: s.value for s in settings if s.prefix != "~"}
        defaults = None if package_identity.exact else fork_values(package, knowledge)
        try:
            composed = run_config.compose(
                run_config.flags(written), package, run_config.entry_file(package, entry, knowledge),
                os.path.join(package, knowledge.run_config), [t for t, dynamic in written if not dynamic],
                os.path.dirname(os.path.abspath(script)), script)
        except run_config.ConfigError as exc:
            raise RunError(str(exc))
        refusals = [] if not package_identity.exact else command_config.command_refusals(
            script, package, knowledge, entry, written, settings, composed)
        if refusals:  # the same answer as a plain scan's RLC004 at that override: Hydra stops the run first
            raise RunError(f"{script}: {refusals[0].message()}")
        return _build(script, package, knowledge, entry, overrides, defaults, composed, text if command else "")
    if command:
        first = knowledge.run_entry[0] if knowledge.run_entry else "verl.trainer.main_ppo"
        raise RunError(f"{script}: runs no python entry point of verl; give the command that starts training "
                       f"(python3 -m {first} key=value ...)")
    raise RunError(f"{script}: runs no {entries} command; --run takes the launch script of a verl training run")


def _build(script, package, knowledge, entry, overrides, defaults, composed: run_config.Composed,
           command: str = "") -> Run:
    selected, left_out = [], []
    values = {**(defaults or {}), **composed.values} if composed.known else dict(composed.values)
    for option in knowledge.run_options:
        if run_scope.selects(option.when, knowledge, overrides, values, known_defaults=composed.known) is False:
            left_out.append(option)
        else:
            selected.append(option.name)
    roots = [m for m in knowledge.run_entry if run_config.runs_module(entry, m)] or list(knowledge.run_entry)
    for row in knowledge.run_modules:
        if run_scope.selects(row.when, knowledge, overrides, values, unconditional=True,
                             known_defaults=composed.known) is not False:
            roots += row.modules
            selected.append(row.name)
    excluded = [os.path.join(package, f) for o in left_out for f in o.files]
    modules = import_closure(package, tuple(roots), tuple(excluded))
    return Run(script, package, knowledge, entry, overrides, defaults, modules, tuple(left_out), tuple(selected),
               composed, command)


@lru_cache(maxsize=8)
def import_closure(package: str, roots: tuple[str, ...], excluded: tuple[str, ...] = ()) -> frozenset[str]:
    """Real paths of the package's files that importing `roots` (dotted names) imports: the module-level imports of
    each (those inside a function depend on what calls it: `[[run_module]]` rows name the ones a config selects),
    and each parent package's `__init__.py`. A file under `excluded` (paths; a folder ends its name) is not entered."""
    parent = os.path.dirname(os.path.realpath(package))
    top = os.path.basename(os.path.realpath(package))
    excluded = tuple(os.path.realpath(e) + (os.sep if e.endswith("/") else "") for e in excluded)
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            path = _module_file(parent, parts[:i])
            if path is None or path in seen or any(path == e or (e.endswith(os.sep) and path.startswith(e))
                                                   for e in excluded):
                continue
            seen.add(path)
            todo += [m for m in _module_imports(path, ".".join(parts[:i])) if m.split(".")[0] == top]
    return frozenset(seen)


def _module_file(parent: str, parts: list[str]) -> str | None:
    base = os.path.join(parent, *parts)
    for path in (os.path.join(base, "__init__.py"), base + ".py"):
        if os.path.isfile(path):
            return os.path.realpath(path)
    return None


@lru_cache(maxsize=4096)
def _module_imports(path: str, name: str) -> tuple[str, ...]:
    """The dotted names a module imports outside function bodies (an `import` in an `if` or `try` at module level
    counts: it runs on import)."""
    tree = _parse(path)
    if tree is None:
        return ()
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    out: list[str] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if isinstance(child, ast.Import):
                out += [a.name for a in child.names]
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    up = package.split(".")[:len(package.split(".")) - (child.level - 1)]
                    base = ".".join(up + ([base] if base else []))
                out.append(base)
                out += [f"{base}.{a.name}" for a in child.names if a.name != "*"]
            stack.append(child)
    return tuple(out)


def _in_region(package: str, code: str, relative: str, line: int) -> bool:
    """Whether `line` of the package file `relative` is inside `code` ("file:Qualified.name", optionally
    "|if TEST" or "|else TEST": the body or the else-branch of the `if` on TEST in that function)."""
    where, _, branch = code.partition("|")
    file, _, qualname = where.partition(":")
    if file != relative:
        return False
    lines = region_lines(os.path.join(package, file), qualname, branch.strip())
    return lines is not None and lines[0] <= line <= lines[1]


@lru_cache(maxsize=256)
def region_lines(path: str, qualname: str, branch: str = "") -> tuple[int, int] | None:
    """(first, last) line of the function `qualname` of a Python file, or of the branch of an `if` in it
    ("if TEST": its body; "else TEST": its else-branch, TEST as `ast.unparse` writes it); None where not found."""
    tree = _parse(os.path.realpath(path))
    if tree is None:
        return None
    node: ast.AST | None = tree
    for part in qualname.split(".") if qualname else ():
        node = next((n for n in getattr(node, "body", ()) if isinstance(
            n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == part), None)
        if node is None:
            return None
    if not branch:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())])
        return first, node.end_lineno or node.lineno
    kind, _, test = branch.partition(" ")
    for n in ast.walk(node):
        if isinstance(n, ast.If) and ast.unparse(n.test) == test.strip():
            body = n.body if kind == "if" else n.orelse
            if body:
                return body[0].lineno, max(b.end_lineno or b.lineno for b in body)
    return None


def fallback_of(path: str, line: int) -> int | None:
    """The line of the `try` whose failure alone leads to `line` of a Python file, or None: `line` is in an
    `except` body, or after a `try` whose body always returns or raises (so the statements after it run only
    through a handler). A `try` that guards an import (an import in its body, or a handler for ImportError or
    ModuleNotFoundError) is no fallback: a missing optional package is an ordinary state of an old GPU's machine."""
    return next((guard for first, last, guard in _fallback_regions(os.path.realpath(path)) if first <= line <= last),
                None)


IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError"}


@lru_cache(maxsize=1024)
def _fallback_regions(path: str) -> tuple[tuple[int, int, int], ...]:
    """(first, last, try line) of every fallback region of a Python file (`fallback_of`)."""
    tree = _parse(path)
    out: list[tuple[int, int, int]] = []
    for node in ast.walk(tree) if tree is not None else ():
        for block in _blocks(node):
            for i, stmt in enumerate(block):
                if not isinstance(stmt, ast.Try) or _guards_import(stmt):
                    continue
                for handler in stmt.handlers:
                    out.append((handler.body[0].lineno, _end(handler.body), stmt.lineno))
                if stmt.handlers and _exits(stmt.body) and i + 1 < len(block):
                    out.append((block[i + 1].lineno, _end(block[i + 1:]), stmt.lineno))
    return tuple(out)


def _blocks(node: ast.AST) -> list[list[ast.stmt]]:
    out = [getattr(node, f) for f in ("body", "orelse", "finalbody") if isinstance(getattr(node, f, None), list)]
    return [b for b in out if b and isinstance(b[0], ast.stmt)]


def _guards_import(node: ast.Try) -> bool:
    def imports(stmt: ast.AST) -> bool:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            return True
        return not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and any(
            imports(c) for c in ast.iter_child_nodes(stmt))

    def caught(handler: ast.ExceptHandler) -> set[str]:
        kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        return {k.id if isinstance(k, ast.Name) else getattr(k, "attr", "") for k in kinds if k is not None}

    return any(imports(s) for s in node.body) or any(caught(h) & IMPORT_ERRORS for h in node.handlers)


def _exits(body: list[ast.stmt]) -> bool:
    """Whether every way through `body` ends in a return or a raise."""
    last = body[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    if isinstance(last, ast.If):
        return bool(last.orelse) and _exits(last.body) and _exits(last.orelse)
    return False


def _end(block: list[ast.stmt]) -> int:
    return max(s.end_lineno or s.lineno for s in block)


def _overridden_key(run: Run, relative: str, finding: Finding) -> str:
    """The full key of a config finding that the command overrides, or that a config of the user's own the command
    composes sets (its line is judged there), or ""."""
    config = relative.split("/config/", 1)[-1] if "/config/" in relative else relative
    prefixes = run.knowledge.mounts.get(config, ())
    local = _yaml_key_at(os.path.join(run.package, relative), finding.location.line)
    if not local:
        return ""
    keys = [f"{p}.{local}" for p in prefixes] or [local]
    written = [*run.overrides, *run.composed.set_by]
    return next((k for k in keys if any(o == k or o.startswith(k + ".") for o in written)), "")


def _yaml_key_at(path: str, line: int) -> str:
    from rlcompat.lang import yaml

    text = text_of(path, "yaml")
    try:
        docs = yaml.parse(text) if text is not None else []
    except yaml.YamlSyntaxError:
        return ""
    return next((e.key for doc in docs for e in doc.entries if e.key_mark[0] + 1 == line), "")


@lru_cache(maxsize=4096)
def _parse(path: str) -> ast.AST | None:
    text = text_of(path, "python")
    try:
        return ast.parse(text) if text is not None else None
    except (SyntaxError, ValueError):
        return None



@dataclass
class Split:
    """Findings split by a run: reached ones, and the rest with why."""

    reached: list[Finding] = field(default_factory=list)
    not_reached: list[tuple[Finding, NotReached]] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for _, why in self.not_reached:
            out[why.reason] = out.get(why.reason, 0) + 1
        return out


def split(run: Run, findings, executed=None) -> Split:
    """`findings` split by `run`; `executed(finding) -> bool | None`: what a trace says of a finding (None: the
    trace cannot say, as for a config), applied to those the static model keeps."""
    out = Split()
    for f in findings:
        why = run.classify(f)
        if (why is None or why.reason == FALLBACK) and executed is not None and executed(f) is False:
            why = NotReached(NOT_EXECUTED, "")
        if why is None:
            out.reached.append(f)
        else:
            out.not_reached.append((f, why))
    return out


def not_reached_line(s: Split) -> str:
    """`Not reached by this run: 52 (40 in code only another run option reaches, ...).`, or "" when none."""
    n = len(s.not_reached)
    if not n:
        return ""
    parts = [f"{c} {REASONS[r]}" for r, c in sorted(s.counts().items(), key=lambda kv: -kv[1])]
    return f"Not reached by this run: {n} finding{'s' if n != 1 else ''} ({'; '.join(parts)})."
