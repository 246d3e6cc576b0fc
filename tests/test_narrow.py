"""Narrowed parsing (rlcompat/lang/pynarrow.py) must never change a result: only make it cheaper."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import rlcompat.lang.python as python_frontend
from rlcompat.config import Settings
from rlcompat.engine import Checker
from rlcompat.lang.pynarrow import narrow
from rlcompat.source import decode, read_bytes
from rlcompat.targets import resolve_target


class _Rule:
    def __init__(self, *triggers: str, whole_module: bool = False) -> None:
        self.triggers = triggers
        self.whole_module = whole_module


BF16 = [_Rule("bfloat16")]


def test_statements_without_a_trigger_are_left_out_and_lines_map_back():
    text = "import torch\n\ndef a():\n    return 1\n\n\ndef b(t):\n    x = 2\n    return t.to(torch.bfloat16)\n"
    n = narrow(text, BF16)
    assert n is not None
    assert "def a" not in n.text and "x = 2" not in n.text
    assert "return t.to(torch.bfloat16)" in n.text
    for i, line in enumerate(n.text.splitlines(keepends=True), start=1):
        assert text.splitlines(keepends=True)[n.original_line(i) - 1] == line


def test_import_aliases_of_a_trigger_keep_the_statements_that_use_them():
    text = "from torch import bfloat16 as bf\n\ndef f(t):\n    y = 1\n    return t.to(bf)\n\nz = other(1)\n"
    n = narrow(text, BF16)
    assert n is not None and "t.to(bf)" in n.text and "y = 1" not in n.text and "other" not in n.text


def test_a_shared_line_and_a_trigger_only_in_the_header_keep_what_must_parse():
    text = "a = 1; b = torch.bfloat16\nclass C(Base, dtype=torch.bfloat16):\n    x = 1\n    y = 2\nq = 3\n"
    n = narrow(text, BF16)
    assert n is not None
    assert n.text == "a = 1; b = torch.bfloat16\nclass C(Base, dtype=torch.bfloat16):\n    x = 1\n    y = 2\n"


def test_whole_module_rules_syntax_errors_and_nothing_to_drop_parse_everything():
    assert narrow("import triton\nx = 1\n", [_Rule("triton", whole_module=True)]) is None
    assert narrow("def f(:\n    torch.bfloat16\n", BF16) is None
    assert narrow("x = torch.bfloat16\n", BF16) is None


def test_crlf_and_a_missing_final_newline_survive():
    text = "x = 1\r\ny = torch.bfloat16\r\nz = 2"
    n = narrow(text, BF16)
    assert n is not None and n.text == "y = torch.bfloat16\r\n" and n.lines == (2,)
    n = narrow("x = 1\ny = torch.bfloat16", BF16)
    assert n is not None and n.text == "y = torch.bfloat16"


def _results(checker: Checker, sources) -> list:
    out = []
    for source in sources:
        r = checker.check_source(source, "python")
        out.append((r.error and (r.error.message, r.error.line),
                    [(f.code, f.location, f.message, f.fix, f.source_line) for f in r.findings]))
    return out


def _verl_sources():
    try:
        import verl  # noqa: F401  (only to find the installed package; nothing of it runs)
    except ImportError:
        pytest.skip("verl is not installed (pip install -e '.[verify]')")
    root = Path(os.path.dirname(verl.__file__))
    return [decode(str(p), read_bytes(str(p)), "python") for p in sorted(root.rglob("*.py"))]


@pytest.mark.slow
@pytest.mark.parametrize("target", ["sm61", "sm75"])
def test_narrowed_and_whole_file_results_are_identical_on_verl(target, monkeypatch):
    sources = _verl_sources()
    checker = Checker(resolve_target(target), Settings())
    narrowed = _results(checker, sources)
    monkeypatch.setattr(python_frontend, "narrow", lambda text, rules: None)
    whole = _results(checker, sources)
    assert sum(len(f) for _, f in narrowed) > 0
    assert narrowed == whole
