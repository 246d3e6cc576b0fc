"""Whether a parameter's default can be in force: `def load(name, attn_implementation="flash_attention_2")` in a
training script whose every call passes `attn_implementation=` never runs with that default; the value each call
passes is judged where it is written (RLC101, RLC102, RLC201 ask `default_is_dead`).

Scope: where every call can be seen. The function (or the class whose `__init__` or method it is) is defined at the
top level of a *script*: a file with an `if __name__ == "__main__":` block, in a directory without `__init__.py`.
Such a file is a program, not a module of a package: no installed project exports it, so code reaches it only by
putting its directory on sys.path (a script beside it: `from train import load`) or through a namespace path from a
directory above it, both inside the tree it belongs to (identity.tree_root). Every Python file of that tree that
spells the name is read. A package's function is in that scope too where framework knowledge names its top-level
package closed (`closed_package`: align-anything, installed from its checkout and run through its own modules, whose
functions only its modules call). Anywhere else (a package's function: verl's, transformers', a recipe's own package)
the function has callers outside what rlcompat sees, and the finding stays.

In that scope the default is dead when the name is called at least once and every use of it is a call that passes
the argument, by keyword or at its position, without `*args`/`**kwargs` before it is known to be passed. A use that
is not a call (the function handed on as a value, `functools.partial`, a base class of a subclass whose
`super().__init__` may leave the default), a call that leaves the argument out or may, a decorator on the function or
its class (which may change how it is called), or a tree of over MAX_FILES Python files keeps the default alive. A
name the callee is bound to (`trainer_cls = A if vision else B`) is followed to its calls.

The tree's files are listed and each one's words read once per tree (`_index`), a file's uses of every name once per
file: a finding looks names up, it walks nothing. `clear_caches` forgets them (the language server, on a save).
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache

import libcst as cst

from rlcompat.knowledge.frameworks import closed_packages
from rlcompat.knowledge.identity import tree_root

MAX_FILES = 2000
_SKIP_DIRS = {"__pycache__", "node_modules", "site-packages", "build", "dist", "venv"}
_WORD = re.compile(r"[A-Za-z_]\w*")
_MAIN = re.compile(r"^if\s+__name__\s*==\s*['\"]__main__['\"]\s*:", re.MULTILINE)


def default_is_dead(ctx) -> bool:
    """For a Python rule's node inside a parameter's default: whether no call can leave that default in force."""
    param = next((n for n in reversed(ctx.ancestors) if isinstance(n, cst.Param)), None)
    if param is None or not ctx.path:
        return False
    directory = os.path.dirname(os.path.abspath(ctx.path))
    if os.path.exists(os.path.join(directory, "__init__.py")):
        if _top_package(directory) not in closed_packages():
            return False  # a package's module: its callers may be anywhere
    elif not _MAIN.search(ctx.source_text or ""):
        return False  # not a script: a module whose importers may be anywhere
    found = _callee(ctx.ancestors, param)
    if found is None:
        return False
    callee, name, position = found
    index = _index(tree_root(ctx.path))
    if index is None:
        return False
    own = os.path.abspath(ctx.path)
    files = [f for f in index.files_with(callee) if f != own]
    if ctx.scanned is not None and files:
        ctx.scanned.record_reads(files)  # the answer depends on them
    calls = 0
    for uses in [_own_uses(own, ctx.source_text)] + [index.uses(f) for f in files]:
        if uses is None:
            return False
        passed = _passed(uses, callee, name, position)
        if passed is None:
            return False
        calls += passed
    return calls > 0


def _top_package(directory: str) -> str:
    """The import name of the top-level package a package directory belongs to (the highest with `__init__.py`)."""
    while os.path.dirname(directory) != directory and os.path.exists(os.path.join(os.path.dirname(directory), "__init__.py")):
        directory = os.path.dirname(directory)
    return os.path.basename(directory)


def _callee(ancestors, param: cst.Param) -> tuple[str, str, int | None] | None:
    """(the name calls use, the parameter's name, its position among the arguments a call passes) for a parameter
    of a top-level function or of a method of a top-level class, None for anything else."""
    chain = [n for n in ancestors if isinstance(n, (cst.FunctionDef, cst.ClassDef, cst.Lambda))]
    if not chain or not isinstance(chain[-1], cst.FunctionDef) or len(chain) > 2:
        return None
    func = chain[-1]
    klass = chain[0] if len(chain) == 2 and isinstance(chain[0], cst.ClassDef) else None
    if len(chain) == 2 and klass is None:
        return None  # a function inside a function: its callers are local, but it may be returned
    top = ancestors[1] if len(ancestors) > 1 else None
    if top is not (klass or func) or func.decorators or (klass is not None and klass.decorators):
        return None
    params = list(func.params.posonly_params) + list(func.params.params)
    if klass is not None:
        params = params[1:]  # self
    position = next((i for i, p in enumerate(params) if p is param), None)
    if position is None and not any(p is param for p in func.params.kwonly_params):
        return None  # *args or **kwargs
    if klass is None:
        callee = func.name.value
    elif func.name.value == "__init__":
        callee = klass.name.value
    else:
        callee = func.name.value
    return callee, param.name.value, position


@dataclass
class _Tree:
    words: dict[str, frozenset[str]]  # file -> the identifiers it spells
    parsed: dict[str, "dict | None"] = field(default_factory=dict)  # file -> its uses of every name, once asked

    def files_with(self, name: str) -> list[str]:
        return [f for f, words in self.words.items() if name in words]

    def uses(self, path: str) -> "dict | None":
        if path not in self.parsed:
            try:
                with open(path, encoding="utf-8", errors="replace") as fh:
                    self.parsed[path] = _file_uses(fh.read())
            except OSError:
                self.parsed[path] = None
        return self.parsed[path]


@lru_cache(maxsize=16)
def _index(root: str) -> _Tree | None:
    """The tree's Python files and the words each spells; None for a tree of over MAX_FILES of them."""
    words: dict[str, frozenset[str]] = {}
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS and not d.startswith(".")]
        for f in files:
            if not f.endswith(".py"):
                continue
            if len(words) >= MAX_FILES:
                return None
            full = os.path.join(directory, f)
            try:
                with open(full, encoding="utf-8", errors="replace") as fh:
                    words[full] = frozenset(_WORD.findall(fh.read()))
            except OSError:
                continue
    return _Tree(words)


