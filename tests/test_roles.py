"""`pyroles.kind_of` (CPython's tree, for the narrowing) says what `pyhelpers.role_of` (LibCST's, for the rules) says.

The narrowing leaves out a part of a big statement where a trigger sits only in roles its rules do not report
(lang/pyspeed/parts.py); a kind it got wrong would lose a finding. Every name, attribute, string and call of the
fixtures, of every rule's examples and of a sample of verl's package is compared (nodes matched by their position).
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

from rlcompat.analysis import pyhelpers
from rlcompat.lang import pyroles
from rlcompat.rules import all_rules

REPO = Path(__file__).resolve().parent.parent
_CST = (cst.Name, cst.Attribute, cst.SimpleString, cst.Call)
_AST = {cst.Name: ast.Name, cst.Attribute: ast.Attribute, cst.SimpleString: ast.Constant, cst.Call: ast.Call}


def _libcst_kinds(text: str) -> dict:
    wrapper = MetadataWrapper(cst.parse_module(text))
    positions, parents = wrapper.resolve(PositionProvider), wrapper.resolve(ParentNodeProvider)
    out = {}
    for node, where in positions.items():
        if not isinstance(node, _CST) or getattr(node, "lpar", ()):
            continue  # a parenthesized node's LibCST position holds its parentheses, CPython's does not
        ancestors, up = [], parents.get(node)
        while up is not None and not isinstance(up, cst.Module):
            ancestors.append(up)
            up = parents.get(up)
        key = (_AST[type(node)], where.start.line, where.start.column, where.end.line, where.end.column)
        out[key] = pyhelpers.role_of(node, ancestors[::-1]).kind
    return out


def _cpython_kinds(text: str) -> dict:
    lines = text.splitlines(keepends=True)

    def char(line: int, byte_col: int) -> int:
        return len(lines[line - 1].encode("utf-8")[:byte_col].decode("utf-8", "ignore"))

    def text_at(line: int, byte_col: int) -> str:
        return lines[line - 1][char(line, byte_col):][:1]

    out = {}
    todo = [(ast.parse(text), [])]
    while todo:
        node, parents = todo.pop()
        if isinstance(node, (ast.Name, ast.Attribute, ast.Constant, ast.Call)) and hasattr(node, "end_lineno"):
            key = (type(node), node.lineno, char(node.lineno, node.col_offset), node.end_lineno,
                   char(node.end_lineno, node.end_col_offset))
            out[key] = pyroles.kind_of(node, parents, text_at)
        todo.extend((child, [*parents, node]) for child in ast.iter_child_nodes(node))
    return out


def _texts():
    for path in sorted((REPO / "fixtures").rglob("*.py")):
        yield str(path.relative_to(REPO)), path.read_text(encoding="utf-8")
    for rule in all_rules():
        for n, example in enumerate((*rule.bad, *rule.good)):
            if example.path.endswith(".py"):
                yield f"{rule.code} example {n}", example.code
    spec = importlib.util.find_spec("verl")
    if spec is not None and spec.submodule_search_locations:
        paths = sorted(Path(list(spec.submodule_search_locations)[0]).rglob("*.py"))
        for path in paths[::4]:
            yield str(path), path.read_text(encoding="utf-8")


def test_kind_of_is_role_of_on_fixtures_examples_and_verl():
    compared, differ = 0, []
    for name, text in _texts():
        try:
            expected = _libcst_kinds(text)
            got = _cpython_kinds(text)
        except (SyntaxError, cst.ParserSyntaxError):
            continue
        for key, kind in expected.items():
            if key not in got:
                continue
            compared += 1
            if got[key] != kind and not (got[key] == "dict-value" and kind == "table"):
                differ.append((name, key[1:], kind, got[key]))
    assert not differ, differ[:20]
    assert compared > 20_000, compared  # the comparison ran over the texts, not over nothing


@pytest.mark.parametrize("code,kind", [
    ("f(floating_types_and(torch.half, torch.bfloat16))", "table"),
    ("m.to(torch.bfloat16)", "positional"),
    ("m.to(dtype=torch.bfloat16)", "keyword"),
    ("d.get('k', torch.bfloat16)", "default"),
    ("x = a if c else torch.bfloat16", "assign"),
    ("x = [torch.bfloat16]", "table"),
    ("x = {'d': torch.bfloat16}", "dict-value"),
    ("x = {torch.bfloat16: 1}", "table"),
    ("y = x == torch.bfloat16", "compare"),
    ("y = t[torch.bfloat16]", "index"),
    ("print(torch.bfloat16)", "other"),
])
def test_kind_of_a_dtype(code, kind):
    tree = ast.parse(code)
    todo = [(tree, [])]
    while todo:
        node, parents = todo.pop()
        if isinstance(node, ast.Attribute) and node.attr == "bfloat16":
            assert pyroles.kind_of(node, parents) == kind
            return
        todo.extend((child, [*parents, node]) for child in ast.iter_child_nodes(node))
    raise AssertionError("no torch.bfloat16 in the code")
