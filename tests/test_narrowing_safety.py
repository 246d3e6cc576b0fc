"""Narrowing (rlcompat/lang/pyspeed/narrow.py) cannot silently lose a finding when a rule forgets to say what it reads.

Two ways a rule could lose findings to narrowing: it reads statements other than a node's ancestors and earlier
imports without declaring `whole_module`, or it reads a keyword argument beside the node it visits that is not in
`narrow._READ_KEYWORDS` (inside a big statement, keyword arguments without a trigger are left out). So:
- every rule's own examples, and every fixture, give each rule the same findings narrowed and parsed whole, with
  narrowing inside statements switched on for statements of any size (it normally waits for 32 lines);
- every keyword name a rule or a rule helper compares an argument's keyword with is in `_READ_KEYWORDS`.
Both checks are shown to fail on a rule that breaks them.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from rlcompat.config import Options
from rlcompat.pipeline.discovery import discover, language_of
from rlcompat.lang import python as py
from rlcompat.lang.pyspeed import narrow as narrowing
from rlcompat.lang.settings import ConfigRule
from tests.verl_trees import verl_091_knowledge
from rlcompat.findings import Finding
from rlcompat.rules import all_rules
from rlcompat.knowledge.targets import resolve_target

REPO = Path(__file__).resolve().parent.parent
PYTHON_RULES = [r for r in all_rules() if "python" in r.languages and not issubclass(r, ConfigRule)]


def _findings(rules: list, text: str, target, narrow: bool) -> list:
    narrowed = py.narrow(text, rules) if narrow else None
    try:
        tree = py.parse(narrowed.text) if narrowed is not None else py.parse(text)
    except py.PythonSyntaxError:
        if narrowed is None:
            return ["syntax error"]
        narrowed, tree = None, py.parse(text)  # as the engine does: the whole file decides
    found = py.check(tree, text, "example.py", rules, target, narrowed=narrowed,
                     scanned=verl_091_knowledge("example.py"))
    return [(f.code, f.location, f.message, f.fix, f.source_line) for f in sorted(found, key=Finding.sort_key)]


def narrowing_differences(rule_classes: list, text: str, target_name: str) -> tuple[list, list] | None:
    """(narrowed findings, whole-file findings) of these rules on `text` where they differ, else None. Narrowing
    inside statements applies to statements of every size here, so small examples exercise it too."""
    target = resolve_target(target_name)
    rules = [cls(target) for cls in rule_classes if cls.applies_to(target)]
    if not rules or not any(t in text for r in rules for t in r.triggers):
        return None
    original = narrowing.INSIDE_MIN_LINES
    narrowing.INSIDE_MIN_LINES = 1
    try:
        narrowed = _findings(rules, text, target, narrow=True)
    finally:
        narrowing.INSIDE_MIN_LINES = original
    whole = _findings(rules, text, target, narrow=False)
    return None if narrowed == whole else (narrowed, whole)


def _with_selected(rule) -> list:
    by_code = {r.code: r for r in all_rules()}
    return [rule, *(by_code[c] for c in rule.examples_select if c in by_code and by_code[c] in PYTHON_RULES)]


EXAMPLES = [pytest.param(r, e, id=f"{r.code}-{kind}{i}") for r in PYTHON_RULES
            for kind, examples in (("bad", r.bad), ("good", r.good)) for i, e in enumerate(examples)
            if language_of(e.path) == "python"]


@pytest.mark.parametrize("rule,example", EXAMPLES)
def test_a_rule_finds_the_same_on_its_examples_narrowed_and_whole(rule, example):
    differences = narrowing_differences(_with_selected(rule), example.code, example.target)
    assert differences is None, (f"{rule.code} finds something else when statements without a trigger are left out: "
                                 "declare `whole_module`, or add the keyword it reads to narrow._READ_KEYWORDS\n"
                                 f"narrowed: {differences[0]}\nwhole:    {differences[1]}")


def _fixture_texts() -> list[tuple[str, str]]:
    files, _ = discover([str(REPO / "fixtures")], Options(root=str(REPO)))
    return [(p, Path(p).read_text("utf-8")) for p, lang in files if lang == "python"]


@pytest.mark.parametrize("target", ["sm61", "sm75"])
def test_every_rule_finds_the_same_on_the_fixtures_narrowed_and_whole(target):
    texts = _fixture_texts()
    assert texts
    for rule in PYTHON_RULES:
        for path, text in texts:
            assert narrowing_differences([rule], text, target) is None, f"{rule.code} on {path}"


# --- what the check catches ------------------------------------------------------------------------------------

class _ReadsASibling(py.PythonRule):
    """Reports a bf16 cast only when the module sets `STRICT = 1` somewhere: it reads a statement that is not an
    ancestor, and does not declare `whole_module`."""

    code, name, severity = "RLC998", "reads-a-sibling", "error"
    names = ("bfloat16",)

    def visit_Attribute(self, node, ctx) -> None:
        module = ctx.ancestors[0]
        strict = any("STRICT" in py.cst.Module(body=[s]).code for s in module.body)
        if node.attr.value == "bfloat16" and strict:
            ctx.report(node, "bf16")

    @classmethod
    def applies_to(cls, target) -> bool:
        return True


class _ReadsAKeyword(_ReadsASibling):
    """Reports `f(torch.bfloat16, flavour="x")`: it reads a keyword beside the argument it visits."""

    code = "RLC997"

    def visit_Attribute(self, node, ctx) -> None:
        call = next((a for a in reversed(ctx.ancestors) if isinstance(a, py.cst.Call)), None)
        if call is not None and any(a.keyword is not None and a.keyword.value == "flavour" for a in call.args):
            ctx.report(node, "bf16 with a flavour")


def test_the_check_catches_a_rule_that_forgets_whole_module():
    text = "import torch\nSTRICT = 1\nx = t.to(torch.bfloat16)\n"
    differences = narrowing_differences([_ReadsASibling], text, "sm61")
    assert differences is not None and differences[0] == [] and len(differences[1]) == 1
    _ReadsASibling.whole_module = True
    try:
        assert narrowing_differences([_ReadsASibling], text, "sm61") is None
    finally:
        del _ReadsASibling.whole_module


def test_the_check_catches_a_keyword_read_beside_the_visited_node():
    text = 'import torch\nx = f(\n    torch.bfloat16,\n    flavour="x",\n)\n'
    differences = narrowing_differences([_ReadsAKeyword], text, "sm61")
    assert differences is not None and differences[0] == [] and len(differences[1]) == 1


# --- the keywords rules read -----------------------------------------------------------------------------------

# A keyword read through a name that no module attribute holds, and why narrowing cannot cut it.
_DYNAMIC = {("rlcompat/analysis/triton_model.py", "constexpr_params"):
            "a kernel's own constexpr parameters, read only by RLC301, which parses the whole module"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(["rlcompat", *parts] if parts[0] == "rules" else parts)


def keywords_read(source: str, module=None, label: str = "") -> tuple[set[str], set[str]]:
    """(keyword names compared with an argument's `.keyword.value`, or passed as a literal to a `keyword(call, name)`
    or `_kwarg(call, name)` helper; names that could not be resolved). A name is resolved through `module`'s
    attributes; a function's own parameter is left to its callers, whose literals are found here too."""
    names: set[str] = set()
    unresolved: set[str] = set()

    def strings(expr: ast.expr, params: set[str]) -> set[str]:
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            return {expr.value}
        if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
            return set().union(*(strings(e, params) for e in expr.elts))
        if isinstance(expr, ast.Name) and expr.id in params:
            return set()
        if isinstance(expr, ast.Name) and module is not None and hasattr(module, expr.id):
            return {str(v) for v in getattr(module, expr.id)}
        if (isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id in ("self", "cls")
                and module is not None):
            # a rule's declared attribute (`keywords = ("torch_dtype", "dtype")`, which also gates the file): the
            # values of every class of the module that declares it
            declared = [vars(c)[expr.attr] for c in vars(module).values()
                        if isinstance(c, type) and c.__module__ == module.__name__ and expr.attr in vars(c)]
            if declared:
                return {str(v) for values in declared for v in values}
        if (label, getattr(expr, "id", None)) not in _DYNAMIC:
            unresolved.add(ast.unparse(expr))
        return set()

    functions = [n for n in ast.walk(ast.parse(source)) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for func in functions:
        params = {a.arg for a in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]}
        # `key = arg.keyword.value` then `key == "fp16"`: the variable stands for the keyword too.
        aliases = {t.id for n in ast.walk(func) if isinstance(n, ast.Assign) and _is_keyword_value(n.value, set())
                   for t in n.targets if isinstance(t, ast.Name)}
        for node in ast.walk(func):
            if isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
                if any(_is_keyword_value(o, aliases) for o in operands):
                    for o in operands:
                        if not _is_keyword_value(o, aliases):
                            names |= strings(o, params)
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("keyword", "_kwarg")
                  and len(node.args) == 2):
                names |= strings(node.args[1], params)
    return names, unresolved


