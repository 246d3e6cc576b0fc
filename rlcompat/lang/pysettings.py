"""Settings written in Python, so rules over settings (`ConfigRule`) run over Python as over YAML and scripts.

Read with CPython's `ast` (no LibCST parse is needed for them; the tree the narrowing step already built is reused),
only inside statements whose lines hold a `python_triggers` word of a runnable config rule (a config rule opts into
Python by naming them). A setting under an `if` whose test reads the same name (`elif bf16: args["bf16"] = True`)
repeats a choice made elsewhere and is left out.

| construct | origin | key |
|---|---|---|
| `parser.add_argument("--ds.param_dtype", default="bf16")` | `argparse-default` (`flag=True`) | the flag's dest (`ds.param_dtype`; `dest=` wins), value span on the default literal |
| `bf16: bool = True`, `x = "..."`, `x: str = field(default="...")` in a class body | `python-field` | the field name; `call` is the class |
| `{"bf16": {"enabled": True}}` | `python-dict` | dotted string keys (`bf16.enabled`) |
| `os.environ["X"] = "v"`, `os.environ.setdefault("X", "v")` | `env` | `X` |
| `args.bf16 = True`, `cfg["bf16"] = True` | `python-assign` | the attribute or string subscript; `call` is the object's name |
| `GRPOConfig(use_vllm=True, bf16=True)` | `python-keyword` | the keyword; `call` is the called name as written |

Values: a string constant's text, `True`/`False`/`None`, a number as written; anything computed is None (no value
span). A string's value span is inside its quotes, only for a one-line literal without escapes or prefixes
other than `r`/`u`, so a fix never has to re-escape.

Python rules (LibCST visitors, RLC101, RLC102, RLC201, ...) keep reporting what they report; a config rule's finding
whose fix edits the same characters as a Python rule's fix (or, with no fix, on a line a Python rule reports) is
dropped (`drop_overlaps`): one hazard, one finding, the Python rule's wording.
"""

from __future__ import annotations

import ast
import bisect
import itertools
import re
import warnings

from rlcompat.lang.settings import Setting, Span, flag_key

_SIMPLE_STRING = re.compile(r"^[rRuU]?(['\"])(?P<body>[^'\"\\\r\n]*)\1$")
_last_tree: tuple[str, ast.Module] | None = None  # the narrowing step's tree of the text it read


def remember_tree(text: str, tree: ast.Module) -> None:
    global _last_tree
    _last_tree = (text, tree)


def tree_of(text: str) -> ast.Module | None:
    if _last_tree is not None and _last_tree[0] is text:
        return _last_tree[1]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


class _Positions:
    def __init__(self, text: str) -> None:
        self.text = text
        if "\r" in text:
            self.starts = [0, *(m.end() for m in re.finditer(r"\r\n|\r|\n", text))]
        else:  # most files: the same offsets from the lengths of the lines, without a match object per line
            self.starts = list(itertools.accumulate(map((1).__add__, map(len, text.split("\n")[:-1])), initial=0))

    def offset(self, line: int, byte_col: int) -> int:
        start = self.starts[line - 1]
        end = self.starts[line] if line < len(self.starts) else len(self.text)
        segment = self.text[start:end]
        if segment.isascii():
            return start + byte_col
        return start + len(segment.encode("utf-8", "surrogatepass")[:byte_col].decode("utf-8", "ignore"))

    def span(self, node: ast.AST) -> Span:
        return Span(self.offset(node.lineno, node.col_offset), self.offset(node.end_lineno, node.end_col_offset))


