"""The Python front end: one LibCST parse per file, one traversal dispatching to every rule.

Rules are classes with `visit_<NodeType>(self, node, ctx)` methods. The traversal keeps the ancestor
chain and the file's imports, so a rule can ask what an expression names (`ctx.qualname`) and where
it sits (`rlcompat.lang.pyhelpers.role_of`). Positions are computed only for files with findings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from rlcompat.model import Edit, Finding, Fix, FixSafety, Location
from rlcompat.rule import Rule
from rlcompat.textpos import LineIndex


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


class ImportMap:
    """Local name -> dotted name it is bound to by an import (`th` -> `torch`, `bf` -> `torch.bfloat16`)."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def record(self, node: cst.Import | cst.ImportFrom) -> None:
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
        """A name in this file bound to `dotted` (e.g. `th` for torch), if any."""
        for local, full in self.names.items():
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

    def __init__(self, target, path: str) -> None:
        self.target = target
        self.path = path
        self.imports = ImportMap()
        self.ancestors: list[cst.CSTNode] = []
        self.pending: list[_Pending] = []
        self._rule: PythonRule | None = None

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

    def report(self, node: cst.CSTNode, message: str, fix: PendingFix | None = None) -> None:
        assert self._rule is not None
        self.pending.append(_Pending(self._rule, node, message, fix))


class _Dispatcher(cst.CSTVisitor):
    def __init__(self, handlers: dict[str, list[tuple[PythonRule, Callable]]], ctx: Context) -> None:
        super().__init__()
        self.handlers = handlers
        self.ctx = ctx

    def on_visit(self, node: cst.CSTNode) -> bool:
        ctx = self.ctx
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            ctx.imports.record(node)
        for rule, handler in self.handlers.get(type(node).__name__, ()):
            ctx._rule = rule
            handler(node, ctx)
        ctx.ancestors.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.ctx.ancestors.pop()


def _handlers(rules: Sequence[PythonRule]) -> dict[str, list[tuple[PythonRule, Callable]]]:
    table: dict[str, list[tuple[PythonRule, Callable]]] = {}
    for rule in rules:
        for attr in dir(type(rule)):
            if attr.startswith("visit_"):
                table.setdefault(attr[len("visit_"):], []).append((rule, getattr(rule, attr)))
    return table


class PythonSyntaxError(Exception):
    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


PARSE_ERRORS = (PythonSyntaxError,)


def parse(text: str) -> cst.Module:
    try:
        return cst.parse_module(text)
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


def syntax_error_location(exc: PythonSyntaxError) -> tuple[int, int, str]:
    return exc.line, exc.column, exc.message


def check(module: cst.Module, text: str, path: str, rules: Sequence[PythonRule], target) -> list[Finding]:
    ctx = Context(target, path)
    module.visit(_Dispatcher(_handlers(rules), ctx))
    if not ctx.pending:
        return []
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    index = LineIndex(text)
    findings = []
    for p in ctx.pending:
        rng = positions[p.node]
        loc = Location(rng.start.line, rng.start.column + 1, rng.end.line, rng.end.column + 1)
        fix = None
        if p.fix is not None:
            edits = []
            for node, new_text in p.fix.replacements:
                r = positions[node]
                edits.append(
                    Edit(index.offset(r.start.line, r.start.column), index.offset(r.end.line, r.end.column), new_text)
                )
            fix = Fix(tuple(sorted(edits)), p.fix.safety, p.fix.description)
        findings.append(
            Finding(
                code=p.rule.code,
                name=p.rule.name,
                message=p.message,
                path=path,
                location=loc,
                target=target.name,
                severity=p.rule.severity,
                fix=fix,
                source_line=index.line_text(loc.line),
            )
        )
    return findings
