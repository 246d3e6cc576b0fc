"""Fields of a nested config class that a run reads only where it sets the Optional field holding it: skyrl's
`MixedPrecisionConfig.param_dtype = "bf16"` is read only by a run that sets `FSDPConfig.mixed_precision`, which
defaults to None (a framework key's `parent`, rlcompat/knowledge/data/frameworks/). A rule judging such a class-body
default leaves it alone; what None means is reported at the Optional field (analysis/knowledge_defaults.py `unset_parents`).

Only for the release the file's tree runs exactly (what None means, and that nothing else builds the class, is that
release's code), in a file of that framework that declares the parent field with a default that does not build the
class with this field's default: None, or a default factory that passes the field
(`field(default_factory=lambda: MixedPrecisionConfig(param_dtype="fp32"))`, what the fix writes).
"""

from __future__ import annotations

import ast
from functools import lru_cache

from rlcompat.knowledge import frameworks as fk


def held_only_when_set(ctx, class_name: str, field_name: str) -> bool:
    """Whether `class_name.field_name` (a class-body default of the file `ctx` checks) is read only by a run that
    sets the Optional field holding the class."""
    if not class_name or not field_name or ctx.scanned is None:
        return False
    for key in fk.held_in(class_name):
        fw = key.framework
        if not any(word in ctx.source_text for word in fw.files):
            continue
        identity = ctx.scanned.framework(fw.name)
        if identity is None or not identity.exact or identity.version != fw.version:
            continue
        if _parent_leaves_default(ctx.source_text, key.parent.owner, key.parent.attr, class_name, field_name):
            return True
    return False


def _parent_leaves_default(text: str, owner: str, attr: str, held: str, field_name: str) -> bool:
    default = _field_defaults(text).get((owner, attr), _MISSING)
    if default is _MISSING:
        return False  # the parent is declared elsewhere: its default is not seen here
    if isinstance(default, ast.Constant) and default.value is None:
        return True
    factory = _default_factory(default)
    return (isinstance(factory, ast.Lambda) and isinstance(factory.body, ast.Call)
            and _called(factory.body.func) == held and any(k.arg == field_name for k in factory.body.keywords))


_MISSING = object()


@lru_cache(maxsize=4)
def _field_defaults(text: str) -> dict[tuple[str, str], ast.AST]:
    """(class, field) -> the default expression of every annotated class-body field of a module's top-level classes."""
    try:
        module = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    out = {}
    for node in module.body:
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
                    out[(node.name, stmt.target.id)] = stmt.value
    return out


def _default_factory(value: ast.AST) -> ast.AST | None:
    """`f` of `field(default_factory=f)`."""
    if isinstance(value, ast.Call) and _called(value.func) in ("field", "Field"):
        return next((k.value for k in value.keywords if k.arg == "default_factory"), None)
    return None


def _called(func: ast.AST) -> str:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
