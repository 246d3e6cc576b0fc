"""The rollout names a verl fork's own worker code dispatches, and the engine each one runs.

A fork may add rollout names of its own: ReCall's `workers/fsdp_workers.py:322-324` builds `vLLMRolloutWithTool`
when `self.config.rollout.name == 'vllm_with_tool'`. No release's knowledge lists such a name, so RLC401 asks the
fork's code: a worker module of the package that compares the rollout name (`<...>.rollout.name`, or a variable
named `rollout_name`) with the name, or a module-level registry of `workers/rollout/` that maps it to a class path
(`{("vllm_tool", "async"): "verl.workers.rollout.x.ToolRollout"}`, as verl 0.5+'s `_ROLLOUT_REGISTRY`); the classes
the branch taken on that test imports (`from M import C`), or the registry's class, followed
through re-exports (`from .vllm_rollout_spmd import C` in a package's `__init__.py`) to the module that defines
`class C`, and the engine that module imports (`from vllm import LLM`: vLLM). Where the class could come from modules
importing different engines, or from none, nothing is claimed. Read with `ast`, never imported.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from functools import lru_cache

# The top-level Python package each rollout engine's distribution installs (vllm, sglang, tensorrt_llm), by the
# engine names of rlcompat/knowledge/data/capabilities.toml.
ENGINE_MODULES = {"vllm": "vllm", "sglang": "sglang", "tensorrt_llm": "trtllm"}
MAX_HOPS = 4  # re-exports followed from the branch's import to the class


@dataclass(frozen=True)
class Dispatch:
    name: str  # the rollout name the worker compares with: "vllm_with_tool"
    engine: str  # the engine the class runs: "vllm"
    cls: str  # "vLLMRolloutWithTool"
    where: str  # "workers/fsdp_workers.py:322", relative to the package
    defined: str  # "workers/rollout/vllm_rollout/vllm_rollout_spmd.py:307"
    files: tuple[str, ...]  # every file read for the answer, absolute


def dispatched(package: str, name: str) -> Dispatch | None:
    """The engine the fork at `package` (its verl package directory) runs for the rollout name `name`, or None."""
    workers = os.path.join(os.path.abspath(package), "workers")
    names = sorted(n for n in os.listdir(workers) if n.endswith(".py")) if os.path.isdir(workers) else []
    stamp = tuple(os.stat(os.path.join(workers, n)).st_mtime_ns for n in names)  # an edited worker is read again
    return _table(os.path.abspath(package), tuple(names), stamp).get(name)


@lru_cache(maxsize=16)
def _table(package: str, names: tuple[str, ...], stamp: tuple[int, ...]) -> dict[str, Dispatch]:
    found: dict[str, Dispatch] = {}
    workers = os.path.join(package, "workers")
    for file_name in names:
        path = os.path.join(workers, file_name)
        tree = parse(path)
        if tree is None:
            continue
        for name, branch, line in _name_tests(tree):
            if name in found:
                continue
            for module, cls in _imports(branch):
                defined = _defining(package, module, cls, (path,))
                if defined is not None:
                    engine, where, files = defined
                    found[name] = Dispatch(name, engine, cls, f"{os.path.relpath(path, package)}:{line}",
                                           where, files)
                    break
    registries = os.path.join(workers, "rollout")
    for file_name in sorted(os.listdir(registries)) if os.path.isdir(registries) else ():
        tree = parse(os.path.join(registries, file_name)) if file_name.endswith(".py") else None
        for name, module, cls, line in _registry_rows(tree) if tree is not None else ():
            defined = None if name in found else _defining(package, module, cls, (os.path.join(registries, file_name),))
            if defined is not None:
                engine, where, files = defined
                found[name] = Dispatch(name, engine, cls, f"workers/rollout/{file_name}:{line}", where, files)
    return found


def _registry_rows(tree: ast.Module):
    """(name, module, class, line) of each row of a module-level dict mapping a name (or a tuple led by one) to a
    dotted class path: `("vllm", "async"): "verl.workers.rollout.vllm_rollout.ServerAdapter"`."""
    for node in tree.body:
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        if not isinstance(value, ast.Dict):
            continue
        for key, path in zip(value.keys, value.values):
            if isinstance(key, ast.Tuple) and key.elts:
                key = key.elts[0]
            if (isinstance(key, ast.Constant) and isinstance(key.value, str) and isinstance(path, ast.Constant)
                    and isinstance(path.value, str) and path.value.count(".") >= 2):
                module, _, cls = path.value.rpartition(".")
                yield key.value, module, cls, key.lineno


def parse(path: str) -> ast.Module | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return ast.parse(fh.read())
    except (OSError, SyntaxError, ValueError):
        return None


def _is_rollout_name(node: ast.AST) -> bool:
    """`self.config.rollout.name`, `config.rollout.name`, or a variable `rollout_name`."""
    if isinstance(node, ast.Name):
        return node.id == "rollout_name"
    return (isinstance(node, ast.Attribute) and node.attr == "name" and isinstance(node.value, ast.Attribute)
            and node.value.attr == "rollout")


def _name_tests(tree: ast.Module):
    """(name, statements run when the test holds, line) of each `if <rollout name> == "name":`."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.If):
            continue
        test = node.test
        if (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
                and _is_rollout_name(test.left) and isinstance(test.comparators[0], ast.Constant)
                and isinstance(test.comparators[0].value, str)):
            yield test.comparators[0].value, node.body, node.lineno


