"""Whether a value a Python entry point uses only under its own switches reaches a run its tree launches.

The node (`use_flash_attention_2=True`, a keyword a config rule reads) sits in the body of `if args.use_flash_attn:`
(nested `if`s and `and` count as all of their switches); each such switch is an option the file's parser leaves off
(`action="store_true"` without a true default, or a valued option without a default); the launch files that run the
entry point (analysis/entry_switches.py finds them) exist and none passes all of them: then no shipped run reaches the
value. ColossalChat's `train_ppo.py` loads its models with `use_flash_attention_2=True` only under `--use_flash_attn`,
which `train_ppo.sh` never passes. With no launch file of the entry point the user's own command decides, and the
finding stays. A default the parser gives (`--mixed_precision` fp16) is not this case: every run that leaves the
option out has it, launch files or not.

Text is compared, not parsed, as in entry_switches: a flag spelled anywhere in a launch file counts as passed, which
errs towards reporting.
"""

from __future__ import annotations

import ast
import os
import re

import libcst as cst

from rlcompat.analysis.entry_switches import launchers_of


_NOT_LITERAL = object()
# A comparison true only where a switch is on, by operator class name (LibCST's and CPython's; `Is` and `IsNot` are
# spelled alike in both): `== 1` / `== True`, `is True`, `!= 0` / `!= False` / `!= None`, `is not None` / `is not
# False` (`1 == True` in Python, so one entry stands for both). MiniMind's `if args.use_compile == 1:`.
_ON_TESTS = {"Equal": (1,), "Eq": (1,), "NotEqual": (0, None), "NotEq": (0, None), "Is": (True,),
             "IsNot": (None, False)}


def unpassed_switch_guards(ctx) -> bool:
    """For a Python rule at a node: whether it runs only under switches of the file's parser that no launch file
    passes."""
    names = _switch_guards(ctx.ancestors)
    if not names or not _on_disk(ctx) or "add_argument" not in ctx.source_text:
        return False
    options, _ = _switches(ctx)
    return _unreached(names, options, lambda: _launchers(ctx))


def setting_unpassed(ctx, setting) -> bool:
    """For a config rule's Python setting (a keyword, an assignment): the same question, the `if`s found by line."""
    if (setting.key_span is None or not setting.guards or "add_argument" not in ctx.source_text
            or not _on_disk(ctx)):
        return False  # a file that declares no option has no switch of its own to leave off
    options, ifs = _switches(ctx)
    line = ctx.source_text.count("\n", 0, setting.key_span.start) + 1
    names: set[str] = set()
    for first, last, tested in ifs:
        if first <= line <= last:
            names |= tested
    return bool(names) and _unreached(names, options, lambda: _launchers(ctx))


def _switches(ctx) -> tuple[dict[str, tuple[set[str], bool]], list[tuple[int, int, set[str]]]]:
    """The file's argparse options and the `if` bodies that test names, from one parse and one walk of the file
    whichever rules ask (a Python rule at a node, a config rule at a line, every target's in `rlcompat matrix`): a
    1.4 MB file has thousands of guarded settings."""
    text = ctx.source_text
    return ctx.scanned.derived("argparse_switches", text, lambda: _switches_in(text))


