"""Where an expression's value is used, as `pyhelpers.role_of` says it, read from CPython's tree.

The narrowing reads CPython's tree, not LibCST's, and asks of a trigger inside a big statement whether a rule that
reports only in some roles (`Rule.reports_roles`) could report it there (lang/pyspeed/parts.py). So the kind of role
is computed here the way `role_of` computes it from LibCST's tree, with the tables they share;
tests/test_roles.py holds the two to the same kind on every expression of the fixtures and rule examples. This
module imports no LibCST: the narrowing runs before LibCST is loaded.
"""

from __future__ import annotations

import ast

# Calls whose positional arguments are read, printed or compared, never selected.
NON_SELECTING_CALLS = frozenset(
    {"print", "isinstance", "issubclass", "str", "repr", "format", "id", "hash", "type", "finfo", "iinfo",
     "debug", "info", "warning", "warn", "error", "exception", "critical", "log", "append_log", "assertEqual",
     "assertIs", "assertIn", "assert_close", "index", "count", "remove", "startswith", "endswith"}
)
# Methods whose positional argument at the given index is a default value.
DEFAULT_ARG_INDEX = {"get": 1, "pop": 1, "setdefault": 1, "getattr": 2, "get_or": 1}
DTYPE_NAMES = frozenset({"bfloat16", "float16", "half", "float32", "float", "float64", "double", "int8", "uint8",
                         "int16", "int32", "int64", "bool", "complex64", "complex128"})


def call_name(call: ast.Call) -> str:
    """`pyhelpers.call_name` of CPython's call: the last component of what is called."""
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


def kind_of(node: ast.AST, parents: list[ast.AST], text_at=None) -> str:
    """`role_of(node, ancestors).kind` for CPython's `node` under `parents` (nearest last). A dict entry with a
    string key gives "dict-value" where LibCST may say "table" (a key of implicitly joined strings, which
    `string_value` does not read): the kind that selects more, so that a caller that keeps what can be selected
    keeps it. `text_at(line, col)`: the source character at a position, to tell `d[(a, b)]` (a table) from
    `d[a, b]` (an index); without it such an element is an index."""
    child = node
    i = len(parents) - 1
    while i >= 0:
        parent = parents[i]
        if isinstance(parent, ast.IfExp) and child is not parent.test or isinstance(parent, ast.BoolOp):
            child, i = parent, i - 1
            continue
        break
    if i < 0:
        return "other"
    parent = parents[i]
    if isinstance(parent, ast.keyword):
        return "other" if parent.arg is None else "keyword"  # `**kwargs` is a star argument
    if isinstance(parent, ast.Call) and child is not parent.func:
        return _positional(child, parent)
    if isinstance(parent, (ast.Assign, ast.AnnAssign)) and child is parent.value:
        return "assign"
    if isinstance(parent, ast.arguments):
        return "param-default" if any(child is d for d in (*parent.defaults, *parent.kw_defaults)) else "other"
    if isinstance(parent, ast.Dict):
        for key, value in zip(parent.keys, parent.values):
            if child is value:
                if key is None:
                    return "other"  # `**spread`
                return "dict-value" if isinstance(key, ast.Constant) and isinstance(key.value, str) else "table"
        return "table"
    if isinstance(parent, ast.Compare):
        return "compare"
    if isinstance(parent, (ast.List, ast.Tuple, ast.Set)):
        holder = parents[i - 1] if i >= 1 else None
        if isinstance(holder, ast.Subscript) and parent is holder.slice:
            # `d[a, b]`: LibCST's subscript elements (an index); `d[(a, b)]`: a tuple in one (a table)
            parenthesized = text_at is not None and text_at(parent.lineno, parent.col_offset) == "("
            return "table" if parenthesized else "index"
        return "table"
    if isinstance(parent, ast.Return):
        return "return"
    if isinstance(parent, ast.Delete) and len(parent.targets) > 1:
        return "table"  # LibCST's `del a, b` deletes one tuple
    if isinstance(parent, ast.Subscript) and child is parent.slice:
        return "index"
    return "other"


def _positional(child: ast.AST, call: ast.Call) -> str:
    """The kind of a positional argument (a class's bases are no call's: `other`, as LibCST's args without one)."""
    position = next((n for n, a in enumerate(call.args) if a is child), -1)
    if position < 0:
        return "other"  # `*args` holds it
    name = call_name(call)
    if DEFAULT_ARG_INDEX.get(name) == position:
        return "default"
    if name in NON_SELECTING_CALLS:
        return "other"
    unnamed = [a.value if isinstance(a, ast.Starred) else a for a in call.args]
    unnamed += [k.value for k in call.keywords if k.arg is None]  # LibCST's `**kwargs` has no keyword either
    if "types" in name.lower() or sum(_is_dtype_attribute(a) for a in unnamed) >= 2:
        return "table"
    return "positional"


def _is_dtype_attribute(expr: ast.AST) -> bool:
    return isinstance(expr, ast.Attribute) and expr.attr in DTYPE_NAMES
