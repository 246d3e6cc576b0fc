"""Numbers a Python scope computes from literals, followed without running anything: `total_num_nodes = 8` at module
level (or `total_num_nodes: int = 32 if not DEBUG else 8` earlier in a class body), then `vllm_num_engines: int =
total_num_nodes`. lang/pysettings.py gives such a field its value (issue 28: a computed default that selects an
engine).

A name is followed only where it is bound once, in straight-line code of its scope, to a number or to arithmetic
(`+ - * / // % **`, unary minus) over numbers and names followed the same way; a conditional expression whose test is
not known gives each arm's values (`32 if not DEBUG else 8` is 32 or 8). A name bound twice, inside an `if`, loop,
`try` or `with`, by an import, a `def`, a `class`, a tuple target or an augmented assignment, or declared `global` in
a function (which may rebind it), has no value: which binding is in force would take running the code. A class body
reads its own earlier names first, then the module's.
"""

from __future__ import annotations

import ast
import itertools
import operator
import re

MAX_VALUES = 8  # more combinations than this: not followed (a chain of conditionals)

_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
              ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_COMPOUND = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.With, ast.AsyncWith) + (
    (ast.TryStar,) if hasattr(ast, "TryStar") else ()) + ((ast.Match,) if hasattr(ast, "Match") else ())


class Bindings:
    """The names one scope has bound so far, in statement order (`bind` each statement after it is read)."""

    def __init__(self, text: str = "", outer: "Bindings | None" = None) -> None:
        self.text = text  # the module's text: a `global NAME` in it makes NAME unknown
        self.outer = outer  # a class body's module scope
        self.values: dict[str, tuple[tuple, int]] = {}  # name -> (possible values, line bound)
        self.unknown: set[str] = set()
        self.pending: list[ast.stmt] = []  # compound statements not walked yet (only a lookup needs their names)

    def bind(self, stmt: ast.stmt, line: int) -> None:
        """Record the names `stmt` binds; `line` is its line in the text."""
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            single = len(targets) == 1 and isinstance(targets[0], ast.Name)
            values = self.evaluate(stmt.value) if single else None
            for name in _bound_names(targets):
                self._set(name, values, line)
        elif isinstance(stmt, _COMPOUND):
            self.pending.append(stmt)
        else:
            for name in _bound_names([stmt]):
                self._set(name, None, line)

    def _set(self, name: str, values: tuple | None, line: int) -> None:
        if name in self.values or name in self.unknown or values is None:
            self.values.pop(name, None)
            self.unknown.add(name)
        else:
            self.values[name] = (values, line)

    def lookup(self, name: str) -> tuple[tuple, int] | None:
        """(possible values, line) of a name this scope (or its module) bound once to a number."""
        if self.pending:
            for stmt in self.pending:
                for bound in _bound_in(stmt):
                    self.values.pop(bound, None)
                    self.unknown.add(bound)
            self.pending = []
        if name in self.unknown:
            return None
        if name in self.values:
            if self.outer is None and self.text and re.search(rf"\bglobal\b[^\n;]*\b{re.escape(name)}\b", self.text):
                return None  # a function may rebind it before the value is read
            return self.values[name]
        return self.outer.lookup(name) if self.outer is not None else None

    def evaluate(self, node: ast.AST) -> tuple | None:
        """The values `node` may take (numbers, at most MAX_VALUES), or None."""
        if isinstance(node, ast.Constant):
            v = node.value
            return (v,) if isinstance(v, (int, float)) and not isinstance(v, bool) else None
        if isinstance(node, ast.Name):
            found = self.lookup(node.id)
            return found[0] if found is not None else None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            inner = self.evaluate(node.operand)
            return None if inner is None else tuple(-v if isinstance(node.op, ast.USub) else v for v in inner)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            left, right = self.evaluate(node.left), self.evaluate(node.right)
            if left is None or right is None or len(left) * len(right) > MAX_VALUES:
                return None
            op = _OPERATORS[type(node.op)]
            try:
                out = tuple(op(a, b) for a, b in itertools.product(left, right)
                            if not (isinstance(node.op, ast.Pow) and abs(b) > 64))
            except (ArithmeticError, ValueError):
                return None
            return _distinct(out) if len(out) == len(left) * len(right) else None
        if isinstance(node, ast.IfExp):
            body, orelse = self.evaluate(node.body), self.evaluate(node.orelse)
            if body is None or orelse is None or len(body) + len(orelse) > MAX_VALUES:
                return None
            return _distinct(body + orelse)  # the test is not judged: either arm may be in force
        return None

    def source(self, node: ast.AST) -> list[tuple[str, int]]:
        """The names `node` reads directly, with the line each was bound on."""
        out = []
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name):
                found = self.lookup(sub.id)
                if found is not None and (sub.id, found[1]) not in out:
                    out.append((sub.id, found[1]))
        return out


def _distinct(values: tuple) -> tuple:
    return tuple(dict.fromkeys(values))


def _bound_names(nodes) -> list[str]:
    """Names bound by assignment targets or by a simple statement (import, def, class, augmented assignment)."""
    out = []
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.append(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.extend((a.asname or a.name.split(".")[0]) for a in node.names if a.name != "*")
        elif isinstance(node, ast.AugAssign):
            out.extend(_bound_names([node.target]))
        elif isinstance(node, ast.Delete):
            out.extend(_bound_names(node.targets))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            out.extend(_bound_names(node.targets if isinstance(node, ast.Assign) else [node.target]))
        elif isinstance(node, ast.Name):
            out.append(node.id)
        elif isinstance(node, (ast.Tuple, ast.List)):
            out.extend(_bound_names(node.elts))
        elif isinstance(node, ast.Starred):
            out.extend(_bound_names([node.value]))
        elif isinstance(node, ast.Expr):
            out.extend(n.target.id for n in ast.walk(node) if isinstance(n, ast.NamedExpr))
    return out


def _bound_in(stmt: ast.stmt) -> list[str]:
    """Every name a compound statement binds in its own scope (not inside functions or classes it defines)."""
    out = []
    stack = [stmt]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.For, ast.AsyncFor)):
            out.extend(_bound_names([node.target]))
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            out.extend(_bound_names([i.optional_vars for i in node.items if i.optional_vars is not None]))
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out.append(node.name)
        elif isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
            out.append(node.target.id)
        elif type(node).__name__ in ("MatchAs", "MatchStar") and getattr(node, "name", None):
            out.append(node.name)
        elif type(node).__name__ == "MatchMapping" and getattr(node, "rest", None):
            out.append(node.rest)
        elif isinstance(node, ast.stmt) and node is not stmt and not isinstance(node, _COMPOUND):
            out.extend(_bound_names([node]))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
        for child in ast.iter_child_nodes(node):
            stack.append(child)
    return out