def _is_keyword_value(expr: ast.expr, aliases: set[str]) -> bool:
    if isinstance(expr, ast.Name):
        return expr.id in aliases
    return (isinstance(expr, ast.Attribute) and expr.attr == "value" and isinstance(expr.value, ast.Attribute)
            and expr.value.attr == "keyword")


def _readers() -> list[Path]:
    return [*sorted((REPO / "rules").rglob("*.py")), *sorted((REPO / "rlcompat" / "analysis").glob("*.py")),
            REPO / "rlcompat" / "analysis" / "triton_model.py", REPO / "rlcompat" / "lang" / "python.py"]


def test_every_keyword_a_rule_reads_is_kept_by_narrowing():
    missing, unresolved = {}, {}
    for path in _readers():
        label = str(path.relative_to(REPO))
        module = importlib.import_module(_module_name(path)) if not path.name.startswith("test_") else None
        names, unknown = keywords_read(path.read_text("utf-8"), module, label)
        if names - narrowing._READ_KEYWORDS:
            missing[label] = sorted(names - narrowing._READ_KEYWORDS)
        if unknown:
            unresolved[label] = sorted(unknown)
    assert not missing, f"keywords read beside the visited node that narrowing may leave out: {missing}; add them to _READ_KEYWORDS"
    assert not unresolved, f"keyword names this test cannot resolve: {unresolved}; name them in a module constant"


