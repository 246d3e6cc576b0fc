"""Reusable CST questions for rules: where does an expression sit, is it guarded, what string is it."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from rlcompat.lang.pyroles import DEFAULT_ARG_INDEX, DTYPE_NAMES, NON_SELECTING_CALLS


@dataclass(frozen=True)
class Role:
    """How an expression's value is used.

    kind: keyword | positional | default | assign | param-default | dict-value | compare | table | return | index | other
    name: the keyword, assigned target, parameter or dict key it is bound to ("" if none)
    """

    kind: str
    name: str = ""
    call: cst.Call | None = None
    call_name: str = ""


def call_name(call: cst.Call) -> str:
    """The last component of what is called: `cfg.get` -> "get", `getattr` -> "getattr"."""
    func = call.func
    if isinstance(func, cst.Attribute):
        return func.attr.value
    if isinstance(func, cst.Name):
        return func.value
    return ""


def with_keywords(call: cst.Call, added: list[tuple[str, str]]) -> str:
    """The code of `call` with `name=value` keyword arguments appended (`RLConfig(x=1)` -> `RLConfig(x=1, bf16=False)`),
    each after a comma and a space, the last one keeping the call's own trailing comma."""
    args = list(call.args)
    for keyword, value in added:
        new = cst.Arg(keyword=cst.Name(keyword), value=cst.Name(value),
                      equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))
        if args:
            new = new.with_changes(comma=args[-1].comma)
            args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        args.append(new)
    return cst.Module([]).code_for_node(call.with_changes(args=args))


def target_name(node: cst.BaseExpression) -> str:
    """The name an assignment target binds: `x`, `self.x` -> "x", `d["x"]` -> "x"."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    if isinstance(node, cst.Subscript) and len(node.slice) == 1:
        index = node.slice[0].slice
        if isinstance(index, cst.Index):
            value = string_value(index.value)
            if value is not None:
                return value
    return ""


def string_value(node: cst.CSTNode) -> str | None:
    """The value of a plain (non-f, non-bytes) string literal, else None."""
    if isinstance(node, cst.SimpleString):
        prefix = node.prefix.lower()
        if "b" in prefix:
            return None
        body = node.value[len(prefix) + len(node.quote) : -len(node.quote)]
        if "\\" not in body and "\r" not in body:
            return body  # nothing to unescape: skip `evaluated_value`, which runs CPython's parser per string
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def model_name(call: cst.Call) -> str | None:
    """The model id a loader or engine call is given: `model=`/`model_name=` or the first positional string."""
    for i, arg in enumerate(call.args):
        if (arg.keyword is None and i == 0) or (arg.keyword is not None and arg.keyword.value in ("model", "model_name")):
            value = string_value(arg.value)
            if value is not None:
                return value
    return None


def requote(node: cst.SimpleString, new_value: str) -> str:
    """The literal with a new value in the same quotes and prefix."""
    return f"{node.prefix}{node.quote}{new_value}{node.quote}"


def _is_dtype_attribute(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Attribute) and expr.attr.value in DTYPE_NAMES


def role_of(node: cst.CSTNode, ancestors: list[cst.CSTNode]) -> Role:
    """Where `node` (whose ancestors are given, nearest last) sits, seen through if-else and or/and (`roles.kind_of`
    gives the same kind from CPython's tree, for the narrowing)."""
    child = node
    i = len(ancestors) - 1
    while i >= 0:
        parent = ancestors[i]
        if isinstance(parent, cst.IfExp) and child is not parent.test:
            child, i = parent, i - 1
            continue
        if isinstance(parent, cst.BooleanOperation):
            child, i = parent, i - 1
            continue
        break
    if i < 0:
        return Role("other")
    parent = ancestors[i]
    if isinstance(parent, cst.Arg):
        call = ancestors[i - 1] if i >= 1 and isinstance(ancestors[i - 1], cst.Call) else None
        name = call_name(call) if call is not None else ""
        if parent.keyword is not None:
            return Role("keyword", parent.keyword.value, call, name)
        if call is None or parent.star:
            return Role("other")
        position = next((n for n, a in enumerate(call.args) if a is parent), -1)
        if DEFAULT_ARG_INDEX.get(name) == position:
            key = string_value(call.args[position - 1].value) if position >= 1 else None
            return Role("default", key or "", call, name)
        if name in NON_SELECTING_CALLS:
            return Role("other", "", call, name)
        if "types" in name.lower() or sum(_is_dtype_attribute(a.value) for a in call.args if a.keyword is None) >= 2:
            # A list of dtypes built by a call (`floating_types_and(torch.half, torch.bfloat16)`, `@dtypes(...)`
            # in torch's own tests): a table of what is supported, not a dtype chosen.
            return Role("table", "", call, name)
        return Role("positional", "", call, name)
    if isinstance(parent, cst.Assign) and child is parent.value:
        names = [target_name(t.target) for t in parent.targets]
        return Role("assign", next((n for n in names if n), ""))
    if isinstance(parent, cst.AnnAssign) and child is parent.value:
        return Role("assign", target_name(parent.target))
    if isinstance(parent, cst.Param) and child is parent.default:
        return Role("param-default", parent.name.value)
    if isinstance(parent, cst.DictElement):
        if child is parent.value:
            key = string_value(parent.key)
            return Role("dict-value", key or "") if key is not None else Role("table")
        return Role("table")
    if isinstance(parent, (cst.Comparison, cst.ComparisonTarget)):
        return Role("compare")
    if isinstance(parent, (cst.Element, cst.List, cst.Tuple, cst.Set)):
        return Role("table")
    if isinstance(parent, cst.Return):
        return Role("return")
    if isinstance(parent, (cst.Index, cst.SubscriptElement)):
        return Role("index")
    return Role("other")


def enclosing_assign_name(ancestors: list[cst.CSTNode]) -> str:
    """The target of the nearest enclosing assignment, for `x: str = field(default=...)`."""
    for parent in reversed(ancestors):
        if isinstance(parent, cst.AnnAssign):
            return target_name(parent.target)
        if isinstance(parent, cst.Assign):
            return next((target_name(t.target) for t in parent.targets if target_name(t.target)), "")
        if isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.SimpleStatementLine)):
            if isinstance(parent, cst.SimpleStatementLine):
                continue
            return ""
    return ""


