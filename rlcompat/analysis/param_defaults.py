"""Whether a parameter's default is ever in force: a recipe's trainer class written as
`def __init__(self, ..., attn_implementation="flash_attention_2")` and built once, by its entry point, with
`attn_implementation=model_args.attn_implementation`, never runs with that default; the value the caller passes is
the one to judge, where it is written.

The tree's Python files are read for the function's name (the class's, for `__init__`). The default is called
overridden only when every use of that name is a call that passes the argument, by keyword or at its position, and
there is at least one: a use that is not a call (the class handed on as a value, `functools.partial(f, ...)`), a call
with `*args`/`**kwargs` that may or may not carry it, or a subclass (its `super().__init__(...)` may leave the default)
keeps the default in force. Trees over `MAX_FILES` Python files (a framework's own source, not a recipe) are not
searched: their functions have callers outside the tree.
"""

from __future__ import annotations

import ast
import os
import re

import libcst as cst

MAX_FILES = 1500
_SKIP_DIRS = {".git", "__pycache__", "node_modules", ".venv", "venv", "site-packages", "build", "dist"}
_TEXTS: dict[str, tuple[tuple[int, int], str]] = {}


def overridden_by_every_caller(ancestors, param: cst.Param, path: str | None, record=None) -> bool:
    """True where the default of `param` (a parameter of the innermost function in `ancestors`) is passed by every
    call of that function in the tree `path` belongs to. `record` gets the files read (a cached result depends on
    them)."""
    if not path or not os.path.isfile(path):
        return False
    func, klass = _enclosing(ancestors)
    if func is None:
        return False
    method = klass is not None
    if func.name.value == "__init__":
        if klass is None:
            return False
        callee = klass.name.value
    else:
        callee = func.name.value
    position = _position(func, param, skip_first=method and not _is_static(func))
    from rlcompat.knowledge.identity import tree_root

    texts = _tree_texts(tree_root(path))
    if texts is None:
        return False
    word = re.compile(rf"\b{re.escape(callee)}\b")
    calls = 0
    read = []
    for file, text in texts.items():
        if not word.search(text):
            continue
        read.append(file)
        try:
            module = ast.parse(text)
        except (SyntaxError, ValueError):
            return False
        verdict = _uses(module, callee, param.name.value, position)
        if verdict is None:
            if record is not None:
                record(read)
            return False
        calls += verdict
    if record is not None:
        record(read)
    return calls > 0


def _enclosing(ancestors):
    func = klass = None
    for node in reversed(ancestors):
        if func is None and isinstance(node, cst.FunctionDef):
            func = node
        elif func is not None and isinstance(node, cst.ClassDef):
            klass = node
            break
        elif func is not None and isinstance(node, cst.FunctionDef):
            break  # a nested function: its callers are local
    return func, klass


def _is_static(func: cst.FunctionDef) -> bool:
    return any(isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod" for d in func.decorators)


def _position(func: cst.FunctionDef, param: cst.Param, skip_first: bool) -> int | None:
    """The parameter's index among the positional arguments a call passes (None for keyword-only)."""
    params = list(func.params.posonly_params) + list(func.params.params)
    if skip_first and params:
        params = params[1:]
    for i, p in enumerate(params):
        if p is param:
            return i
    return None


def _uses(module: ast.Module, callee: str, name: str, position: int | None, depth: int = 0) -> int | None:
    """The calls of `callee` in `module` that pass the argument; None where some use may leave the default. A name
    bound to the callee (`trainer_cls = A if vision else B`) is followed to its own calls."""
    calls = 0
    seen = set()
    for node in ast.walk(module):
        if isinstance(node, ast.Call):
            target = node.func
            hit = (isinstance(target, ast.Name) and target.id == callee) or (
                isinstance(target, ast.Attribute) and target.attr == callee)
            if not hit:
                continue
            seen.add(id(target))
            if any(k.arg == name for k in node.keywords):
                calls += 1
                continue
            starred = any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords)
            if starred or position is None or len(node.args) <= position:
                return None
            calls += 1
        elif isinstance(node, ast.ClassDef) and any(
                (isinstance(b, ast.Name) and b.id == callee) or (isinstance(b, ast.Attribute) and b.attr == callee)
                for b in node.bases):
            return None
        elif isinstance(node, ast.Assign) and depth < 2 and len(node.targets) == 1 and isinstance(
                node.targets[0], ast.Name) and node.targets[0].id != callee:
            bound = [v for v in _branches(node.value) if isinstance(v, ast.Name) and v.id == callee]
            if bound:
                alias = _uses(module, node.targets[0].id, name, position, depth + 1)
                if alias is None:
                    return None
                calls += alias
                seen.update(id(v) for v in bound)
    for node in ast.walk(module):
        if isinstance(node, ast.Name) and node.id == callee and id(node) not in seen and not isinstance(
                node.ctx, ast.Store):
            return None
        if isinstance(node, ast.Attribute) and node.attr == callee and id(node) not in seen:
            return None
    return calls


def _branches(value: ast.AST) -> list[ast.AST]:
    """The values an expression may take: both arms of a conditional expression, nested."""
    if isinstance(value, ast.IfExp):
        return _branches(value.body) + _branches(value.orelse)
    return [value]


def _tree_texts(root: str) -> dict[str, str] | None:
    """The tree's Python files and their texts (None for a tree over MAX_FILES); a file is read again only when its
    size or modification time changed since the last look (a long-running server scans edited trees)."""
    texts: dict[str, str] = {}
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS and not d.startswith(".")]
        for f in files:
            if not f.endswith(".py"):
                continue
            if len(texts) >= MAX_FILES:
                return None
            full = os.path.join(directory, f)
            try:
                st = os.stat(full)
                stamp = (st.st_mtime_ns, st.st_size)
                known = _TEXTS.get(full)
                if known is None or known[0] != stamp:
                    with open(full, encoding="utf-8", errors="replace") as fh:
                        known = _TEXTS[full] = (stamp, fh.read())
            except OSError:
                continue
            texts[full] = known[1]
    return texts


def default_never_used(ctx) -> bool:
    """For a Python rule's node inside a parameter's default: whether every caller in the tree passes that argument."""
    param = next((n for n in reversed(ctx.ancestors) if isinstance(n, cst.Param)), None)
    if param is None:
        return False
    return overridden_by_every_caller(ctx.ancestors, param, ctx.path, getattr(ctx, "record_reads", None))