def settings_of(text: str, triggers: tuple[str, ...]) -> list[Setting]:
    """Settings of the statements of `text` whose lines hold one of `triggers`."""
    present = [t for t in triggers if t in text]
    if not present:
        return []
    tree = tree_of(text)
    if tree is None:
        return []
    pos = _Positions(text)
    hits = re.compile("|".join(map(re.escape, present)))
    marked = bytearray(len(pos.starts) + 1)
    line = 0
    for m in hits.finditer(text):
        while line + 1 < len(pos.starts) and pos.starts[line + 1] <= m.start():
            line += 1
        marked[line] = 1
    reader = _Reader(pos)

    def visit(body, guards: frozenset[str]) -> None:
        for stmt in body:
            first, last = stmt.lineno - 1, (stmt.end_lineno or stmt.lineno) - 1
            if not any(marked[first:last + 1]):
                continue
            reader.guards = guards
            if isinstance(stmt, ast.ClassDef):
                reader.fields(stmt)
                visit(stmt.body, guards)
                continue
            inner = [getattr(stmt, name) for name in ("body", "orelse", "finalbody") if isinstance(getattr(stmt, name, None), list)]
            handlers = getattr(stmt, "handlers", None) or []
            if inner or handlers:
                for part in (getattr(stmt, "test", None), getattr(stmt, "iter", None), *getattr(stmt, "items", ())):
                    if part is not None:
                        reader.expression(part)
                test = getattr(stmt, "test", None)
                # `if bf16: cfg["bf16"] = True` only repeats a choice made elsewhere: not a setting to report.
                inner_guards = guards | _names(test) if test is not None else guards
                for b in inner:
                    visit(b, inner_guards if b is getattr(stmt, "body", None) or isinstance(stmt, ast.If) else guards)
                for h in handlers:
                    visit(h.body, guards)
                continue
            reader.statement(stmt)

    try:
        visit(tree.body, frozenset())
    except RecursionError:
        pass  # nesting deeper than the interpreter's stack (a 1,000-arm elif chain): the settings read so far
    return reader.out


def _names(expr: ast.AST) -> frozenset[str]:
    return frozenset(n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(expr)
                     if isinstance(n, (ast.Name, ast.Attribute)))


class _Reader:
    def __init__(self, pos: _Positions) -> None:
        self.pos = pos
        self.out: list[Setting] = []

    def literal(self, node: ast.AST | None) -> tuple[str | None, Span | None]:
        if not isinstance(node, ast.Constant):
            return None, None
        v = node.value
        span = self.pos.span(node)
        if isinstance(v, str):
            m = _SIMPLE_STRING.match(self.pos.text[span.start:span.end])
            if m and m.group("body") == v:
                inner = span.start + m.start("body")
                return v, Span(inner, inner + len(v))
            return v, None
        if isinstance(v, (bool, int, float)) or v is None:
            return self.pos.text[span.start:span.end], span
        return None, None

    guards: frozenset[str] = frozenset()  # names the enclosing `if` tests read

    def add(self, key: str, node_for_key: ast.AST, value_node, origin: str, **extra) -> None:
        if key.rsplit(".", 1)[-1] in self.guards or key.split(".", 1)[0] in self.guards:
            return
        value, span = self.literal(value_node)
        self.out.append(Setting(key, value, self.pos.span(node_for_key), span, origin=origin, **extra))

    def fields(self, cls: ast.ClassDef) -> None:
        for stmt in cls.body:
            target, value = None, None
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
                target, value = stmt.target, stmt.value
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                target, value = stmt.targets[0], stmt.value
            if target is None:
                continue
            if isinstance(value, ast.Call) and _name(value.func).rsplit(".", 1)[-1] in ("field", "Field"):
                value = next((k.value for k in value.keywords if k.arg == "default"),
                             value.args[0] if value.args and _name(value.func).endswith("Field") else None)
            if value is not None:
                self.add(target.id, target, value, "python-field", call=cls.name)

    def statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            for t in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                if isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant) and isinstance(t.slice.value, str):
                    origin = "env" if _name(t.value) == "os.environ" else "python-assign"
                    self.add(t.slice.value, t.slice, stmt.value, origin, call=_name(t.value) if origin != "env" else "")
                elif isinstance(t, ast.Attribute):
                    start = self.pos.offset(t.end_lineno, t.end_col_offset) - len(t.attr)
                    if t.attr not in self.guards:
                        value, span = self.literal(stmt.value)
                        self.out.append(Setting(t.attr, value, Span(start, start + len(t.attr)), span,
                                                origin="python-assign", call=_name(t.value)))
        self.expression(stmt)

    def expression(self, root: ast.AST) -> None:
        nested_dicts: set[int] = set()
        for node in ast.walk(root):
            if isinstance(node, ast.Call):
                self.call(node)
            elif isinstance(node, ast.Dict) and id(node) not in nested_dicts:
                self.dict(node, "", nested_dicts)

    def call(self, node: ast.Call) -> None:
        callee = _name(node.func)
        short = callee.rsplit(".", 1)[-1]
        if short == "add_argument":
            flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            long = next((f for f in flags if f.startswith("--")), None) or next((f for f in flags if f.startswith("-")), None)
            default = next((k for k in node.keywords if k.arg == "default"), None)
            dest = next((k.value.value for k in node.keywords if k.arg == "dest" and isinstance(k.value, ast.Constant)), None)
            if default is not None and (long or dest):
                key = dest if isinstance(dest, str) else flag_key(long)
                self.add(key, default.value, default.value, "argparse-default", flag=True, written=long or "",
                         call=callee)
            return
        if callee == "os.environ.setdefault" and len(node.args) == 2:
            key = node.args[0]
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                self.add(key.value, key, node.args[1], "env")
            return
        for kw in node.keywords:
            if kw.arg is not None and kw.arg not in self.guards:
                value, span = self.literal(kw.value)
                start = self.pos.span(kw).start
                self.out.append(Setting(kw.arg, value, Span(start, start + len(kw.arg)), span, origin="python-keyword",
                                        call=callee))

    def dict(self, node: ast.Dict, prefix: str, nested: set[int]) -> None:
        for k, v in zip(node.keys, node.values):
            if not (isinstance(k, ast.Constant) and isinstance(k.value, str)):
                continue
            key = f"{prefix}.{k.value}" if prefix else k.value
            if isinstance(v, ast.Dict):
                nested.add(id(v))
                self.dict(v, key, nested)
            else:
                self.add(key, k, v, "python-dict")