def _switches_in(text: str) -> tuple[dict[str, tuple[set[str], bool]], list[tuple[int, int, set[str]]]]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return {}, []
    options: dict[str, tuple[set[str], bool]] = {}
    bodies: list[tuple[int, int, set[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and node.body:
            tested = _ast_tested_names(node.test)
            if tested:
                bodies.append((node.body[0].lineno, node.body[-1].end_lineno or 0, tested))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
            option = _option_of(node)
            if option is not None:
                options[option[0]] = option[1]
    return options, bodies


def _unreached(names: set[str], declared: dict[str, tuple[set[str], bool]], launchers) -> bool:
    """Whether the guards `names` (all of which must hold) include off switches of the parser and no launch file
    passes every one of them."""
    guards = []
    for name in names:
        option = declared.get(name)
        if option is None:
            continue  # not an option of this parser (a local, another object's field): it decides nothing here
        flags, off = option
        if off:
            guards.append(flags)
    if not guards:
        return False
    running = launchers()
    if not running:
        return False
    return not any(all(_spells(text, flags) for flags in guards) for _, text in running)


def _on_disk(ctx) -> bool:
    return ctx.scanned is not None and bool(ctx.path) and os.path.isfile(ctx.path)


def _launchers(ctx) -> list[tuple[str, str]]:
    running = ctx.scanned.derived("entry_launchers", ctx.path, lambda: launchers_of(os.path.abspath(ctx.path)))
    ctx.scanned.record_reads([path for path, _ in running])
    return running


def _spells(text: str, flags: set[str]) -> bool:
    return any(re.search(rf"(?<![\w-]){re.escape(f)}(?![\w-])", text) for f in flags)


def _switch_guards(ancestors: list[cst.CSTNode]) -> set[str]:
    """The attribute or plain names tested by each `if` whose body (not its `else`) holds the node: `if
    args.use_flash_attn:` gives {"use_flash_attn"}; `and` gives every operand's; any other test adds nothing."""
    names: set[str] = set()
    for parent, child in zip(ancestors, ancestors[1:]):
        if isinstance(parent, cst.If) and child is parent.body:
            names |= _tested_names(parent.test)
    return names


def _tested_names(test: cst.BaseExpression) -> set[str]:
    if isinstance(test, cst.Attribute):
        return {test.attr.value}
    if isinstance(test, cst.Name):
        return {test.value}
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _tested_names(test.left) | _tested_names(test.right)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        # `args.use_compile == 1`, `args.x is True`, `args.x != 0`: true only where the switch is on
        comparison = test.comparisons[0]
        on = _ON_TESTS.get(type(comparison.operator).__name__)
        if on is not None and _literal(comparison.comparator) in on:
            return _tested_names(test.left)
    return set()


def _literal(expr: cst.BaseExpression) -> object:
    """The value of a number, True/False/None or a string literal; a marker that no test matches otherwise."""
    if isinstance(expr, cst.Integer):
        try:
            return ast.literal_eval(expr.value)
        except (ValueError, SyntaxError):
            return _NOT_LITERAL
    if isinstance(expr, cst.Name) and expr.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[expr.value]
    return _NOT_LITERAL


def _ast_tested_names(test: ast.expr) -> set[str]:
    if isinstance(test, ast.Attribute):
        return {test.attr}
    if isinstance(test, ast.Name):
        return {test.id}
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return set().union(*(_ast_tested_names(v) for v in test.values))
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        on = _ON_TESTS.get(type(test.ops[0]).__name__)
        comparator = test.comparators[0]
        value = comparator.value if isinstance(comparator, ast.Constant) else _NOT_LITERAL
        if on is not None and not isinstance(value, str) and value in on:
            return _ast_tested_names(test.left)
    return set()


def _option_of(node: ast.Call) -> tuple[str, tuple[set[str], bool]] | None:
    """(dest, (option strings, whether leaving the option out leaves it off)) of one `add_argument` call."""
    flags = {a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
             and a.value.startswith("-")}
    longs = sorted(f for f in flags if f.startswith("--"))
    keywords = {k.arg: k.value for k in node.keywords if k.arg}
    dest = keywords.get("dest")
    name = (dest.value if isinstance(dest, ast.Constant) and isinstance(dest.value, str)
            else longs[0].lstrip("-").replace("-", "_") if longs else None)
    return (name, (flags, _left_off(keywords))) if name else None


def _left_off(keywords: dict[str, ast.expr]) -> bool:
    """An option that leaving out makes false: a `store_true` switch or a valued option without a true default."""
    action = keywords.get("action")
    if action is not None and not (isinstance(action, ast.Constant) and action.value == "store_true"):
        return False  # store_false, count, append, a custom Action: not a plain off switch
    default = keywords.get("default")
    return default is None or (isinstance(default, ast.Constant) and default.value in (None, False))
