"""A big Python text is parsed in parts, one at a time (rlcompat/lang/pyspeed/batches.py), and that changes no result.

The parts are cut between top-level statements only where a cut cannot change what a statement is; every rule
finds the same on its own examples and on every fixture cut into the smallest parts there are (each top-level
statement its own part) as parsed whole, and the fixtures cut that way give what plain LibCST gives; a part that
LibCST does not parse sends the file down the whole-file path, as before; and a part's tree is gone before the
next part is parsed, which is what bounds the memory.
"""

from __future__ import annotations

import ast
import gc
from pathlib import Path

import pytest

from rlcompat.config import Options
from rlcompat.pipeline.discovery import language_of
from rlcompat.pipeline.runner import Checker
from tests.verl_trees import verl_091_knowledge
from rlcompat.findings import Finding
from rlcompat.lang import python as py
from rlcompat.lang.pyspeed import batches
from rlcompat.lang.pyspeed.chunks import statement_spans
from rlcompat.pipeline.source import decode
from rlcompat.knowledge.targets import resolve_target
from tests.test_narrowing_safety import PYTHON_RULES, _fixture_texts, _ReadsASibling, _with_selected
from tests.test_plain_libcst import _assert_same, _both_ways, _fixture_files

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def smallest_parts(monkeypatch):
    """Every top-level statement a part of its own, however short the text."""
    monkeypatch.setattr(batches, "PART_CHARS", 1)
    monkeypatch.setattr(batches, "SPLIT_MIN_CHARS", 1)


def _parts(text: str) -> list[tuple[int, str]]:
    parts = batches.split(text, lambda t: statement_spans(ast.parse(t)))
    assert parts is not None and "".join(p.text for p in parts.parts) == text
    return [(p.first_line, p.text) for p in parts.parts]


def test_parts_are_cut_between_top_level_statements_only(smallest_parts):
    text = ("import torch\n"
            "@decorated\n"
            "def f():\n"
            "    x = 1\n"
            "\n"
            "    return x\n"
            "# about a\n"
            "a = 1; b = 2\n"
            "c = (1,\n"
            "     2)\n")
    assert _parts(text) == [(1, "import torch\n"), (2, "@decorated\ndef f():\n    x = 1\n\n    return x\n"),
                            (7, "# about a\na = 1; b = 2\n"), (9, "c = (1,\n     2)\n")]


def test_no_cut_after_a_line_that_goes_on_with_a_backslash(smallest_parts):
    text = "a = 1 \\\n\nb = 2\nc = 3"
    assert _parts(text) == [(1, "a = 1 \\\n\nb = 2\n"), (4, "c = 3")]


def test_line_ends_are_cut_as_cpython_numbers_lines(smallest_parts):
    text = "a = 1\r\nb = '\x0c'\r\nc = 2\rd = 3\n"
    assert _parts(text) == [(1, "a = 1\r\n"), (2, "b = '\x0c'\r\n"), (3, "c = 2\r"), (4, "d = 3\n")]


class _Bf16Rule:
    triggers = ("bfloat16",)


def test_a_narrowed_text_is_cut_where_the_original_tree_says_without_parsing_it_again(smallest_parts):
    text = "import torch\ndef a():\n    return 1\nx = torch.bfloat16\n# c\ny = t.to(\n    torch.bfloat16)\n"
    file = verl_091_knowledge("example.py")
    narrowed = py.narrow(text, [_Bf16Rule()], file)
    assert narrowed.text == "import torch\nx = torch.bfloat16\ny = t.to(\n    torch.bfloat16)\n"  # comments left out
    parts = batches.split(narrowed.text, lambda t: pytest.fail("parsed again"), file.planned)
    assert [(p.first_line, p.text) for p in parts.parts] == [
        (1, "import torch\n"), (2, "x = torch.bfloat16\n"), (3, "y = t.to(\n    torch.bfloat16)\n")]
    assert batches.split(text, lambda t: None, file.planned) is None  # the plan serves the text it was made for
    assert isinstance(py.parse(narrowed.text, file), batches.Parts) and file.planned is None  # and one parse


