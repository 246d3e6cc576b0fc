"""What decides whether a file and a statement reach the rules, held to what the rules find without it.

- The trigger search (rlcompat/pipeline/wordscan.py) answers exactly which words a text holds.
- What a rule declares it needs to see besides a trigger (`resolves_from`, `keywords`, `calls`, `spelled`,
  `requires`), and so the words and pattern derived from it (rlcompat/lang/pyspeed/gate.py), never drops a finding:
  every fixture and every Python file of the installed verl 0.9.1 package give the rules that declare it the same
  findings with it looked for and ignored; the check fails on a rule that declares a module its findings lack.
- Narrowing keeps the statements that use a name an import binds to something holding a trigger, with or without
  `as`, and the whole module for a Triton kernel behind a local wrapper of `triton.jit`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from rlcompat.pipeline import runner
from rlcompat.config import Options
from rlcompat.pipeline.discovery import discover
from rlcompat.pipeline.runner import Checker
from rlcompat.lang import python as py
from rlcompat.lang.pyspeed import gate
from rlcompat.rules import all_rules
from rlcompat.pipeline.source import SourceError, decode, read_bytes
from rlcompat.knowledge.targets import resolve_target
from rlcompat.pipeline.wordscan import WordScan
from tests.test_narrowing_safety import narrowing_differences

REPO = Path(__file__).resolve().parent.parent
REQUIRING = [r for r in all_rules() if gate.word_groups(r) or r.spelled is not None]
BY_CODE = {r.code: r for r in all_rules()}


def _fixture_texts() -> list[str]:
    files, _ = discover([str(REPO / "fixtures")], Options(root=str(REPO)))
    out = []
    for path, language in files:
        try:
            out.append(decode(path, read_bytes(path), language).text)
        except SourceError:
            pass
    return out


def _verl_python() -> list[str]:
    try:
        import verl  # noqa: F401  (only to find the installed package; nothing of it runs)
    except ImportError:
        return []
    return sorted(str(p) for p in Path(os.path.dirname(verl.__file__)).rglob("*.py"))


def test_the_trigger_search_finds_exactly_the_words_a_text_holds():
    words = ["float16", "bfloat16", "GRPOConfig", "SFTConfig", "DPOConfig", "Config", "flash_attn", "flash_attention",
             "flash_attention_", "flash-attn", "vllm", "VLLM", "'auto'", '"auto"', "LLM(", "AsyncLLM", "x"]
    scan = WordScan(words)
    texts = ["", "x", "bfloat16", "torch.float16", "SFTConfig(bf16=True)", "Config", "flash_attention_2",
             "AsyncLLM(x)", "LLM(", "'auto' \"auto\"", *_fixture_texts()]
    texts += [p.read_text(encoding="utf-8", errors="replace") for p in map(Path, _verl_python()[:120])]
    for text in texts:
        assert scan.present(text) == {w for w in words if w in text}
    python = Checker(resolve_target("sm61"), Options()).trigger_scan("python")
    for text in texts:
        assert python.present(text) == {w for w in python.words if w in text}
    # what it is for: a text without any trigger is searched for fewer strings than there are triggers
    assert python.searches() < len(python.words)


def _findings(checker: Checker, path: str, text: str, honour_requires: bool, monkeypatch) -> list:
    monkeypatch.setattr(runner, "plain", lambda: not honour_requires)
    result = checker.check_text(path, text, "python")
    return [(f.code, f.location, f.message, f.fix) for f in result.findings]


def requires_differences(codes: list[str], texts: list[tuple[str, str]], target: str, monkeypatch) -> list:
    """(path, findings with `requires` looked for, findings with it ignored) wherever they differ."""
    checker = Checker(resolve_target(target), Options(select=tuple(codes)))
    out = []
    for path, text in texts:
        gated = _findings(checker, path, text, True, monkeypatch)
        ungated = _findings(checker, path, text, False, monkeypatch)
        if gated != ungated:
            out.append((path, gated, ungated))
    return out


def _python_texts(paths: list[str]) -> list[tuple[str, str]]:
    out = []
    for path in paths:
        try:
            out.append((path, decode(path, read_bytes(path), "python").text))
        except SourceError:
            pass
    return out


@pytest.mark.parametrize("target", ["sm61", "sm75"])
def test_required_words_drop_no_finding_on_the_fixtures_and_verl(target, monkeypatch):
    assert REQUIRING, "no rule requires words besides a trigger"
    files, _ = discover([str(REPO / "fixtures")], Options(root=str(REPO)))
    texts = _python_texts([p for p, lang in files if lang == "python"] + _verl_python())
    examples = [(f"{r.code}-bad{i}.py", b.code) for r in REQUIRING for i, b in enumerate(r.bad) if b.path.endswith(".py")]
    differences = requires_differences([r.code for r in REQUIRING], texts + examples, target, monkeypatch)
    assert not differences, f"a rule's `requires` drops findings: {differences[:3]}"


def test_the_check_fails_on_a_rule_that_declares_a_module_its_findings_lack(monkeypatch):
    rule = BY_CODE["RLC304"]  # reports `torch.compile(...)`
    monkeypatch.setattr(rule, "resolves_from", ("a_module_no_file_imports",))
    examples = [(f"bad{i}.py", b.code) for i, b in enumerate(rule.bad) if b.target == "sm61"]
    differences = requires_differences(["RLC304"], examples, "sm61", monkeypatch)
    assert differences and all(not gated and ungated for _, gated, ungated in differences)


def test_what_a_rule_declares_it_needs_to_see_is_what_a_file_must_spell():
    from rlcompat.contract import ANY_MODULE

    class Declares:
        resolves_from = ("torch", ANY_MODULE)  # an import of torch or of anything: `torch` or `import`
        keywords = ("torch_dtype", "dtype")  # `torch_dtype` holds `dtype`: one word is enough
        calls = ()
        spelled = None
        requires = (("True",),)
        triggers = ()

    assert gate.holds(Declares, "import os\nm = load(dtype=True)\n")
    assert gate.holds(Declares, "torch.x(torch_dtype=True)\n")
    assert not gate.holds(Declares, "m = load(dtype=True)\n")  # neither torch nor an import
    assert not gate.holds(Declares, "import torch\nm = load(precision=True)\n")  # no keyword
    assert not gate.holds(Declares, "import torch\nm = load(dtype=False)\n")  # no required word
    Declares.spelled = re.compile(r"dtype=True")
    assert not gate.holds(Declares, "import torch\nm = load(dtype = True)\n")
    assert gate.holds(Declares, "import torch\nm = load(dtype=True)\n")


def test_a_group_every_trigger_holds_a_word_of_is_not_searched_again():
    # RLC111 declares only the calls it reports (`GRPOConfig(...)`): they are its triggers, and a file holding one
    # holds the call, so the gate asks nothing more; a group the triggers do not imply is still asked.
    class Calls:
        resolves_from, keywords, requires, spelled = (), ("bf16",), (), None
        calls = ("GRPOConfig", "DPOConfig")
        triggers = ("GRPOConfig", "DPOConfig")

    assert gate.word_groups(Calls) == (("bf16",),)
    Calls.triggers = ("GRPOConfig", "Config")  # `Config` holds no call of them
    assert gate.word_groups(Calls) == (("bf16",), ("GRPOConfig", "DPOConfig"))


def test_a_rule_that_visits_only_imports_keeps_nothing_else():
    target = resolve_target("sm61")
    rule = BY_CODE["RLC203"](target)  # module-level `import flash_attn`
    text = "import os\nBACKEND = 'flash_attn'\nfrom flash_attn import flash_attn_func\n\n\ndef f():\n    return 'flash_attn'\n"
    narrowed = py.narrow(text, [rule])
    assert narrowed is not None
    assert [line for line in narrowed.text.splitlines() if line.strip()] == ["from flash_attn import flash_attn_func"]
    assert narrowing_differences([BY_CODE["RLC203"]], text, "sm61") is None


NAMES_FROM_IMPORTS = [  # (rule, findings in the whole file, text)
    # `from M import N`: N holds no trigger, M.N does
    ("RLC305", 1, "from liger_kernel.transformers import AutoLigerKernelForCausalLM\n\n\ndef load(p):\n"
                  "    return AutoLigerKernelForCausalLM.from_pretrained(p)\n"),
    ("RLC304", 1, "from torch._dynamo import optimize\n\n\ndef build(m):\n    return optimize('inductor')(m)\n"),
    # a trigger that is more than a name (`LLM(`): the name in it is what an import binds
    ("RLC413", 1, "from vllm import LLM as Engine\n# an LLM( in a comment\n\n\ndef main():\n    return Engine('m')\n\n\n"
                  "if __name__ == '__main__':\n    main()\n"),
    # weights by a dtype string the rule reads (spellings.half_to_fp32) in a file that trains with fp16 AMP
    ("RLC108", 2, "m = AutoModelForCausalLM.from_pretrained(p, torch_dtype='half')\n"
                  "n = AutoModelForCausalLM.from_pretrained(p, torch_dtype='bf16')\n"
                  "args = TrainingArguments(output_dir='o', fp16=True)\n"),
]


@pytest.mark.parametrize("code,count,text", NAMES_FROM_IMPORTS, ids=[c for c, _, _ in NAMES_FROM_IMPORTS])
def test_narrowing_keeps_what_a_rule_reports_beside_its_trigger_words(code, count, text):
    rule = BY_CODE[code]
    target = resolve_target("sm61")
    whole = py.check(py.parse(text), text, "example.py", [rule(target)], target, scanned=_knowledge())
    assert len(whole) == count, f"{code} reports {len(whole)} findings, not {count}: the example proves nothing"
    assert narrowing_differences([rule], text, "sm61") is None


def _knowledge():
    from tests.verl_trees import verl_091_knowledge

    return verl_091_knowledge("example.py")


def test_a_triton_kernel_behind_a_local_jit_wrapper_is_read_whole():
    from rlcompat.rules.triton_compile.triton_shared_memory import _MATMUL_BODY

    kernel = _MATMUL_BODY.replace("@triton.jit\n", "@_jit\n")  # TRL's kernels: a wrapper that calls triton.jit
    text = ("import triton\nimport triton.language as tl\n\n\ndef _jit(fn):\n    return triton.jit(fn)\n\n\n" + kernel +
            "\n\ndef run(a, b, c, M, N, K):\n    matmul[(1,)](a, b, c, M, N, K, BLOCK_M=128, BLOCK_N=128, BLOCK_K=128, "
            "num_stages=3, num_warps=8)\n")
    rule = BY_CODE["RLC301"]
    target = resolve_target("sm61")
    whole = py.check(py.parse(text), text, "example.py", [rule(target)], target, scanned=_knowledge())
    assert whole, "RLC301 reports nothing here: the example proves nothing"
    assert py.narrow(text, [rule(target)]) is None  # the whole module
    assert narrowing_differences([rule], text, "sm61") is None



# Statements that hold imports and no trigger are narrowed inside: their clauses' headers stay, with what holds an
# import and, in a block left with nothing, its first statement. Each text below has findings that depend on those
# imports (or are those imports) and must come out the same narrowed and whole.
COMPOUND_IMPORTS = {
    "if": "if True:\n    import torch\n    x = 1\n    y = 2\n\n\ndef build(f):\n    return torch.compile(f)\n",
    "try-except-else-finally": (
        "try:\n    # a comment\n    import flash_attn\n    a = 1\nexcept ImportError:\n    fa = None\nelse:\n    ok = True\n"
        "finally:\n    done = True\n\nfrom flash_attn import flash_attn_func\n"),
    "nested loops and with": (
        "import os\nfor i in range(3):\n    while i:\n        with open(os.devnull) as fh:\n            from torch import compile as c\n"
        "            i -= 1\n    else:\n        pass\n\n\ndef run(f):\n    return c(f)\n"),
    "elif chain": (
        "if os:\n    v = 1\nelif sys:\n    import torch as th\n    w = 2\nelse:\n    z = 3\n\nm = th.nn.Linear(2, 2).to(th.bfloat16)\n"),
    "decorated function in a block": (
        "if True:\n    @staticmethod\n    def g():\n        import torch\n        return 1\n    q = 1\n\n\ndef h(f):\n"
        "    return torch.compile(f)\n"),
    "one-line clauses stay whole": "if True: import torch\nelse: x = 1\n\n\ndef h(f):\n    return torch.compile(f)\n",
    "semicolons": "for k in ():\n    import torch; y = 1\n    z = 2\n\n\ndef h(f):\n    return torch.compile(f)\n",
    "crlf and comments": ("# licence\r\n# more\r\n\r\nimport torch\r\n\r\n# between\r\n\r\nx = 1\r\n\r\n\r\n"
                          "def h(f):\r\n    # inside\r\n\r\n    y = 2\r\n    return torch.compile(f)\r\n# end\r\n"),
}
@pytest.mark.parametrize("name", list(COMPOUND_IMPORTS))
@pytest.mark.parametrize("target", ["sm61", "sm75"])
def test_statements_holding_only_imports_are_narrowed_inside_without_changing_findings(name, target):
    from rlcompat.lang.settings import ConfigRule

    text = COMPOUND_IMPORTS[name]
    rules = [r for r in all_rules() if "python" in r.languages and not issubclass(r, ConfigRule)]
    assert narrowing_differences(rules, text, target) is None
    t = resolve_target(target)
    instances = [r(t) for r in rules if r.applies_to(t)]
    whole = py.check(py.parse(text), text, "example.py", instances, t, scanned=_knowledge())
    assert whole or target == "sm75", f"nothing found in {name!r}: the text proves nothing"
    narrowed = py.narrow(text, instances)
    if name != "one-line clauses stay whole":
        assert narrowed is not None and len(narrowed.text) < len(text)


def test_imports_nothing_kept_uses_are_left_out_but_not_those_a_fix_names():
    from rlcompat.lang.pyspeed import narrow as narrowing

    text = ("from __future__ import annotations\n\nimport os\nimport torch\nfrom verl.utils import helper\n"
            "from torch import bfloat16\n\n\ndef build():\n    helper(os.getcwd())\n    return make(dtype=bfloat16)\n")
    target = resolve_target("sm61")
    rule = BY_CODE["RLC101"]
    narrowed = py.narrow(text, [rule(target)])
    assert narrowed is not None
    kept = narrowed.text
    # `os` and `helper` are used only by a statement left out; `torch` is what the fix writes (torch.float32)
    assert "import os" not in kept and "helper" not in kept
    assert "import torch\n" in kept and "from torch import bfloat16" in kept and "from __future__" in kept
    whole = py.check(py.parse(text), text, "example.py", [rule(target)], target, scanned=_knowledge())
    assert len(whole) == 1 and whole[0].fix is not None
    assert narrowing_differences([rule], text, "sm61") is None
    assert narrowing.NAMES_FOR_FIXES == {"torch"}


def test_every_module_a_rule_asks_a_local_name_for_is_kept_for_fixes():
    """Narrowing leaves out imports whose names no kept statement spells, except those binding a module in
    `narrow.NAMES_FOR_FIXES` (fixes write `torch.float32` through `ImportMap.local_name_for`): every module a rule
    or helper asks a local name for must be there."""
    import ast as pyast

    from rlcompat.lang.pyspeed import narrow as narrowing

    sources = [*REPO.joinpath("rules").rglob("*.py"), *REPO.joinpath("rlcompat", "analysis").rglob("*.py"),
               REPO / "rlcompat" / "analysis" / "triton_model.py"]
    asked = set()
    for path in sources:
        for node in pyast.walk(pyast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, pyast.Call) and getattr(node.func, "attr", None) == "local_name_for":
                arg = node.args[0] if node.args else None
                assert isinstance(arg, pyast.Constant), f"{path}: local_name_for with a computed module"
                asked.add(arg.value)
            assert not (isinstance(node, pyast.Attribute) and node.attr == "module_level"), \
                f"{path} reads ImportMap.module_level: narrowing keeps only NAMES_FOR_FIXES for it"
    assert asked and asked <= narrowing.NAMES_FOR_FIXES


# Knowledge rules (RLC118, RLC207, RLC355, RLC404) read a Python file's settings only where it spells a key of
# their kinds (`ConfigRule.reads_python`, `ConfigRule.kinds`): the words come from the knowledge, handed over by the
# scanned file (`python_key_words`).
KNOWLEDGE_RULES = [r for r in all_rules() if getattr(r, "kinds", None) and r.python_triggers]


def _config_outcomes(texts: list[tuple[str, str]], target: str, gated: bool, monkeypatch) -> list:
    from rlcompat.lang.settings import ConfigRule

    if not gated:
        monkeypatch.setattr(ConfigRule, "reads_python", lambda self, text, scanned: True)
    checker = Checker(resolve_target(target), Options(select=tuple(r.code for r in KNOWLEDGE_RULES)))
    out = [(path, [(f.code, f.location, f.message, f.fix) for f in checker.check_text(path, text, "python").findings])
           for path, text in texts]
    monkeypatch.undo()
    return out


@pytest.mark.parametrize("target", ["sm61", "sm75"])
def test_knowledge_rules_read_the_same_python_with_and_without_the_key_words(target, monkeypatch):
    assert {r.code for r in KNOWLEDGE_RULES} >= {"RLC118", "RLC207", "RLC355", "RLC404"}
    files, _ = discover([str(REPO / "fixtures")], Options(root=str(REPO)))
    texts = _python_texts([p for p, lang in files if lang == "python"] + _verl_python())
    gated = _config_outcomes(texts, target, True, monkeypatch)
    assert gated == _config_outcomes(texts, target, False, monkeypatch)
    if target == "sm61":
        assert any(found for _, found in gated), "no knowledge-rule finding in Python: the comparison proves nothing"


def test_the_key_words_come_from_the_knowledge_and_an_escape_reads_the_file_anyway():
    from rlcompat.knowledge.identity import environment_only
    from rlcompat.pipeline.scanned_file import ScannedFile

    rollout = BY_CODE["RLC404"](resolve_target("sm61"))
    scanned = ScannedFile("t.py", environment_only())
    words = scanned.python_key_words(rollout.kinds)
    assert {"use_vllm", "vllm_num_engines", "kv_cache_dtype", "enforce_eager"} <= words  # `kv-cache-dtype` as `_`
    assert not rollout.reads_python("import vllm\nengine = vllm.AsyncLLMEngine\n", scanned)
    assert rollout.reads_python("args = GRPOConfig(USE_VLLM=True)\n", scanned)  # any case
    assert rollout.reads_python("p.add_argument('--vllm-num-engines', default=2)\n", scanned)  # argparse's dest
    assert rollout.reads_python("cfg = {'use_\\x76llm': True}  # vllm\n", scanned)  # a key built by an escape
    assert rollout.reads_python("ｕse_vllm = True  # vllm\n", scanned)  # NFKC: CPython reads the name as use_vllm
    assert rollout.reads_python("import vllm\n", None)  # no file handed over: read


def test_the_python_key_check_fails_when_the_words_miss_a_key(monkeypatch):
    from rlcompat.knowledge import frameworks

    text = ("from trl import GRPOConfig\nargs = GRPOConfig(output_dir='o', use_vllm=True, bf16=False)\n")
    ungated = _config_outcomes([("t.py", text)], "sm61", False, monkeypatch)
    assert ungated[0][1], "RLC404 reports nothing here: the example proves nothing"
    real = frameworks._key_words
    monkeypatch.setattr(frameworks, "_key_words", lambda fw, kinds: (real(fw, kinds) or frozenset()) - {"use_vllm"})
    frameworks._KEY_WORDS.clear()
    try:
        gated = _config_outcomes([("t.py", text)], "sm61", True, monkeypatch)
    finally:
        frameworks._KEY_WORDS.clear()
    assert gated != ungated


# `dtype="auto"` as the grammar lets it be written: each must reach RLC109 (its `spelled`)
AUTO_SPELLINGS = [
    "m = AutoModel.from_pretrained(p, torch_dtype='auto')\n",
    'm = AutoModel.from_pretrained(p, dtype = "auto")\n',
    'm = AutoModel.from_pretrained(\n    p,\n    torch_dtype  # from the checkpoint\n    =\n    """auto""",\n)\n',
    "m = AutoModel.from_pretrained(p, torch_dtype=\\\n    r'auto')\n",
    "m = AutoModel.from_pretrained(p, torch_dtype=U'''auto''')\n",
    # escapes: the trigger ('auto' quoted) is elsewhere in the file
    "m = AutoModel.from_pretrained(p, torch_dtype='au\\x74o', device_map='auto')\n",
    "m = AutoModel.from_pretrained(p, torch_dtype='au\\\nto', device_map='auto')\n",
    "llm = LLM(model='Qwen/Qwen2.5-0.5B', dtype='auto')\n",
]


# Every way a name can resolve to what RLC304 reports (`torch.compile`, `torch._dynamo.optimize`, flex_attention),
# spelled as the grammar allows: each must reach the rule (its `spelled`)
COMPILER_SPELLINGS = [
    "import torch\n\ndef build(f):\n    return torch.compile(f)\n",
    "import torch\n\n@torch.compile\ndef f(x):\n    return x\n",
    "import torch as th\n\ndef build(f):\n    return th.compile(f)\n",
    "import os, torch as th\n\ndef build(f):\n    return th.compile(f)\n",
    "import torch\n\ndef build(f):\n    return (torch  # compile it\n            .compile)(f)\n",
    "import torch\n\ndef build(f):\n    return torch.\\\n        compile(f)\n",
    "from torch import compile as c\n\ndef build(f):\n    return c(f)\n",
    "from torch import (\n    nn,  # the modules (layers)\n    compile,\n)\n\ndef build(f):\n    return compile(f)\n",
    "from torch import nn, \\\n    compile\n\ndef build(f):\n    return compile(f)\n",
    "import torch._dynamo as dyn\n\ndef build(m):\n    return dyn.optimize('inductor')(m)\n",
    "from torch import _dynamo\n\ndef build(m):\n    return _dynamo.optimize('inductor')(m)\n",
    "from torch._dynamo import optimize\n\ndef build(m):\n    return optimize('inductor')(m)\n",
    "import torch\n\ndef build(m):\n    return torch._dynamo.optimize('inductor')(m)\n",
    "import torch\n\ndef build(f):\n    return getattr(torch, 'compile')(f)\n",
    "import torch\n\ndef build(f):\n    return getattr(torch, 'comp\\x69le')(f)  # compile\n",
    "from torch.nn.attention.flex_attention import flex_attention as fa\n\ndef attn(q, k, v):\n    return fa(q, k, v)\n",
]


@pytest.mark.parametrize("code, text", [("RLC109", text) for text in AUTO_SPELLINGS]
                         + [("RLC304", text) for text in COMPILER_SPELLINGS])
def test_every_spelling_reaches_the_rule_whose_spelled_pattern_it_must_match(code, text, monkeypatch):
    assert BY_CODE[code].spelled.search(text)
    checker = Checker(resolve_target("sm61"), Options(select=(code,)))
    assert checker.check_text("t.py", text, "python").findings, f"{code} reports nothing here: the text proves nothing"
    assert not requires_differences([code], [("t.py", text)], "sm61", monkeypatch)


def test_re_compile_and_the_word_compile_do_not_reach_the_compiler_rule():
    pattern = BY_CODE["RLC304"].spelled
    for text in ("import re\nimport torch\nP = re.compile('x')\n", "import torch\n# we compile the graph\n",
                 "import torch\ntorch._dynamo.reset()\n", "import torch\nfrom torch import nn\nx = compile_fx(m)\n"):
        assert not pattern.search(text), text


@pytest.mark.parametrize("text, spells", [
    ("torch.compile(f)", True),                 # at the very start: nothing before it to look behind at
    ("x = torch . compile(f)", True),
    ("x = mytorch.compile(f)", False),          # a word character before `torch`
    ("x = a.torch.compile(f)", False),          # an attribute named torch
    ("import torch as th", True),
    ("from torch import compile", True),
    ("xfrom torch import compile", False),
    ("y = flex_attention(q, k, v)", True),
    ("y = m.flex_attention(q, k, v)", True),    # flex_attention looks behind for a word character only
    ("y = myflex_attention(q, k, v)", False),
    ("x = re.compile('a')", False),
])
def test_rlc304_pattern_looks_behind_each_literal_as_before(text, spells):
    # The pattern starts each alternative with its literal and looks behind it afterwards (speed: `re` can skip to
    # candidate first characters); these are the edges where that must still equal a leading lookbehind.
    from rlcompat.rules.triton_compile.torch_compile_below_sm70 import _SPELLS_A_COMPILER

    assert (_SPELLS_A_COMPILER.search(text) is not None) == spells
