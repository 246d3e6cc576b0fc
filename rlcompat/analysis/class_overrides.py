"""Class-body field defaults that no run of the scanned tree uses.

A config class's default (`vllm_num_engines: int = 4` in Open-Reasoner-Zero's `BasePPOExpConfig`,
orz/exps/examples/ppo/ppo_base_exp.py:32) is what a run gets only through an instance that does not set the field
itself. Python looks a class attribute up on the instance's class first, then along its bases (the method resolution
order: https://docs.python.org/3/reference/datamodel.html#custom-classes), and a dataclass takes each field's default
from the class that last defines it (https://docs.python.org/3/library/dataclasses.html#inheritance). So where every
class of the tree that derives from it sets the field in its own body (or derives from one that does), and the tree
never builds the class itself, the default reaches no run: the subclasses' values are the ones judged, where they are
written (each playground config of Open-Reasoner-Zero sets `vllm_num_engines`).

The tree's Python files are read as text (class headers and the names called), never imported; a tree bigger than
`MAX_FILES` files or `MAX_BYTES` bytes is not read, and every default is then taken to be used, as before. Classes are
matched by their last name (`orz.exps.BaseConfig` and `BaseConfig` are the same), so two classes of one name count as
one: a subclass of either keeps the default live unless it sets the field.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from functools import lru_cache

MAX_FILES = 4000
MAX_BYTES = 64 * 1024 * 1024
_SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", "site-packages", "dist-packages"})
_HEADER = re.compile(r"^[ \t]*class[ \t]+(\w+)[ \t]*\(([^)]*)\)[ \t]*:", re.M)


@dataclass(frozen=True)
class _Index:
    headers: tuple[tuple[str, str, tuple[str, ...]], ...]  # (file, class, its bases' last names)
    texts: tuple[str, ...]  # the files' texts, for the names a query asks whether the tree calls

    def calls(self, name: str) -> bool:
        """Whether the tree calls `name` (`Config(...)`, `mod.Config(...)`), its class headers aside."""
        return any(name in text and _called(name).search(text) for text in self.texts)


@lru_cache(maxsize=256)
def _called(name: str) -> re.Pattern:
    return re.compile(r"(?<!\w)(?<!class )" + re.escape(name) + r"[ \t]*\(")


def overridden_everywhere(root: str, cls: str, field: str) -> tuple[str, ...] | None:
    """The files of the subclasses that set `field` where every subclass of `cls` in the tree at `root` sets it (or
    derives from one that does) and the tree never calls `cls` itself; None where a run can get `cls`'s default (no
    subclass, one that leaves the field, `cls(...)` called, a tree too big to read)."""
    index = _index(os.path.abspath(root)) if root else None
    if index is None:
        return None
    children: dict[str, list[tuple[str, str]]] = {}
    for path, name, bases in index.headers:
        for base in bases:
            children.setdefault(base, []).append((path, name))
    if not children.get(cls) or index.calls(cls):
        return None
    files: set[str] = set()

    def covered(name: str, seen: frozenset[str]) -> bool:
        """Whether no run of a class derived from `name` (none of which set the field above it) gets the default."""
        subs = children.get(name, [])
        if not subs or name in seen:
            return False
        for path, sub in subs:
            if _sets(path, sub, field):
                files.add(path)
            elif index.calls(sub) or not covered(sub, seen | {name}):
                return False
        return True

    return tuple(sorted(files)) if covered(cls, frozenset()) else None


@lru_cache(maxsize=4)
def _index(root: str) -> _Index | None:
    """The class headers and texts of the tree's Python files (read once per tree and process)."""
    headers, texts, count, size = [], [], 0, 0
    for directory, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in _SKIPPED_DIRS]
        for name in names:
            if not name.endswith(".py"):
                continue
            path = os.path.join(directory, name)
            count += 1
            try:
                size += os.path.getsize(path)
                if count > MAX_FILES or size > MAX_BYTES:
                    return None
                with open(path, encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
            except OSError:
                continue
            for m in _HEADER.finditer(text):
                bases = tuple(b.strip().rsplit(".", 1)[-1] for b in m.group(2).split(",") if b.strip()
                              and "=" not in b)
                headers.append((path, m.group(1), bases))
            texts.append(text)
    return _Index(tuple(headers), tuple(texts))


def _sets(path: str, cls: str, field: str) -> bool:
    """Whether class `cls` of the file at `path` sets `field` in its own body (`field: int = 2`, `field = 2`)."""
    for node in _classes(path).get(cls, ()):
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and stmt.value is not None and isinstance(stmt.target, ast.Name) \
                    and stmt.target.id == field:
                return True
            if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == field for t in stmt.targets):
                return True
    return False


@lru_cache(maxsize=64)
def _classes(path: str) -> dict[str, tuple[ast.ClassDef, ...]]:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            tree = ast.parse(fh.read())
    except (OSError, SyntaxError, ValueError):
        return {}
    found: dict[str, list[ast.ClassDef]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            found.setdefault(node.name, []).append(node)
    return {name: tuple(nodes) for name, nodes in found.items()}