@lru_cache(maxsize=4)
def _own_uses(path: str, text: str) -> "dict | None":
    """The scanned file's uses, as its text is now (every parameter default of it asks)."""
    return _file_uses(text)


def _file_uses(text: str) -> "dict | None":
    """name -> its uses in a file: ("call", keywords passed, positional count, has a splat), ("value",), or
    ("alias", the name it is bound to); None for a file that does not parse."""
    try:
        module = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    uses: dict[str, list[tuple]] = {}
    callees: set[int] = set()
    for node in ast.walk(module):
        if isinstance(node, ast.Call):
            target = node.func
            name = _called_name(target)
            if name is None:
                continue
            callees.add(id(target))
            splat = any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords)
            uses.setdefault(name, []).append(
                ("call", frozenset(k.arg for k in node.keywords if k.arg), len(node.args), splat))
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            for value in _branches(node.value):
                if isinstance(value, ast.Name):
                    callees.add(id(value))
                    uses.setdefault(value.id, []).append(("alias", node.targets[0].id))
    for node in ast.walk(module):
        if id(node) in callees:
            continue
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store):
            uses.setdefault(node.id, []).append(("value",))
        elif isinstance(node, ast.Attribute):
            uses.setdefault(node.attr, []).append(("value",))
    return uses


def _called_name(target: ast.AST) -> str | None:
    if isinstance(target, ast.Name):
        return target.id
    return target.attr if isinstance(target, ast.Attribute) else None


def _branches(value: ast.AST) -> list[ast.AST]:
    """The values an expression may take: both arms of a conditional expression, nested."""
    if isinstance(value, ast.IfExp):
        return _branches(value.body) + _branches(value.orelse)
    return [value]


def _passed(uses: dict, callee: str, name: str, position: int | None, depth: int = 0) -> int | None:
    """How many calls of `callee` in a file pass the argument; None where some use may leave the default."""
    calls = 0
    for use in uses.get(callee, ()):
        if use[0] == "value":
            return None
        if use[0] == "alias":
            if depth >= 2 or use[1] == callee:
                return None
            more = _passed(uses, use[1], name, position, depth + 1)
            if more is None:
                return None
            calls += more
            continue
        _, keywords, positional, splat = use
        if name in keywords:
            calls += 1
        elif splat or position is None or positional <= position:
            return None
        else:
            calls += 1
    return calls


def clear_caches() -> None:
    """Forget every tree and file read (a long-running server whose files change)."""
    _index.cache_clear()
    _own_uses.cache_clear()
