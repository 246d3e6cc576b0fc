"""Which worker class a fork's entry point maps a role to, for the values a run gives.

verl's entry point maps each role to a worker class (`role_worker_mapping[Role.RewardModel] = ray.remote(C)`); a
release's knowledge names the class its rows' code is in (`[[run_option]]` `code`, "workers/fsdp_workers.py:
RewardModelWorker._build_model"). A fork may map the same role to another class of its own under a test of a config
key: PRIME's main_ppo.py:192-205 maps the reward model to `PRIMERewardModelWorker` when `reward_model.rm_type ==
'prime'` (and to `RewardModelWorker` for 'normal'). `chosen_worker` reads those assignments with their enclosing
`if`/`elif` tests (read with `ast`, never imported) and says which class the run's values select, where that is another
class than the row's. Tests it reads: `config.a.b == 'v'`, `!=`, numeric comparisons with a literal, a bare
`config.a.b` (truthy), `not`, `and`/`or`; any other test is unknown and the choice is left unclaimed. `role_built`
reads the same tests to say whether an entry point builds a role at all for the run's values (verl 0.4.0 maps the
reference policy only with `use_kl_in_reward or use_kl_loss`).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class WorkerChoice:
    cls: str  # "PRIMERewardModelWorker"
    module: str  # where it is imported from: "verl.workers.fsdp_workers" ("" where not imported)
    line: int  # the entry point's line that maps it
    key: str  # the config key whose `==` test picks it: "reward_model.rm_type"
    value: str  # the value that test asks for: "prime"


def chosen_worker(text: str, row_class: str, values: Mapping[str, str | None]) -> WorkerChoice | None:
    """The class the run's `values` (full dotted key -> value) map the role of `row_class` to in the entry module
    `text`, when it is another class and every test on its way is known to hold; else None."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    by_role: dict[str, list[tuple[str, ast.Assign]]] = {}
    for node in ast.walk(tree):
        mapped = _mapping(node)
        if mapped is not None:
            by_role.setdefault(mapped[0], []).append((mapped[1], node))
    for assignments in by_role.values():
        if not any(cls == row_class for cls, _ in assignments):
            continue
        for cls, node in assignments:
            if cls == row_class:
                continue
            decided = _holds(node, parents, values)
            if decided is not None:
                key, value = decided
                return WorkerChoice(cls, _imported_from(node, parents, cls), node.lineno, key, value)
    return None