def test_short_texts_and_the_plain_mode_are_parsed_whole(monkeypatch):
    text = "import torch\nx = torch.bfloat16\n"
    assert isinstance(py.parse(text), py.cst.Module)
    assert isinstance(py.parse(text * (batches.SPLIT_MIN_CHARS // len(text) + 1)), batches.Parts)
    monkeypatch.setenv("RLCOMPAT_PLAIN_LIBCST", "1")
    assert isinstance(py.parse(text * (batches.SPLIT_MIN_CHARS // len(text) + 1)), py.cst.Module)


def _findings(rules: list, text: str, target) -> list:
    found = py.check(py.parse(text), text, "example.py", rules, target, scanned=verl_091_knowledge("example.py"))
    return [(f.code, f.location, f.message, f.fix, f.source_line) for f in sorted(found, key=Finding.sort_key)]


def parts_differences(rule_classes: list, text: str, target_name: str, monkeypatch) -> tuple[list, list] | None:
    """(findings with each top-level statement parsed alone, findings of the whole module) where they differ."""
    target = resolve_target(target_name)
    rules = [cls(target) for cls in rule_classes if cls.applies_to(target)]
    if not rules or not any(t in text for r in rules for t in r.triggers):
        return None
    whole = _findings(rules, text, target)
    with monkeypatch.context() as m:
        m.setattr(batches, "PART_CHARS", 1)
        m.setattr(batches, "SPLIT_MIN_CHARS", 1)
        in_parts = _findings(rules, text, target)
    return None if in_parts == whole else (in_parts, whole)


EXAMPLES = [pytest.param(r, e, id=f"{r.code}-{kind}{i}") for r in PYTHON_RULES
            for kind, examples in (("bad", r.bad), ("good", r.good)) for i, e in enumerate(examples)
            if language_of(e.path) == "python"]


@pytest.mark.parametrize("rule,example", EXAMPLES)
def test_a_rule_finds_the_same_on_its_examples_in_parts_and_whole(rule, example, monkeypatch):
    differences = parts_differences(_with_selected(rule), example.code, example.target, monkeypatch)
    assert differences is None, (f"{rule.code} finds something else when each top-level statement is parsed alone: "
                                 f"declare `whole_module`\nin parts: {differences[0]}\nwhole:    {differences[1]}")


def test_every_rule_finds_the_same_on_the_fixtures_in_parts_and_whole(monkeypatch):
    texts = _fixture_texts()
    assert texts
    for target in ("sm61", "sm75"):
        for rule in PYTHON_RULES:
            for path, text in texts:
                assert parts_differences([rule], text, target, monkeypatch) is None, f"{rule.code} on {path} ({target})"


def test_the_check_catches_a_rule_that_reads_a_sibling(monkeypatch):
    text = "import torch\nSTRICT = 1\nx = t.to(torch.bfloat16)\n"
    differences = parts_differences([_ReadsASibling], text, "sm61", monkeypatch)
    assert differences is not None and differences[0] == [] and len(differences[1]) == 1


@pytest.mark.parametrize("target", ["sm61", "sm75"])
def test_fixtures_in_parts_give_what_plain_libcst_gives(target, smallest_parts, monkeypatch):
    files = _fixture_files()
    fast, plain = _both_ways(files, target, monkeypatch)
    assert sum(len(o[2]) for o in fast if len(o) > 2) > 0
    _assert_same(fast, plain)


BIG = "import torch\n" + "".join(f"x_{i} = t.to(torch.bfloat16)\n" for i in range(50))


def _check(text: str):
    return Checker(resolve_target("sm61"), Options()).check_source(decode("big.py", text.encode(), "python"), "python")


def test_a_part_that_libcst_rejects_sends_the_text_down_the_whole_file_path(smallest_parts, monkeypatch):
    whole = _check(BIG)
    assert len(whole.findings) == 50
    real = py.parse_module
    parsed: list[int] = []

    def rejecting_parts(text: str):
        parsed.append(len(text))
        if text.startswith("x_7 "):
            raise py.cst.ParserSyntaxError("no", lines=[text], raw_line=1, raw_column=0)
        return real(text)

    monkeypatch.setattr(py, "parse_module", rejecting_parts)
    result = _check(BIG)
    assert len(BIG) in parsed  # the whole text was parsed at once after the part holding x_7 failed
    assert (result.error, result.findings) == (None, whole.findings)


def test_a_text_libcst_rejects_in_parts_and_whole_is_reported_as_before(smallest_parts, monkeypatch):
    monkeypatch.setattr(py, "parse_module", lambda text: (_ for _ in ()).throw(
        py.cst.ParserSyntaxError("LibCST says no", lines=[text], raw_line=3, raw_column=4)))
    result = _check(BIG)
    assert result.findings == [] and result.error is not None
    assert result.error.one_line() == "big.py:3:5: cannot be parsed: LibCST says no; fix the syntax or exclude the file"


def test_a_parts_tree_is_gone_before_the_next_part_is_parsed(smallest_parts, monkeypatch):
    real = py.parse_module
    alive_at_each_parse: list[int] = []

    def counting(text: str):
        gc.collect()
        alive_at_each_parse.append(sum(1 for o in gc.get_objects() if type(o) is py.cst.Module))
        return real(text)

    monkeypatch.setattr(py, "parse_module", counting)
    assert len(_check(BIG).findings) == 50
    assert len(alive_at_each_parse) == 51 and set(alive_at_each_parse) == {0}


def test_memory_is_given_back_after_a_big_text_only(monkeypatch):
    from rlcompat.lang.pyspeed import heap

    trims: list[int] = []
    monkeypatch.setattr(heap, "_trim", trims.append)
    heap.give_back("x = 1\n")
    assert trims == []
    big = "x = 1\n" * (heap.BIG_TEXT // 6 + 1)
    heap.give_back(big)
    assert trims == [0]
    monkeypatch.setenv("RLCOMPAT_PLAIN_LIBCST", "1")
    heap.give_back(big)
    assert trims == [0]


def test_a_big_file_gives_memory_back_after_its_parts_are_walked(monkeypatch):
    from rlcompat.lang.pyspeed import heap

    trims: list[int] = []
    monkeypatch.setattr(heap, "_trim", trims.append)
    text = BIG * (heap.BIG_TEXT // len(BIG) + 1)
    assert len(_check(text).findings) == text.count("bfloat16")
    assert trims == [0]  # once the last part's tree is let go
