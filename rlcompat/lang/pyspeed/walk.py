"""The walk that dispatches a parsed module to every rule's `visit_<NodeType>` handlers.

LibCST's own `visit` rebuilds every node it passes through, even for read-only visitors; reading the dataclass
fields directly does the same pre-order walk several times faster. It is the same walk with
`RLCOMPAT_PLAIN_LIBCST=1`: what the plain mode checks is the parse, the narrowing and the positions.
"""

from __future__ import annotations

import dataclasses

from rlcompat.lang.pyspeed.lazy import lazy_import

cst = lazy_import("libcst")


# Fields that hold only whitespace, comments or punctuation: no rule looks inside them, so the walk skips them.
_SKIPPED_FIELD_PREFIXES = ("whitespace", "lpar", "rpar", "leading_lines", "lines_after_decorators", "header", "footer")
_SKIPPED_TYPE_NAMES = (
    "BaseParenthesizableWhitespace", "EmptyLine", "TrailingWhitespace", "Newline", "Comment",
    "LeftParen", "RightParen", "Comma", "Semicolon", "Colon", "Dot", "AssignEqual",
)
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(cls: type) -> tuple[str, ...]:
    names = _CHILD_FIELDS.get(cls)
    if names is None:
        names = tuple(f.name for f in dataclasses.fields(cls) if not f.name.startswith(_SKIPPED_FIELD_PREFIXES))
        _CHILD_FIELDS[cls] = names
    return names


_WALK, _SKIP = 1, 0
_TYPE_ROLE: dict[type, int] = {}


def _role(cls: type) -> int:
    """Whether values of this type are walked; cached because isinstance against LibCST's ABCs is slow."""
    role = _TYPE_ROLE.get(cls)
    if role is None:
        skipped = tuple(getattr(cst, n) for n in _SKIPPED_TYPE_NAMES)
        role = _WALK if issubclass(cls, cst.CSTNode) and not issubclass(cls, skipped) else _SKIP
        _TYPE_ROLE[cls] = role
    return role


def _children(node: cst.CSTNode) -> list:
    """The node's walked children, in field order."""
    out = []
    roles = _TYPE_ROLE
    for name in _child_fields(type(node)):
        value = getattr(node, name)
        cls = type(value)
        if cls is tuple or cls is list:
            for item in value:
                role = roles.get(type(item))
                if role is None:
                    role = _role(type(item))
                if role:
                    out.append(item)
        else:
            role = roles.get(cls)
            if role is None:
                role = _role(cls)
            if role:
                out.append(value)
    return out


_LEAVE = object()  # on the walk's stack after a node's children: the walk leaves that node there


def walk(root: cst.CSTNode, handlers: dict[type, list], ctx) -> None:
    """Pre-order walk keeping the ancestor chain (in `ctx`, which every rule's context shares) and recording
    imports in `ctx.imports` as it meets them. The walk keeps its own stack instead of recursing: valid Python
    nests deeper than Python's recursion limit (a 1,000-term `a + b + ...` or `elif` chain is 1,000 levels of
    LibCST nodes), and a RecursionError here would crash the whole run. One flat stack of nodes (children pushed
    in reverse), not a stack of generators: this loop runs for every node of every parsed file.
    """
    ancestors = ctx.ancestors
    imports = (cst.Import, cst.ImportFrom)
    function = cst.FunctionDef
    todo = [root]
    pop, push, extend, find = todo.pop, todo.append, todo.extend, handlers.get
    while todo:
        node = pop()
        if node is _LEAVE:
            ancestors.pop()
            continue
        cls = type(node)
        if cls in imports:
            ctx.imports.record(node, module_level=not any(type(a) is function for a in ancestors))
        for rule, handler, rule_ctx in find(cls, ()):
            rule_ctx._rule = rule
            handler(node, rule_ctx)
        ancestors.append(node)
        push(_LEAVE)
        children = _children(node)
        if children:
            children.reverse()
            extend(children)


def statements_to(root: cst.CSTNode, targets: list[cst.CSTNode]) -> dict[int, tuple]:
    """For each target (by id) found below `root`, the statements holding it, outermost first. One walk for all
    of them (a Triton kernel's configs are many nodes of one module-level list); iterative, as `walk` is."""
    wanted = {id(t) for t in targets}
    found: dict[int, tuple] = {}
    stack: list[tuple[cst.CSTNode, tuple]] = [(root, ())]
    while stack and len(found) < len(wanted):
        node, chain = stack.pop()
        if id(node) in wanted:
            found[id(node)] = chain
        if isinstance(node, cst.BaseStatement):
            chain = (*chain, node)
        stack.extend((child, chain) for child in _children(node))
    return found