def test_the_keyword_scan_sees_comparisons_aliases_constants_and_helpers():
    source = (
        "FLAVOURS = ('sweet', 'sour')\n"
        "def visit_Call(self, node, ctx):\n"
        "    if any(a.keyword is not None and a.keyword.value == 'flavour' for a in node.args):\n"
        "        pass\n"
        "    key = node.args[0].keyword.value\n"
        "    if key in FLAVOURS or key == 'texture':\n"
        "        pass\n"
        "    keyword(node, 'colour')\n"
        "def keyword(call, name):\n"
        "    return [a for a in call.args if a.keyword.value == name]\n"
        "def other(call, wanted):\n"
        "    return call.args[0].keyword.value in computed(wanted)\n"
    )

    class Module:
        FLAVOURS = ("sweet", "sour")

    names, unresolved = keywords_read(source, Module)
    assert names == {"flavour", "sweet", "sour", "texture", "colour"}
    assert unresolved == {"computed(wanted)"}


def test_a_first_member_left_out_takes_its_decorators_with_it():
    # The header kept of a class or function ends before its first member's decorators: a decorator left without
    # its definition does not parse, and the whole file was parsed instead (torch 2.13 _inductor/codecache.py,
    # _functorch/_aot_autograd/graph_compile.py).
    class Bf16:
        triggers = ("bfloat16",)

    text = ("import torch\n"
            "class C:\n"
            "    @dataclass\n"
            "    class Entry:\n"
            "        path: str\n"
            "    x = torch.bfloat16\n"
            "def f():\n"
            "    @wraps(g)\n"
            "    def inner():\n"
            "        return 1\n"
            "    return torch.bfloat16\n")
    narrowed = narrowing.narrow(text, [Bf16()])
    assert narrowed.text == "import torch\nclass C:\n    x = torch.bfloat16\ndef f():\n    return torch.bfloat16\n"
    ast.parse(narrowed.text)


# --- what a rule's triggers keep inside a big statement (lang/pyspeed/parts.py) ----------------------------------

# A table of test cases as torch's `op_db` writes them: dtypes listed (no finding), and inside the same statement a
# dtype selected (RLC101: a keyword, `.to(...)`), a dtype string chosen (RLC102) and half weights under fp16 AMP
# (RLC108: the loader call and the switch sit in parts of their own).
_OP_TABLE = '''import torch
from transformers import AutoModelForCausalLM, TrainingArguments
from torch.testing._internal.common_dtype import floating_types_and
op_db = [
    OpInfo('add',
           dtypes=floating_types_and(torch.bfloat16, torch.half),
           skips=(DecorateInfo(unittest.skip, 'TestX', dtypes=(torch.bfloat16,)),),
           tols={torch.bfloat16: 1e-2, torch.float16: 1e-3},
           checked=lambda dtype: dtype == torch.bfloat16,
           note="bfloat16 and float16 rows"),
    OpInfo('mul',
           sample=partial(make, dtype=torch.bfloat16),
           cast=lambda t: t.to(torch.bfloat16),
           options=dict(precision="bf16", mixed_precision="bf16")),
    Case(loaded=AutoModelForCausalLM.from_pretrained('p', torch_dtype=torch.float16),
         args=TrainingArguments(output_dir='o', fp16=True),
         dtypes=floating_types_and(torch.float16)),
]
'''


