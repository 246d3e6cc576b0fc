"""Where reported nodes are in the text, without regenerating whole files.

LibCST's PositionProvider regenerates a whole module to learn positions; for a finding inside a big class that
is most of the run's time. Here only the innermost statement holding a node is regenerated (a
compound statement with its body replaced by `pass`), CPython's `ast` (in C) says on which line that statement
starts, and the statement's indentation gives the column shift. Every computed range is checked against the
text; anything that does not check out falls back to the whole-module provider, so results never differ.
"""

from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass
from typing import Sequence

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from rlcompat.lang.pyspeed import plain
from rlcompat.lang.textpos import LineIndex


@dataclass(frozen=True)
class Pos:
    line: int
    column: int  # 0-based


@dataclass(frozen=True)
class Range:
    start: Pos
    end: Pos


def _pass_block():
    return cst.IndentedBlock(body=[cst.SimpleStatementLine(body=[cst.Pass()])])


def locate(module: cst.Module, text: str, requests: list[tuple[cst.CSTNode, tuple]]) -> dict:
    """Ranges for each (node, statement chain from the module down) request."""
    if plain():
        return _whole(module)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return _whole(module)
    index = LineIndex(text)
    out: dict = {}
    by_holder: dict[int, tuple[tuple, list]] = {}
    for node, chain in requests:
        if not chain:
            return _whole(module)
        by_holder.setdefault(id(chain[-1]), (chain, []))[1].append(node)
    bodies = _BodyIndex()
    holders = []
    for chain, nodes in by_holder.values():
        line = _ast_line(module, tree, chain, bodies)
        if not line:
            return _whole(module)
        holders.append((chain[-1], line, nodes))
    found = _locate_in_holders(module, index, holders)
    return _whole(module) if found is None else found


def _whole(module: cst.Module) -> dict:
    return MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)


# Holders regenerated together: one pass for many findings, in batches so that the positions LibCST computes for
# every node of a batch (most of them never asked for) are dropped before the next batch, not held for all the
# findings of a file at once.
HOLDERS_PER_PASS = 2000


def _locate_in_holders(module, index: LineIndex, holders: list) -> dict | None:
    """Every holder statement (its own body replaced by `pass`) is regenerated once, in small modules of
    `HOLDERS_PER_PASS` holders, so a file with thousands of findings costs one pass, not one per finding."""
    out: dict = {}
    for first in range(0, len(holders), HOLDERS_PER_PASS):
        batch = holders[first : first + HOLDERS_PER_PASS]
        stand_ins = [_without_body(holder) for holder, _, _ in batch]
        mini = module.with_changes(body=stand_ins, header=(), footer=())
        local = MetadataWrapper(mini, unsafe_skip_copy=True).resolve(PositionProvider)
        for stand_in, (_, line, nodes) in zip(stand_ins, batch):
            found = _locate_in_holder(mini, local, index, stand_in, line, nodes)
            if found is None:
                return None
            out.update(found)
    return out


def _locate_in_holder(mini, local, index: LineIndex, stand_in, line: int, nodes) -> dict | None:
    shift = line - local[stand_in].start.line
    first = index.line_text(line)
    indent = len(first) - len(first.lstrip(" \t"))
    out = {}
    for node in nodes:
        rng = local.get(node)
        if rng is None:
            return None
        code = mini.code_for_node(_syntactic(node))
        expected = _squash(code)
        # A line after a `\` continuation is not indented by the block (its columns need no shift), so both shifts
        # are tried; an exact match wins over a partial one, which an end past the node could also give.
        candidates = [(Pos(rng.start.line + shift, rng.start.column + s), Pos(rng.end.line + shift, rng.end.column + e))
                      for s in (indent, 0) for e in (indent, 0)]
        found = next((c for exact in (code, None) for c in candidates if _matches(index, *c, expected, exact)), None)
        if found is None:
            return None
        out[node] = Range(*found)
    return out


def _syntactic(node):
    """The node as PositionProvider measures it: an argument without its comma and the whitespace after it (which
    can hold whole comment lines, `f(a="x",  # why`), so the text is searched for what the range really covers."""
    if isinstance(node, cst.Arg):
        return node.with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=cst.SimpleWhitespace(""))
    return node