def _imports(body: list[ast.stmt]):
    """(module, name) of each `from module import name` in the statements (a nested `if` not entered)."""
    for statement in body:
        if isinstance(statement, ast.ImportFrom) and statement.module and not statement.level:
            for alias in statement.names:
                yield statement.module, alias.name


def _module_file(package: str, module: str, base: str = "") -> str | None:
    """The file of `module` inside the package: `verl.workers.rollout.vllm_rollout` (absolute: its first part is the
    package), or relative to the directory `base` (a `from .x import C`, `module` then without its dot)."""
    parts = module.split(".")
    root = os.path.join(base, *parts) if base else os.path.join(package, *parts[1:])
    for candidate in (root + ".py", os.path.join(root, "__init__.py")):
        if os.path.isfile(candidate):
            return candidate
    return None


def _defining(package: str, module: str, cls: str, read: tuple[str, ...], hops: int = 0):
    """(engine, "file:line" relative to the package, files read) for the module defining `cls`, followed from
    `module` through re-exports; None where not found or where the candidates do not agree on one engine."""
    top = os.path.basename(package)  # "verl": an import from outside the package is not followed
    if hops > MAX_HOPS or not (module == top or module.startswith(top + ".")):
        return None
    path = _module_file(package, module)
    return _from_file(package, path, cls, read, hops) if path else None


def _from_file(package: str, path: str, cls: str, read: tuple[str, ...], hops: int):
    tree = parse(path)
    if tree is None:
        return None
    read = read + (path,)
    defined = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls), None)
    if defined is not None:
        engines = {ENGINE_MODULES[m] for m in imported_modules(tree) if m in ENGINE_MODULES}
        if len(engines) != 1:
            return None
        return engines.pop(), f"{os.path.relpath(path, package)}:{defined.lineno}", read
    answers = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or not any(a.name == cls for a in node.names):
            continue
        if node.level:
            base = os.path.dirname(path)
            for _ in range(node.level - 1):
                base = os.path.dirname(base)
            target = _module_file(package, node.module, base) if node.module else None
            answer = _from_file(package, target, cls, read, hops + 1) if target and hops < MAX_HOPS else None
        else:
            answer = _defining(package, node.module or "", cls, read, hops + 1)
        if answer is None:
            return None  # a candidate whose engine is not known: no claim
        answers.append(answer)
    if not answers or len({a[0] for a in answers}) != 1:
        return None
    files = tuple(dict.fromkeys(f for a in answers for f in a[2]))
    return answers[0][0], answers[0][1], files


def imported_modules(tree: ast.Module) -> set[str]:
    """The top-level packages a module imports anywhere (`from vllm.distributed import x` -> vllm)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found
