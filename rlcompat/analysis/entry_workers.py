"""A worker class of the tree's own that a run's entry module picks by a setting's value, and the engine it builds.

A recipe's entry module may map a role to a worker of its own for one value of a key: General-Reasoner's
`main_ppo.py:143-144` (TIGER-AI-Lab/General-Reasoner@007e44c) imports `RewardModelWorker` from its `verifier.py`
when `config.reward_model.strategy == 'verifier'`, and that module imports vLLM (`verifier.py:6`; the engine is
built at :95). A command running that entry module with `reward_model.strategy=verifier` builds the engine: the
choice is where the hazard is reported (RLC401), as `rollout.name=vllm` is for verl's own rollout. Read with `ast`,
never imported. Only modules beside the entry module are followed (the tree's own code); a class whose module
imports no engine, or more than one, gives no claim.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from functools import lru_cache

from rlcompat.analysis.fork_rollouts import ENGINE_MODULES, imported_modules, parse


@dataclass(frozen=True)
class Choice:
    engine: str  # "vllm"
    cls: str  # "RewardModelWorker"
    where: str  # "main_ppo.py:143": the test that picks it, relative to the entry module's folder
    defined: str  # "verifier.py:81"
    files: tuple[str, ...]  # every file read for the answer, absolute
    needs: tuple[str, ...] = ()  # keys an enclosing `if config.a.b:` tests: the run must set each true


def entry_module(words: tuple[str, ...], script: str) -> str | None:
    """The file of the tree a command's `python -m M` (or `python M.py`) runs, looked up beside the script."""
    base = os.path.dirname(os.path.abspath(script))
    for i, word in enumerate(words[:-1]):
        if word == "-m" and os.path.basename(words[i - 1] if i else "").startswith("python"):
            parts = words[i + 1].split(".")
            for candidate in (os.path.join(base, *parts) + ".py", os.path.join(base, *parts, "__main__.py")):
                if os.path.isfile(candidate):
                    return candidate
            return None
    script_word = next((w for w in words if w.endswith(".py")), None)
    candidate = os.path.join(base, script_word) if script_word else None
    return candidate if candidate and os.path.isfile(candidate) else None


def chosen(entry: str, key: str, value: str) -> Choice | None:
    """The engine the entry module's own worker for `key` == `value` builds, or None."""
    return _table(os.path.abspath(entry), os.stat(entry).st_mtime_ns).get((key, value))


@lru_cache(maxsize=16)
def _table(entry: str, stamp: int) -> dict[tuple[str, str], Choice]:
    tree = parse(entry)
    found: dict[tuple[str, str], Choice] = {}
    if tree is not None:
        _walk(tree, (), entry, found)
    return found


def _walk(node: ast.AST, needs: tuple[str, ...], entry: str, found: dict) -> None:
    """Every branch picking a worker by a key's value, with the keys the `if`s around it test for truth."""
    picked = _picked(node)
    if picked is not None and picked not in found:
        for module, cls in _local_imports(node.body):
            defined = _defining(os.path.dirname(entry), module, cls)
            if defined is not None:
                engine, where, path = defined
                found[picked] = Choice(engine, cls, f"{os.path.basename(entry)}:{node.lineno}", where, (entry, path),
                                       needs)
                break
    if isinstance(node, ast.If):
        truth = _key(node.test)
        for child in node.body:
            _walk(child, needs + (truth,) if truth else needs, entry, found)
        for child in node.orelse:
            _walk(child, needs, entry, found)
        return
    for child in ast.iter_child_nodes(node):
        _walk(child, needs, entry, found)


def _picked(node: ast.AST) -> tuple[str, str] | None:
    """(dotted key, value) of `if <config>.a.b == "value":`: the key read after the config object (`config` or
    `self.config`)."""
    if not isinstance(node, ast.If):
        return None
    test = node.test
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
            and isinstance(test.comparators[0], ast.Constant) and isinstance(test.comparators[0].value, str)):
        return None
    key = _key(test.left)
    return (key, test.comparators[0].value) if key else None


def _key(node: ast.AST) -> str | None:
    """The dotted key `<config>.a.b` reads after the config object (`config`, `cfg` or `self.config`), two parts
    at least; None for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id == "self" and parts[:1] == ["config"]:
        parts = parts[1:]
    elif not (isinstance(node, ast.Name) and node.id in ("config", "cfg")):
        return None
    return ".".join(parts) if len(parts) >= 2 else None


def _local_imports(body: list[ast.stmt]):
    """(module, name) of each absolute `from module import name` the branch runs (a nested `if` not entered)."""
    for statement in body:
        if isinstance(statement, ast.ImportFrom) and statement.module and not statement.level:
            for alias in statement.names:
                yield statement.module, alias.name


def _defining(folder: str, module: str, cls: str) -> tuple[str, str, str] | None:
    """(engine, "file:line", path) where `module`, a file beside the entry module, defines `cls` and imports exactly
    one engine; None elsewhere (a framework's module, a re-export, no engine or several)."""
    path = os.path.join(folder, *module.split(".")) + ".py"
    tree = parse(path) if os.path.isfile(path) else None
    defined = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls), None) if tree else None
    if defined is None:
        return None
    engines = {ENGINE_MODULES[m] for m in imported_modules(tree) if m in ENGINE_MODULES}
    if len(engines) != 1:
        return None
    return engines.pop(), f"{os.path.relpath(path, folder)}:{defined.lineno}", path