def _matches(index: LineIndex, start: Pos, end: Pos, expected: str, exact: str | None = None) -> bool:
    """Whether start..end holds `expected` (the node's code without whitespace); with `exact` (the node's code),
    all of it and no more: not even a blank the node does not start or end with."""
    if start.line < 1 or end.line > index.line_count:
        return False
    # A column past the end of its line is no position at all: its offset runs on into the next line (`x = \`
    # continued in an indented block: a fix there would eat the newline).
    if start.column > len(index.line_text(start.line)) or end.column > len(index.line_text(end.line)):
        return False
    a, b = index.offset(start.line, start.column), index.offset(end.line, end.column)
    raw = index.text[a:b]
    got = _squash(raw)
    if exact is not None:
        return got == expected and raw[:1].isspace() == exact[:1].isspace() and raw[-1:].isspace() == exact[-1:].isspace()
    return bool(got) and expected.startswith(got) and len(got) * 2 >= len(expected)


def _squash(code: str) -> str:
    return "".join(code.split())


def _without_body(stmt):
    """The statement with its own indented body replaced by `pass`: the header is all that is regenerated."""
    if isinstance(stmt, cst.SimpleStatementLine) or not isinstance(getattr(stmt, "body", None), cst.IndentedBlock):
        return stmt
    changes = {"body": _pass_block()}
    if isinstance(stmt, (cst.If, cst.For, cst.While)) and stmt.orelse is not None:
        changes["orelse"] = None
    if isinstance(stmt, cst.Try):
        changes["handlers"] = [h.with_changes(body=_pass_block()) for h in stmt.handlers]
        changes["orelse"] = None
        if stmt.finalbody is not None:
            changes["finalbody"] = stmt.finalbody.with_changes(body=_pass_block())
    return stmt.with_changes(**changes)


class _BodyIndex:
    """For each block seen, its LibCST statements mapped to CPython's, built once per block: a module of thousands
    of findings would otherwise rescan its body for each."""

    def __init__(self) -> None:
        self._blocks: dict[int, dict[int, ast.stmt | None]] = {}

    def matching(self, cst_body: Sequence, py_body: list, stmt) -> ast.stmt | None:
        return self._pairs(cst_body, py_body).get(id(stmt))

    def holds(self, cst_body: Sequence, py_body: list, stmt) -> bool:
        """Whether `stmt` is one of `cst_body`'s statements."""
        return id(stmt) in self._pairs(cst_body, py_body)

    def _pairs(self, cst_body: Sequence, py_body: list) -> dict[int, ast.stmt | None]:
        key = id(cst_body[0]) if cst_body else 0
        pairs = self._blocks.get(key)
        if pairs is None:
            pairs = {}
            j = 0
            for s in cst_body:
                pairs[id(s)] = py_body[j] if j < len(py_body) else None
                j += len(s.body) if isinstance(s, cst.SimpleStatementLine) else 1
            self._blocks[key] = pairs
        return pairs


def _ast_line(module: cst.Module, tree: ast.Module, chain: tuple, bodies: _BodyIndex) -> int | None:
    """The line CPython gives the last statement of `chain`, found by walking both trees in step (through the blocks
    `bodies` has paired once: copying or searching a block per finding would be quadratic in a file's findings)."""
    cst_body, py_body = module.body, tree.body
    py_node = None
    for depth, stmt in enumerate(chain):
        py_node = bodies.matching(cst_body, py_body, stmt)
        if py_node is None:
            return None
        if depth + 1 < len(chain):
            pair = _child_bodies(stmt, py_node, chain[depth + 1], bodies)
            if pair is None:
                return None
            cst_body, py_body = pair
    return py_node.lineno if py_node is not None else None


def _block(node) -> Sequence:
    return node.body if isinstance(node, cst.IndentedBlock) else ()


def _child_bodies(stmt, py_node, child, bodies: _BodyIndex):
    """The (LibCST statements, ast statements) pair of the block of `stmt` that holds `child`."""
    pairs = []
    if isinstance(getattr(stmt, "body", None), cst.IndentedBlock):
        pairs.append((_block(stmt.body), getattr(py_node, "body", [])))
    orelse = getattr(stmt, "orelse", None)
    if isinstance(orelse, cst.If):
        pairs.append(((orelse,), getattr(py_node, "orelse", [])))
    elif orelse is not None and isinstance(getattr(orelse, "body", None), cst.IndentedBlock):
        pairs.append((_block(orelse.body), getattr(py_node, "orelse", [])))
    if isinstance(stmt, cst.Try) and isinstance(py_node, ast.Try):
        for h, ph in zip(stmt.handlers, py_node.handlers):
            pairs.append((_block(h.body), ph.body))
        if stmt.finalbody is not None:
            pairs.append((_block(stmt.finalbody.body), py_node.finalbody))
    for cst_body, py_body in pairs:
        if bodies.holds(cst_body, py_body, child):
            return cst_body, py_body
    return None
