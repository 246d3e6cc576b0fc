"""LineIndex.ast_offset: the text offset of a position CPython's `ast` gives (a column counted in UTF-8 bytes), the
one conversion the Python readers share (lang/pylaunch.py, lang/setup_deps.py, analysis/knowledge_defaults.py)."""

from __future__ import annotations

import ast

import pytest

from rlcompat.lang.textpos import LineIndex


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"])
def test_each_constant_is_found_where_the_text_has_it(end):
    text = end.join(["# é ü", "x = 'á'; y = \"bf16\"", "def f(use_liger: bool = True):", "    pass", ""])
    index = LineIndex(text)
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Constant):
            start = index.ast_offset(node.lineno, node.col_offset)
            stop = index.ast_offset(node.end_lineno, node.end_col_offset)
            assert ast.literal_eval(text[start:stop]) == node.value