def _name(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def drop_overlaps(config_findings: list, python_findings: list) -> list:
    """Config-rule findings about a hazard no Python rule reported already (one hazard, one finding): dropped when
    its fix edits a range a Python rule's fix edits, or, without a fix, when a Python rule reports on its line."""
    if not python_findings:
        return config_findings
    edited = _Intervals((e.start, e.end) for f in python_findings if f.fix for e in f.fix.edits)
    edited_starts = {start for start, _ in edited.spans}
    lines = {f.location.line for f in python_findings}
    reported = _Intervals(((p.location.line, p.location.column), (p.location.end_line, p.location.end_column))
                          for p in python_findings)

    def covered(f) -> bool:
        if f.fix is None:
            return f.location.line in lines
        # Inside what a Python rule reported (`bf16=True`, which RLC103 renames to `fp16=True`): the same setting,
        # whose fixes would otherwise combine (the key renamed by one, the value flipped by the other).
        at = (f.location.line, f.location.column)
        if reported.any_holding(at):
            return True
        return any(edited.any_overlapping(e.start, e.end) or e.start in edited_starts for e in f.fix.edits)

    return [f for f in config_findings if not covered(f)]


class _Intervals:
    """Closed intervals, asked which hold a point or overlap a range in log time: a file with as many config
    findings as Python findings made the one-by-one comparison quadratic."""

    def __init__(self, spans) -> None:
        self.spans = sorted(spans)
        self._starts = [start for start, _ in self.spans]
        self._reach = list(itertools.accumulate((end for _, end in self.spans), max))  # furthest end so far

    def any_holding(self, point) -> bool:
        """Some start <= point <= end."""
        i = bisect.bisect_right(self._starts, point)
        return i > 0 and self._reach[i - 1] >= point

    def any_overlapping(self, start, end) -> bool:
        """Some interval with its start < end and its end > start."""
        i = bisect.bisect_left(self._starts, end)
        return i > 0 and self._reach[i - 1] > start