def role_built(text: str, role: str, values: Mapping[str, str | None]) -> bool:
    """Whether the entry module `text` maps `role` ("RefPolicy") to a worker for the run's `values`: False only where
    every `x[Role.<role>] = ...` sits under an `if` test known to skip it (verl 0.4.0 main_ppo.py:130-131 builds
    the reference policy only with `config.algorithm.use_kl_in_reward or config.actor_rollout_ref.actor.use_kl_loss`),
    or the module names the role nowhere in its code. An unreadable module, or a test it cannot decide, is True (no
    claim that the role is missing)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return True
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    assignments = [node for node in ast.walk(tree) if _role_target(node) == role]
    if not assignments:
        return any(isinstance(n, ast.Attribute) and n.attr == role and isinstance(n.value, ast.Name)
                   and n.value.id == "Role" for n in ast.walk(tree))
    return any(not _skipped(node, parents, values) for node in assignments)


def role_surely_built(text: str, role: str, values: Mapping[str, str | None]) -> bool:
    """Whether the entry module `text` maps `role` for the run's `values` with every enclosing `if` test known to
    take its branch (ReCall's main_ppo.py:149 `if config.algorithm.use_kl_in_reward or
    config.actor_rollout_ref.actor.use_kl_loss:` with use_kl_loss=True); a test it cannot decide is not enough."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    return any(_taken(node, parents, values) for node in ast.walk(tree) if _role_target(node) == role)


def _taken(node: ast.AST, parents: dict, values: Mapping[str, str | None]) -> bool:
    """Whether every enclosing `if` test is known to take the branch `node` is in."""
    child, parent = node, parents.get(node)
    while parent is not None and not isinstance(parent, ast.Module):
        if isinstance(parent, ast.If) and (child in parent.body or child in parent.orelse):
            if _evaluate(parent.test, values) != (child in parent.body):
                return False
        child, parent = parent, parents.get(parent)
    return True


def _role_target(node: ast.AST) -> str | None:
    """R of an assignment `x[Role.R] = anything`."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Subscript):
        key = node.targets[0].slice
        if isinstance(key, ast.Attribute) and isinstance(key.value, ast.Name) and key.value.id == "Role":
            return key.attr
    return None


def _skipped(node: ast.AST, parents: dict, values: Mapping[str, str | None]) -> bool:
    """Whether an enclosing `if` test is known to take the other branch than the one `node` is in."""
    child, parent = node, parents.get(node)
    while parent is not None and not isinstance(parent, ast.Module):
        if isinstance(parent, ast.If) and (child in parent.body or child in parent.orelse):
            result = _evaluate(parent.test, values)
            if result is not None and result != (child in parent.body):
                return True
        child, parent = parent, parents.get(parent)
    return False


def _mapping(node: ast.AST) -> tuple[str, str] | None:
    """(role, class) of `x[Role.R] = ray.remote(C)` or `x[Role.R] = C`."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Subscript)):
        return None
    role = node.targets[0].slice
    if not (isinstance(role, ast.Attribute) and isinstance(role.value, ast.Name) and role.value.id == "Role"):
        return None
    value = node.value
    if isinstance(value, ast.Call) and value.args and isinstance(value.func, ast.Attribute) and value.func.attr == "remote":
        value = value.args[0]
    return (role.attr, value.id) if isinstance(value, ast.Name) else None


def _holds(node: ast.AST, parents: dict, values: Mapping[str, str | None]) -> tuple[str, str] | None:
    """(key, value) of the innermost `config.KEY == 'V'` test that picks `node`, when every enclosing test is known
    to take the branch `node` is in; else None."""
    decided = None
    child, parent = node, parents.get(node)
    while parent is not None and not isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
        if isinstance(parent, ast.If):
            in_body = child in parent.body
            result = _evaluate(parent.test, values)
            if result is None or result != in_body:
                return None
            if in_body and decided is None:
                decided = _equality(parent.test, values)
        child, parent = parent, parents.get(parent)
    return decided


def _key(node: ast.AST) -> str | None:
    """`config.reward_model.rm_type` -> "reward_model.rm_type" (the first name is the config object)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join(reversed(parts)) if isinstance(node, ast.Name) and parts else None


def _value(values: Mapping[str, str | None], key: str | None) -> str | None:
    if key is None or key not in values or values[key] is None:
        return None
    return str(values[key]).strip().strip("'\"")


def _evaluate(test: ast.AST, values: Mapping[str, str | None]) -> bool | None:
    if isinstance(test, ast.BoolOp):
        results = [_evaluate(v, values) for v in test.values]
        if isinstance(test.op, ast.And):
            return False if False in results else (None if None in results else True)
        return True if True in results else (None if None in results else False)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _evaluate(test.operand, values)
        return None if inner is None else not inner
    if isinstance(test, ast.Attribute):
        value = _value(values, _key(test))
        return None if value is None else value.lower() not in ("false", "0", "0.0", "", "null", "none")
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.comparators[0], ast.Constant):
        value, literal = _value(values, _key(test.left)), test.comparators[0].value
        if value is None:
            return None
        op = test.ops[0]
        if isinstance(literal, str) and isinstance(op, (ast.Eq, ast.NotEq)):
            return (value == literal) == isinstance(op, ast.Eq)
        if isinstance(literal, (int, float)) and not isinstance(literal, bool):
            try:
                number = float(value)
            except ValueError:
                return None
            compare = {ast.Eq: number == literal, ast.NotEq: number != literal, ast.Gt: number > literal,
                       ast.GtE: number >= literal, ast.Lt: number < literal, ast.LtE: number <= literal}
            return compare.get(type(op))
    return None


def _equality(test: ast.AST, values: Mapping[str, str | None]) -> tuple[str, str] | None:
    tests = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    for t in tests:
        if (isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], ast.Eq)
                and isinstance(t.comparators[0], ast.Constant) and isinstance(t.comparators[0].value, str)):
            key = _key(t.left)
            if key is not None and _value(values, key) == t.comparators[0].value:
                return key, t.comparators[0].value
    return None


def _imported_from(node: ast.AST, parents: dict, cls: str) -> str:
    """The module a `from M import cls` in the same function (or module) imports `cls` from."""
    scope = node
    while scope in parents and not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        scope = parents[scope]
    for n in ast.walk(scope):
        if isinstance(n, ast.ImportFrom) and any((a.asname or a.name) == cls for a in n.names):
            return n.module or ""
    return ""