def _narrowed_inside(rule_classes: list, text: str, target_name: str):
    target = resolve_target(target_name)
    original = narrowing.INSIDE_MIN_LINES
    narrowing.INSIDE_MIN_LINES = 1
    try:
        return py.narrow(text, [cls(target) for cls in rule_classes if cls.applies_to(target)])
    finally:
        narrowing.INSIDE_MIN_LINES = original


@pytest.mark.parametrize("target", ["sm61", "sm75"])
def test_a_table_of_dtypes_is_left_out_and_every_finding_beside_it_stays(target):
    rules = [r for r in PYTHON_RULES if r.code in ("RLC101", "RLC102", "RLC108", "RLC136", "RLC303")]
    assert narrowing_differences(rules, _OP_TABLE, target) is None
    whole = _findings([r(resolve_target(target)) for r in rules if r.applies_to(resolve_target(target))], _OP_TABLE,
                      resolve_target(target), narrow=False)
    assert {f[0] for f in whole} >= {"RLC101", "RLC102", "RLC108"}  # the table holds findings of each to keep
    narrowed = _narrowed_inside(rules, _OP_TABLE, target).text
    assert "floating_types_and(torch.bfloat16" not in narrowed and "DecorateInfo" not in narrowed
    assert "tols=" not in narrowed and "checked=" not in narrowed
    assert "note=" in narrowed  # a string spelling a trigger: RLC102 reads strings wherever they are
    assert "floating_types_and(torch.float16)" not in narrowed
    for kept in ("dtype=torch.bfloat16", "t.to(torch.bfloat16)", '"bf16"', "torch_dtype=torch.float16", "fp16=True"):
        assert kept in narrowed, kept


class _ReportsOutsideItsRoles(_ReadsASibling):
    """Declares that it reports a dtype only where it is assigned, and reports it wherever it is."""

    code = "RLC996"
    resolves_from = ("torch",)
    reports_roles = frozenset({"assign"})

    def visit_Attribute(self, node, ctx) -> None:
        if node.attr.value == "bfloat16":
            ctx.report(node, "bf16 anywhere")


class _ReadsAnUndeclaredCall(py.PythonRule):
    """Visits only calls and declares it reads `.to(...)`, but a `.to(...)` is reported only after an `enable(...)`."""

    code, name, severity = "RLC995", "reads-an-undeclared-call", "error"
    names = ("bfloat16",)
    reads_calls = ("to",)

    @classmethod
    def applies_to(cls, target) -> bool:
        return True

    def visit_Call(self, node, ctx) -> None:
        name = getattr(node.func, "attr", getattr(node.func, "value", None))
        name = getattr(name, "value", name)
        if name == "enable":
            ctx.__dict__["_enabled"] = True
        elif name == "to" and ctx.__dict__.get("_enabled"):
            ctx.report(node, "bf16 after enable")


def test_the_check_catches_a_rule_that_reports_outside_its_declared_roles():
    text = "import torch\nx = f(\n    torch.float32,\n    flavour=g(torch.bfloat16),\n)\n"
    differences = narrowing_differences([_ReportsOutsideItsRoles], text, "sm61")
    assert differences is not None and differences[0] == [] and len(differences[1]) == 1
    _ReportsOutsideItsRoles.reports_roles = frozenset({"assign", "positional"})
    try:
        assert narrowing_differences([_ReportsOutsideItsRoles], text, "sm61") is None
    finally:
        _ReportsOutsideItsRoles.reports_roles = frozenset({"assign"})


def test_the_check_catches_a_call_read_that_reads_calls_does_not_name():
    text = "import torch\nx = f(\n    a=enable(torch.bfloat16),\n    b=m.to(torch.bfloat16),\n)\n"
    differences = narrowing_differences([_ReadsAnUndeclaredCall], text, "sm61")
    assert differences is not None and differences[0] == [] and len(differences[1]) == 1
    _ReadsAnUndeclaredCall.reads_calls = ("to", "enable")
    try:
        assert narrowing_differences([_ReadsAnUndeclaredCall], text, "sm61") is None
    finally:
        _ReadsAnUndeclaredCall.reads_calls = ("to",)


def test_a_call_trigger_is_bound_by_an_import_of_a_name_that_ends_with_it():
    # `dtype(` (RLC136: a helper named for the dtype it picks) is what an imported name ends with: `pick_dtype`
    # imported as `pd` makes `pd()` a statement to keep; a helper of a module named `common_dtype` is no `dtype(`.
    class Helper:
        triggers = ("dtype(",)

    text = ("from m.common_dtype import floating_types_and\nfrom m import pick_dtype as pd\n"
            "a = floating_types_and(x)\nb = pd()\n")
    narrowed = narrowing.narrow(text, [Helper()])
    assert "b = pd()" in narrowed.text and "floating_types_and(x)" not in narrowed.text