def guarded_by(ancestors: list[cst.CSTNode], is_guard) -> bool:
    """True when an enclosing `if`/conditional expression tests something `is_guard(call)` accepts."""
    for parent in ancestors:
        test = parent.test if isinstance(parent, (cst.If, cst.IfExp, cst.While)) else None
        if test is not None and any(is_guard(c) for c in nodes_in(test, cst.Call)):
            return True
    return False


def nodes_in(expr: cst.CSTNode, kind: type):
    """Every node of type `kind` inside `expr` (itself included), in no particular order."""
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, kind):
            yield node
        stack.extend(node.children)


def test_mentions(ancestors: list[cst.CSTNode], words: tuple[str, ...]) -> bool:
    """True when an enclosing `if`/conditional expression's test names one of `words` (in a name, attribute or
    string): `elif args.bf16: dtype = torch.bfloat16` follows a bf16 switch set elsewhere, which is where the
    hazard is reported, not here."""
    for parent in ancestors:
        test = parent.test if isinstance(parent, (cst.If, cst.IfExp)) else None
        if test is not None and _names_in(test, words):
            return True
    return False


# The words a precision option's value is compared with (`args.mixed_precision == "fp16"`).
PRECISION_VALUES = frozenset({"fp16", "float16", "half", "bf16", "bfloat16", "fp32", "float32"})


def follows_precision_value(ancestors: list[cst.CSTNode]) -> bool:
    """True when an enclosing `if`/conditional expression compares a value with a precision's name: `torch.float16 if
    args.mixed_precision == "fp16" else torch.bfloat16` takes whichever precision the option holds, which is judged
    where the option is set (its default, the command that passes it), not here."""
    for parent in ancestors:
        test = parent.test if isinstance(parent, (cst.If, cst.IfExp)) else None
        if test is None:
            continue
        for comparison in nodes_in(test, cst.Comparison):
            operands = [comparison.left, *(t.comparator for t in comparison.comparisons)]
            for operand in operands:
                for literal in nodes_in(operand, cst.SimpleString):
                    if (string_value(literal) or "").lower() in PRECISION_VALUES:
                        return True
    return False


def _names_in(expr: cst.CSTNode, words: tuple[str, ...]) -> bool:
    stack = [expr]
    while stack:
        node = stack.pop()
        text = None
        if isinstance(node, cst.Name):
            # `x.dtype != torch.bfloat16` tests the dtype itself, not a switch a user set
            text = None if node.value == "bfloat16" else node.value
        elif isinstance(node, cst.SimpleString):
            text = node.value
        if text is not None and any(w in text.lower() for w in words):
            return True
        stack.extend(node.children)
    return False


def is_capability_guard(call: cst.Call) -> bool:
    """A check that really tells pre-Ampere cards apart.

    `torch.cuda.is_bf16_supported()` without `including_emulation=False` is not one: on torch >= 2.3
    it returns True on V100/T4/P40 by emulation [S3][S4].
    """
    name = call_name(call)
    if name in ("get_device_capability", "get_device_properties"):
        return True
    if name == "is_bf16_supported":
        return any(
            a.keyword is not None and a.keyword.value == "including_emulation" and isinstance(a.value, cst.Name)
            and a.value.value == "False"
            for a in call.args
        )
    return False


def in_try_importerror(ancestors: list[cst.CSTNode]) -> bool:
    """True when the node is in the body of a `try` whose handlers catch ImportError (or broader)."""
    for i, parent in enumerate(ancestors[:-1]):
        if isinstance(parent, cst.Try) and ancestors[i + 1] is parent.body:
            for handler in parent.handlers:
                if handler.type is None or _names_import_error(handler.type):
                    return True
    return False


def _names_import_error(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.Name):
        return expr.value in ("ImportError", "ModuleNotFoundError", "Exception", "BaseException")
    if isinstance(expr, cst.Attribute):
        return expr.attr.value in ("ImportError", "ModuleNotFoundError")
    if isinstance(expr, cst.Tuple):
        return any(_names_import_error(e.value) for e in expr.elements)
    return False


def inside_function(ancestors: list[cst.CSTNode]) -> bool:
    return any(isinstance(a, (cst.FunctionDef, cst.Lambda)) for a in ancestors)


def under_type_checking(ancestors: list[cst.CSTNode]) -> bool:
    for a in ancestors:
        if isinstance(a, cst.If):
            t = a.test
            if (isinstance(t, cst.Name) and t.value == "TYPE_CHECKING") or (
                isinstance(t, cst.Attribute) and t.attr.value == "TYPE_CHECKING"
            ):
                return True
    return False


def enclosing_class_name(ancestors: list[cst.CSTNode]) -> str:
    """The innermost class the node is defined in ("" at module level): `RolloutConfig` for its `dtype` field."""
    for parent in reversed(ancestors):
        if isinstance(parent, cst.ClassDef):
            return parent.name.value
    return ""


def is_bf16_probe(call: cst.Call) -> bool:
    """`is_bf16_supported(...)` in any form. Without `including_emulation=False` it is not a capability guard, but
    RLC110 reports and fixes the call itself; the bf16 choice it gates is then right, so it is not reported twice."""
    return call_name(call) == "is_bf16_supported"
