"""The Python side of "a switch set to True -> turn it off": the literal `True` bound to a switch, outside a check
that already tells the target apart, and the safe fix that writes `False` in its place.

Where the switch sits is the rule's: a keyword (`use_liger=True`), an assignment, a field default, a parameter default
(RLC305 reads keywords and assignments only, RLC306 every binding `pyhelpers.role_of` names). The config side is
`confighelpers.turn_off`.
"""

from __future__ import annotations

import libcst as cst

from rlcompat.analysis.pyhelpers import guarded_by, is_capability_guard
from rlcompat.lang.python import PendingFix
from rlcompat.findings import FixSafety


def is_true(node: cst.BaseExpression) -> bool:
    """The literal `True` (not `1`, not a name holding True: what it holds is not known statically)."""
    return isinstance(node, cst.Name) and node.value == "True"


def switched_on(value: cst.BaseExpression, ancestors: list[cst.CSTNode], guard=is_capability_guard) -> bool:
    """`value` is the literal True and no enclosing `if` tests what `guard` accepts (a capability check: there the
    switch is already decided per GPU)."""
    return is_true(value) and not guarded_by(ancestors, guard)


def turn_off(value: cst.BaseExpression, ctx, message: str, description: str) -> None:
    """Report the `True` at `value` with the safe fix that writes `False` there (the switch's off position runs the same
    computation without the kernel or compiler the target lacks: each rule's fix_safety says why)."""
    ctx.report(value, message, PendingFix([(value, "False")], FixSafety.SAFE, description))
