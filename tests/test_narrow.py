"""Narrowed parsing (rlcompat/lang/pyspeed/narrow.py) must never change a result: only make it cheaper."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import rlcompat.lang.python as python_frontend
from rlcompat.config import Options
from rlcompat.pipeline.runner import Checker
from rlcompat.lang.pyspeed.narrow import narrow
from rlcompat.pipeline.source import decode, read_bytes
from rlcompat.knowledge.targets import resolve_target


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
    checker = Checker(resolve_target(target), Options())
    narrowed = _results(checker, sources)
    monkeypatch.setattr(python_frontend, "narrow", lambda text, rules, file=None: None)
    whole = _results(checker, sources)
    assert sum(len(f) for _, f in narrowed) > 0
    assert narrowed == whole


# --- inside one big statement (pyspeed/narrow.py, _inside) --------------------------------------------------

def _big(body: list[str], head: str = "ops = [\n", tail: str = "]\n") -> str:
    return head + "".join(body) + tail


def _padding(n: int = 40) -> list[str]:
    return [f"    Op('plain{i}', dtypes=all_types()),\n" for i in range(n)]


def test_a_big_statement_loses_its_trigger_free_elements_and_lines_map_back():
    text = "import torch\n" + _big(["    Op('a', dtypes=floating_types_and(torch.bfloat16)),\n", *_padding(),
                                    "    # a comment between elements\n",
                                    "    Op('b',\n       dtype=torch.bfloat16),\n"])
    n = narrow(text, BF16)
    assert n is not None and "plain" not in n.text and "a comment" not in n.text
    assert n.text == ("import torch\nops = [\n    Op('a', dtypes=floating_types_and(torch.bfloat16)),\n"
                      "    Op('b',\n       dtype=torch.bfloat16),\n]\n")
    original = text.splitlines(keepends=True)
    for i, line in enumerate(n.text.splitlines(keepends=True), start=1):
        assert original[n.original_line(i) - 1] == line


def test_keywords_that_rules_read_beside_a_node_stay_and_others_go():
    body = ["    torch_dtype=torch.bfloat16,\n", "    fp16=False,\n", "    model='m',\n", "    including_emulation=False,\n",
            "    sem='relaxed',\n", "    disable=True,\n", *[f"    other{i}=1,\n" for i in range(40)]]
    n = narrow(_big(body, "x = load(\n", ")\n"), BF16)
    assert n is not None and "other" not in n.text
    for kept in ("fp16=False", "model='m'", "including_emulation=False", "sem='relaxed'", "disable=True"):
        assert kept in n.text


def test_positional_arguments_and_what_is_under_an_if_expression_stay():
    body = [f"    {i},\n" for i in range(40)] + ["    torch.bfloat16 if ok(\n", "        flag=1,\n", "    ) else None,\n"]
    n = narrow(_big(body, "x = f(\n", ")\n"), BF16)
    assert n is None  # nothing may go: positional arguments, and the if expression's test is read by the rules


def test_a_tuple_never_becomes_a_parenthesized_value():
    body = [f"    ({i}, 'x'),\n" for i in range(40)] + ["    torch.bfloat16\n"]
    n = narrow(_big(body, "t = (\n", ")\n"), BF16)
    assert n is not None and "(1, 'x')" not in n.text
    import ast

    value = ast.parse(n.text).body[0].value
    assert isinstance(value, ast.Tuple) and len(value.elts) == 2  # one element more, or `(x)` would be no tuple


def test_a_dict_under_a_string_key_keeps_its_entries_other_dicts_are_narrowed():
    inner = "".join(f"        'k{i}': {i},\n" for i in range(40))
    text = ("config = {\n    'fp16': {\n" + inner + "        'enabled': True,\n    },\n"
            "    (0, torch.bfloat16): {\n" + inner.replace("'k", "'q") + "    },\n}\n")
    n = narrow(text, [_Rule("bfloat16", "fp16")])
    assert n is not None and "'enabled': True" in n.text and "'k39'" in n.text
    assert "'q39'" not in n.text and "'q0'" in n.text  # a dict left without entries keeps its first


def test_a_file_without_triton_kernels_is_narrowed_despite_a_whole_module_rule():
    triton_rule = _Rule("jit", whole_module=True)
    triton_rule.whole_module_for_decorators_from = ("triton",)
    plain = "import torch\nx = torch.jit.script(f)\ny = 1\nz = t.to(torch.bfloat16)\n"
    assert narrow(plain, [triton_rule, *BF16]).text == "import torch\nz = t.to(torch.bfloat16)\n"
    for kernel in ("import triton\n@triton.jit\ndef k(x):\n    pass\n", "from triton import jit as J\n@J()\ndef k(x):\n    pass\n",
                   "def f():\n    import triton.language as tl\n@tl.core.thing\ndef k(x):\n    pass\n"):
        assert narrow(kernel + plain, [triton_rule, *BF16]) is None


def _package_sources(name: str, subdirs: tuple[str, ...]):
    import importlib.util

    spec = importlib.util.find_spec(name)  # the installed package's files; nothing of it is imported or run
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"{name} is not installed (pip install -e '.[verify]')")
    root = Path(list(spec.submodule_search_locations)[0])
    paths = sorted(p for sub in subdirs for p in ((root / sub).rglob("*.py") if (root / sub).is_dir() else [root / sub]))
    return [decode(str(p), read_bytes(str(p)), "python") for p in paths if p.exists()]


@pytest.mark.slow
@pytest.mark.parametrize("package,subdirs", [
    # torch's dtype tables (big OpInfo lists, the tuned-parameter dict) and FSDP's mixed precision
    ("torch", ("testing/_internal/opinfo", "sparse/_triton_ops_meta.py", "distributed/fsdp", "amp")),
    ("transformers", ("training_args.py", "modeling_utils.py", "models/llama", "integrations")),
])
def test_narrowed_and_whole_file_results_are_identical_on_torch_and_transformers(package, subdirs, monkeypatch):
    sources = _package_sources(package, subdirs)
    checker = Checker(resolve_target("sm61"), Options())
    narrowed = _results(checker, sources)
    monkeypatch.setattr(python_frontend, "narrow", lambda text, rules, file=None: None)
    whole = _results(checker, sources)
    assert len(sources) > 10 and sum(len(f) for _, f in narrowed) > 0
    assert narrowed == whole


def test_parts_that_share_a_line_are_blanked_so_columns_stay():
    body = [f"    Op('p{i}', ref=f{i}, sample=g),\n" for i in range(40)] + ["    Op('b', x=1, dtype=torch.bfloat16, y=2),\n"]
    text = _big(body)
    n = narrow(text, BF16)
    assert n is not None
    kept = [line for line in n.text.splitlines() if "bfloat16" in line][0]
    original = [line for line in text.splitlines() if "bfloat16" in line][0]
    assert kept.index("torch.bfloat16") == original.index("torch.bfloat16") and "x=1" not in kept and "y=2" not in kept
    assert "Op('p" not in n.text


def test_a_reported_node_holding_a_blanked_part_is_checked_on_the_whole_file(monkeypatch):
    # RLC111 rewrites a whole TRL config call; blanked keyword arguments (`y0=1`) must not vanish from its fix.
    body = "".join(f"    x{i}=torch.bfloat16, y{i}=1,\n" for i in range(40))
    text = "import torch\nfrom trl import GRPOConfig\nconfig = GRPOConfig(output_dir='o', learning_rate=1e-5,\n" + body + ")\n"
    n = narrow(text, [_Rule("bfloat16", "GRPOConfig")])
    assert n is not None and "y0=1" not in n.text and n.blanked  # blanked, no line left out
    source = decode("case.py", text.encode("utf-8"), "python")
    checker = Checker(resolve_target("sm61"), Options())
    narrowed = _results(checker, [source])
    monkeypatch.setattr(python_frontend, "narrow", lambda text, rules, file=None: None)
    whole = _results(checker, [source])
    assert narrowed == whole
    rewrite = [f for f in narrowed[0][1] if f[0] == "RLC111"][0][3].edits[0].content
    assert "learning_rate=1e-5" in rewrite and "y39=1" in rewrite
