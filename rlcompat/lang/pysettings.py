"""Settings written in Python, so rules over settings (`ConfigRule`) run over Python as over YAML and scripts.

Read with CPython's `ast` (no LibCST parse is needed for them; the tree the narrowing step already built is reused,
and a big text's settings are read from the narrowing's chunks as it parses them: `SettingsReading`), only inside
statements whose lines hold a `python_triggers` word of a runnable config rule (a config rule opts into Python by
adding python to its languages, its triggers then being those words unless it names narrower ones). A setting
under an `if` whose test reads the same name (`elif bf16: args["bf16"] = True`) repeats a choice made elsewhere and is left out; any other setting under an `if` carries the names its tests read
(`guards`), for rules that judge a value by the switch it follows (`elif self.bf16: self.mixed_precision = "bf16"`).

| construct | origin | key |
|---|---|---|
| `parser.add_argument("--ds.param_dtype", default="bf16")` | `argparse-default` (`flag=True`) | the flag's dest (`ds.param_dtype`; `dest=` wins), value span on the default literal |
| `bf16: bool = True`, `x = "..."`, `x: str = field(default="...")` in a class body | `python-field` | the field name; `call` is the class |
| `mp: Optional[MixedPrecisionConfig] = None` in a class body | `python-field` (a `NestedField`) | the field name; `holds` is the optional class |
| `{"bf16": {"enabled": True}}` | `python-dict` | dotted string keys (`bf16.enabled`) |
| `os.environ["X"] = "v"`, `os.environ.setdefault("X", "v")` | `env` | `X` |
| `args.bf16 = True`, `cfg["bf16"] = True` | `python-assign` | the attribute or string subscript; `call` is the object's name |
| `GRPOConfig(use_vllm=True, bf16=True)` | `python-keyword` | the keyword; `call` is the called name as written |
| `cfg.get("enforce_eager", False)` (a literal default) | `python-get` | the key read; the value span is the default literal |
| `self.bf16 = not self.fp16 if self.bf16 is None else self.bf16`, `if self.x is None: self.x = v` | `python-default` | the attribute: what the code makes of an unset key |
| `if args.packing and not args.flash_attn: args.flash_attn = True`, `if args.packing and "flash" not in args.attn: args.attn = "flash_attention_2"` | `python-forced` | the attribute: set by the code when another setting asks for it (the tests of enclosing `if`s count) |

An attribute that names a flag the same file declares (`parser.add_argument("--flash_attn")`, then
`args.flash_attn = True`; `--ds.attn_implementation`, then `args.ds.attn_implementation = ...`) is that flag's setting
(`flag=True`, the dest as key). A `python-default` value is evaluated from the
class' own literal field defaults; where it reads something else (an inherited field) its value is None and
`unset` holds the expression with `self.` dropped (`not fp16`), for the framework knowledge to resolve. Neither
origin has a value span: the code resolves a default for every caller, and the fix belongs where a config is built.

Values: a string constant's text, `True`/`False`/`None`, a number as written; anything computed is None (no value
span). A string's value span is inside its quotes, only for a one-line literal without escapes or prefixes
other than `r`/`u`, so a fix never has to re-escape. One computed value is followed: a class-body field whose
default is a number computed from names the module or the class body bound once to literals
(`vllm_num_engines: int = total_num_nodes`, lang/pyconstants.py) is a `ComputedSetting` with that number, `via`
naming where it comes from and no value span; where it may be one of several (`32 if not DEBUG else 8`),
`alternatives` holds each and rules judge every one.

Python rules (LibCST visitors, RLC101, RLC102, RLC201, ...) keep reporting what they report; a config rule's finding
whose fix edits the same characters as a Python rule's fix (or, with no fix, on a line a Python rule reports) is
dropped by the runner's layer (rlcompat/pipeline/overlaps.py): one hazard, one finding, the Python rule's wording.
"""

from __future__ import annotations

import ast
import bisect
import re
from dataclasses import dataclass, replace
from typing import Callable

from rlcompat.lang.pyconstants import Bindings
from rlcompat.lang.pyspeed import chunks
from rlcompat.lang.settings import Setting, Span, flag_key
from rlcompat.lang.textpos import line_starts


@dataclass
class ResolvedSetting(Setting):
    unset: str = ""  # python-default: the expression an unset key resolves to, `self.` dropped (`not fp16`)


@dataclass
class NestedField(Setting):
    """A class-body field that defaults to None and is annotated as an optional class (`mixed_precision:
    Optional[MixedPrecisionConfig] = None`): `holds` names that class. What None means is the framework's code (the
    knowledge's `parent`); the held class' own defaults are read only where a run sets this field."""

    holds: str = ""


@dataclass
class ComputedSetting(Setting):
    """A field whose default is a number computed from literals (lang/pyconstants.py): `value` is the first of the
    values it may take, `alternatives` all of them (a rule judges the setting by every one); no value span (the
    value is written elsewhere)."""

    alternatives: tuple[str, ...] = ()


_SIMPLE_STRING = re.compile(r"^[rRuU]?(['\"])(?P<body>[^'\"\\\r\n]*)\1$")


class _Positions:
    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = line_starts(text)
        self.shift = 0  # the text's line where the chunk being read starts: its tree numbers lines from there

    def offset(self, line: int, byte_col: int) -> int:
        line += self.shift
        start = self.starts[line - 1]
        end = self.starts[line] if line < len(self.starts) else len(self.text)
        segment = self.text[start:end]
        if segment.isascii():
            return start + byte_col
        return start + len(segment.encode("utf-8", "surrogatepass")[:byte_col].decode("utf-8", "ignore"))

    def span(self, node: ast.AST) -> Span:
        return Span(self.offset(node.lineno, node.col_offset), self.offset(node.end_lineno, node.end_col_offset))


def settings_of(text: str, triggers: tuple[str, ...], seen: chunks.Pass | None = None,
                spells: Callable[[str], bool] | None = None) -> list[Setting]:
    """Settings of the statements of `text` whose lines hold one of `triggers`: those the narrowing step's pass read
    (`seen`, with `SettingsReading` as one of its readers), or read here from CPython's tree (the one `seen` kept, or
    a chunk at a time for a big text); `spells`: whether `text` spells a word (lang/pyspeed/spelled.py)."""
    seen = chunks.of_text(seen, text)
    if seen is not None and _key(triggers) in seen.extra:
        return seen.extra[_key(triggers)]
    reading = SettingsReading(text, triggers, spells)
    if not reading.present:
        return []
    reading.seen = seen
    whole = None  # the tree of a text parsed in one piece, for `settings` to read again
    try:
        for chunk in chunks.chunks(text, seen=seen):
            reading.chunk(chunk.tree, chunk.first)
            if chunk.stop is None:
                whole = chunk.tree
    except chunks.NotParsed:
        return []
    return reading.settings(whole)


def _key(triggers: tuple[str, ...]) -> tuple:
    return ("settings", frozenset(triggers))


def keep_in(seen: chunks.Pass, triggers: tuple[str, ...], settings: list[Setting]) -> None:
    """Leave the settings of `seen`'s text read for `triggers` in that pass, where `settings_of` finds them."""
    seen.extra[_key(triggers)] = settings


class SettingsReading:
    """The settings of a text read from its tree a chunk at a time, in order (`chunk`), then completed (`settings`);
    `done` leaves them in the pass that read the chunks, where `settings_of` finds them for the same text and
    triggers."""

    def __init__(self, text: str, triggers: tuple[str, ...], spells: Callable[[str], bool] | None = None) -> None:
        """`spells`: whether `text` spells a word (lang/pyspeed/spelled.py)."""
        self.text, self.triggers = text, triggers
        self.seen: chunks.Pass | None = None  # the pass over the text's chunks, once done: where they are cut
        self.present = list(filter(spells or text.__contains__, triggers))
        self.pos = _Positions(text) if self.present else None
        self.reader = _Reader(self.pos)
        self.reader.scope = Bindings(text)
        self.stopped = False  # nesting deeper than the interpreter's stack: the settings read so far are all
        self.marked = bytearray(len(self.pos.starts) + 1) if self.pos is not None else bytearray()
        for trigger in self.present:  # the lines where a trigger starts (a trigger holds no line end)
            at = text.find(trigger)
            while at >= 0:
                self.marked[bisect.bisect_right(self.pos.starts, at) - 1] = 1
                at = text.find(trigger, at + 1)

    def chunk(self, tree: ast.Module, first: int) -> None:
        """Read the statements of `tree`, the text's top-level statements from its line `first` + 1 on."""
        if self.pos is None or self.stopped:
            return
        self.pos.shift = first
        scope = self.reader.scope
        try:
            for stmt in tree.body:  # a class body reads the module's names bound before it (lang/pyconstants.py)
                self._visit((stmt,), frozenset())
                scope.bind(stmt, stmt.lineno + first)
        except RecursionError:
            self.stopped = True  # a 1,000-arm elif chain

    def done(self, seen: chunks.Pass) -> None:
        self.seen = chunks.of_text(seen, self.text)
        if self.seen is not None:
            keep_in(self.seen, self.triggers, self.settings())

    def settings(self, whole: ast.Module | None = None) -> list[Setting]:
        """The settings read, completed; `whole`: the text's whole tree, if it is at hand."""
        reader = self.reader
        attributes = [st for st in reader.out if st.origin in _ATTRIBUTE_ORIGINS]
        if attributes:
            # `args.flash_attn = True` where this file declares `--flash_attn`: that flag's setting, also where the
            # declaration holds no trigger word (`default="sdpa"`) and so was not read above (the whole module is
            # walked for that only when an attribute of something other than `self` is set).
            dests = reader.dests
            if any(not st.call.startswith("self") for st in attributes):
                dests = dests | _declared_dests(self.text, whole, self.seen)
            if dests:
                reader.out = [_as_flag(st, dests) if st.origin in _ATTRIBUTE_ORIGINS else st for st in reader.out]
        return reader.out

    def _visit(self, body, guards: frozenset[str], tests: tuple = ()) -> None:
        self._visit_in(body, guards, self.reader.conditions, tests)

    def _visit_in(self, body, guards: frozenset[str], conditions: dict, tests: tuple) -> None:
        """`tests`: the tests of the `if`s whose bodies hold `body`, outermost first."""
        reader, marked, shift = self.reader, self.marked, self.pos.shift
        for stmt in body:
            first, last = stmt.lineno - 1 + shift, (stmt.end_lineno or stmt.lineno) - 1 + shift
            if not any(marked[first:last + 1]):
                continue
            reader.guards = guards
            reader.conditions = conditions
            if isinstance(stmt, ast.ClassDef):
                outer = reader.class_defaults
                reader.class_defaults = reader.fields(stmt)
                self._visit(stmt.body, guards)
                reader.class_defaults = outer
                continue
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                reader.functions += 1  # a class defined in a function reads its locals, which are not followed
                try:
                    self._visit_in(stmt.body, guards, conditions, tests)
                finally:
                    reader.functions -= 1
                continue
            inner = [getattr(stmt, name) for name in ("body", "orelse", "finalbody") if isinstance(getattr(stmt, name, None), list)]
            handlers = getattr(stmt, "handlers", None) or []
            if inner or handlers:
                for part in (getattr(stmt, "test", None), getattr(stmt, "iter", None), *getattr(stmt, "items", ())):
                    if part is not None:
                        reader.expression(part)
                test = getattr(stmt, "test", None)
                # `if bf16: cfg["bf16"] = True` only repeats a choice made elsewhere: not a setting to report. A name
                # the test reads only as unset (`if args.x is None`, `if cond and not args.x`, `if "flash" not in
                # args.x`) is set by the body: a default or a forced value, reported as such. The tests of enclosing
                # `if`s are part of the condition (`if packing:` then `if "flash" not in args.x: args.x = ...`).
                is_if = isinstance(stmt, ast.If)
                unset = _unset_leaves(test) if is_if else frozenset()
                inner_guards = guards | (_names(test) - unset) if test is not None else guards
                for b in inner:
                    in_body = b is getattr(stmt, "body", None)
                    if in_body and unset:
                        whole = _all_of(tests, test)
                        others = (_leaves(test) - unset).union(*(_leaves(t) for t in tests))
                        reader.conditions = {**conditions, **{n: (whole, others) for n in unset}}
                    else:
                        reader.conditions = conditions
                    self._visit_in(b, inner_guards if in_body or is_if else guards, reader.conditions,
                                   tests + (test,) if in_body and is_if and not _is_main_check(test) else tests)
                    reader.conditions = conditions
                for h in handlers:
                    self._visit(h.body, guards, tests)
                continue
            before = len(reader.out)
            reader.statement(stmt)
            if guards:  # a rule may judge a value by the switch it follows (RLC107: `elif self.bf16:`)
                reader.out[before:] = [replace(st, guards=guards) for st in reader.out[before:]]


def _declared_dests(text: str, whole: ast.Module | None, seen: chunks.Pass | None) -> set[str]:
    """The dest of every `add_argument("--flag", ...)` call of a module (`whole`, or the chunks that spell it)."""
    dests: set[str] = set()
    if whole is not None:
        _add_dests(whole, dests)
        return dests
    try:
        for chunk in chunks.chunks(text, spelling="add_argument", seen=seen):
            _add_dests(chunk.tree, dests)
    except chunks.NotParsed:
        pass  # a text whose settings are read parses: its chunks were read before
    return dests


def _add_dests(tree: ast.AST, dests: set[str]) -> None:
    for node in chunks.nodes(tree):
        if isinstance(node, ast.Call) and _name(node.func).rsplit(".", 1)[-1] == "add_argument":
            dest = next((k.value.value for k in node.keywords if k.arg == "dest" and isinstance(k.value, ast.Constant)
                         and isinstance(k.value.value, str)), None)
            flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            long = next((f for f in flags if f.startswith("--")), None) or next((f for f in flags if f.startswith("-")), None)
            if dest or long:
                dests.add(dest or flag_key(long))


def _as_flag(setting: Setting, dests: set[str]) -> Setting:
    """An attribute assignment to a flag this file declares: `args.flash_attn` for `--flash_attn`, and
    `args.ds.attn_implementation` for `--ds.attn_implementation` (a dotted dest read as nested namespaces)."""
    owner = setting.call.split(".")
    if not all(part.isidentifier() for part in owner):
        return setting
    for i in range(len(owner), 0, -1):  # the longest dotted dest first; the first part is the namespace variable
        key = ".".join(owner[i:] + [setting.key])
        if key in dests:
            return replace(setting, key=key, flag=True)
    return setting


def _names(expr: ast.AST) -> frozenset[str]:
    return frozenset(n.id if isinstance(n, ast.Name) else n.attr for n in chunks.nodes(expr)
                     if isinstance(n, (ast.Name, ast.Attribute)))


def _leaves(expr: ast.AST | None) -> frozenset[str]:
    """The last part of every name a test reads (`args.packing_samples` -> `packing_samples`)."""
    if expr is None:
        return frozenset()
    inner = {id(n.value) for n in chunks.nodes(expr) if isinstance(n, ast.Attribute)}
    return frozenset(n.id if isinstance(n, ast.Name) else n.attr for n in chunks.nodes(expr)
                     if isinstance(n, (ast.Name, ast.Attribute)) and id(n) not in inner)


def _unset_operand(expr: ast.AST) -> ast.AST | None:
    """`x` of `not x`, `x is None`, `x == None`, `x is False`, `x == False`."""
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
        return expr.operand
    if (isinstance(expr, ast.Compare) and len(expr.ops) == 1 and isinstance(expr.ops[0], (ast.Is, ast.Eq))
            and isinstance(expr.comparators[0], ast.Constant) and expr.comparators[0].value in (None, False)):
        return expr.left
    return None


def _lacking_operand(expr: ast.AST) -> ast.AST | None:
    """`x` of `"text" not in x`: the test reads x only to see that it lacks what the body then writes."""
    if (isinstance(expr, ast.Compare) and len(expr.ops) == 1 and isinstance(expr.ops[0], ast.NotIn)
            and isinstance(expr.left, ast.Constant) and isinstance(expr.left.value, str)):
        return expr.comparators[0]
    return None


def _is_main_check(test: ast.AST) -> bool:
    """`__name__ == "__main__"`: true whenever the file runs as a script, so no condition on a setting."""
    return _names(test) == {"__name__"}


def _all_of(tests: tuple, test: ast.AST) -> ast.AST:
    """`a and b and test` for the enclosing tests `a`, `b` (at `test`'s line, for messages)."""
    if not tests:
        return test
    return ast.copy_location(ast.BoolOp(op=ast.And(), values=[*tests, test]), test)


def _unset_leaves(test: ast.AST | None) -> frozenset[str]:
    """Names a test reads only as unset, in its `and` terms (`a and not b.x` -> {x}; `"flash" not in b.x` -> {x})."""
    if test is None:
        return frozenset()
    terms = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    negated, plain = set(), set()
    for term in terms:
        operand = _unset_operand(term) or _lacking_operand(term)
        if operand is not None and isinstance(operand, (ast.Name, ast.Attribute)):
            negated |= _leaves(operand)
        else:
            plain |= _leaves(term)
    return frozenset(negated - plain)


_UNKNOWN = object()
_ATTRIBUTE_ORIGINS = ("python-assign", "python-default", "python-forced")


def _evaluate(expr: ast.AST, fields: dict) -> object:
    """A value built from literals and `self.<field>` defaults (`not self.fp16`), or _UNKNOWN."""
    if isinstance(expr, ast.Constant):
        return expr.value
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self":
        return fields.get(expr.attr, _UNKNOWN)
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
        v = _evaluate(expr.operand, fields)
        return _UNKNOWN if v is _UNKNOWN else not v
    if isinstance(expr, ast.BoolOp):
        values = [_evaluate(v, fields) for v in expr.values]
        if any(v is _UNKNOWN for v in values):
            return _UNKNOWN
        out = values[0]
        for v in values[1:]:
            out = (out and v) if isinstance(expr.op, ast.And) else (out or v)
        return out
    return _UNKNOWN


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _optional_class(annotation: ast.AST) -> str:
    """`X` of `Optional[X]`, `Union[X, None]`, `X | None` (X a plain or dotted name), else ""."""
    inner = None
    if isinstance(annotation, ast.Subscript):
        outer = _name(annotation.value).rsplit(".", 1)[-1]
        parts = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
        if outer == "Optional" and len(parts) == 1:
            inner = parts[0]
        elif outer == "Union" and len(parts) == 2 and any(_is_none(p) for p in parts):
            inner = next(p for p in parts if not _is_none(p))
    elif isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        sides = [annotation.left, annotation.right]
        if any(_is_none(p) for p in sides):
            inner = next(p for p in sides if not _is_none(p))
    return _name(inner).rsplit(".", 1)[-1] if inner is not None else ""


def _literal_default(text: str | None) -> object:
    if text is None:
        return _UNKNOWN
    return {"True": True, "False": False, "None": None}.get(text, text)


def _spelled(value: object) -> str:
    return repr(value) if isinstance(value, (bool, type(None), int, float)) else str(value)


def _without_self(expr: ast.AST) -> str:
    class Strip(ast.NodeTransformer):
        def visit_Attribute(self, node):
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                return ast.copy_location(ast.Name(node.attr, ast.Load()), node)
            return self.generic_visit(node)

    return ast.unparse(Strip().visit(ast.parse(ast.unparse(expr), mode="eval")))


def _resolution(value: ast.AST, attr: str) -> tuple[ast.AST, ast.AST] | None:
    """(test, value when unset) of `A if self.x is None else self.x` / `self.x if self.x is not None else A`."""
    if not isinstance(value, ast.IfExp):
        return None

    def same(node) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == attr

    operand = _unset_operand(value.test)
    if operand is not None and same(operand) and same(value.orelse):
        return value.test, value.body
    t = value.test
    if (isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], (ast.IsNot, ast.NotEq))
            and same(t.left) and isinstance(t.comparators[0], ast.Constant) and t.comparators[0].value is None
            and same(value.body)):
        return t, value.orelse
    return None


class _Reader:
    def __init__(self, pos: _Positions) -> None:
        self.pos = pos
        self.out: list[Setting] = []
        self.dests: set[str] = set()  # argparse dests this file declares
        self.class_defaults: dict = {}  # the enclosing class' literal field defaults
        self.conditions: dict = {}  # name -> (if-test, other names it reads) for names the test reads as unset
        self.scope = Bindings()  # the module's names bound so far, in statement order
        self.functions = 0  # how many function bodies enclose the statement being read

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

    def add(self, key: str, node_for_key: ast.AST, value_node, origin: str, made=Setting, **extra) -> None:
        if key.rsplit(".", 1)[-1] in self.guards or key.split(".", 1)[0] in self.guards:
            return
        value, span = self.literal(value_node)
        self.out.append(made(key, value, self.pos.span(node_for_key), span, origin=origin, **extra))

    def fields(self, cls: ast.ClassDef) -> dict:
        defaults = {}
        scope = Bindings(outer=self.scope) if not self.functions else None
        for stmt in cls.body:
            computed = scope is not None and self.computed(cls, stmt, scope)
            if scope is not None:
                scope.bind(stmt, stmt.lineno + self.pos.shift)
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
                holds = _optional_class(stmt.annotation) if isinstance(stmt, ast.AnnAssign) and _is_none(value) else ""
                if holds and not computed:
                    self.add(target.id, target, value, "python-field", made=NestedField, call=cls.name, holds=holds)
                elif not computed:
                    self.add(target.id, target, value, "python-field", call=cls.name)
                literal = self.literal(value)[0] if isinstance(value, ast.Constant) else None
                defaults[target.id] = _literal_default(literal) if isinstance(value, ast.Constant) else _UNKNOWN
        return defaults

    def computed(self, cls: ast.ClassDef, stmt: ast.stmt, scope: Bindings) -> bool:
        """`vllm_num_engines: int = total_num_nodes`: a field whose default is a number computed from names the
        class body or the module bound earlier, added here (True); `fields` adds every other field."""
        if not (isinstance(stmt, (ast.AnnAssign, ast.Assign)) and stmt.value is not None):
            return False
        target = stmt.target if isinstance(stmt, ast.AnnAssign) else stmt.targets[0] if len(stmt.targets) == 1 else None
        if not isinstance(target, ast.Name) or isinstance(stmt.value, (ast.Constant, ast.Call)):
            return False
        values = scope.evaluate(stmt.value)
        if not values or target.id in self.guards:
            return False
        spelled = tuple(_spelled(v) for v in values)
        names = ", ".join(f"{name} on line {line}" for name, line in scope.source(stmt.value))
        via = f"{names}: {' or '.join(spelled)}" if names else " or ".join(spelled)
        self.out.append(ComputedSetting(target.id, spelled[0], self.pos.span(target), None, via=via,
                                        origin="python-field", call=cls.name, alternatives=spelled))
        return True

    def statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            for t in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                if isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant) and isinstance(t.slice.value, str):
                    origin = "env" if _name(t.value) == "os.environ" else "python-assign"
                    self.add(t.slice.value, t.slice, stmt.value, origin, call=_name(t.value) if origin != "env" else "")
                elif isinstance(t, ast.Attribute):
                    start = self.pos.offset(t.end_lineno, t.end_col_offset) - len(t.attr)
                    if t.attr not in self.guards:
                        self.attribute(t, stmt.value, Span(start, start + len(t.attr)))
        self.expression(stmt)

    def attribute(self, target: ast.Attribute, value_node: ast.AST, key_span: Span) -> None:
        """`obj.attr = value`: a plain assignment, or a default the code resolves (module docstring)."""
        attr, owner = target.attr, _name(target.value)
        resolution = _resolution(value_node, attr)
        condition = self.conditions.get(attr)
        if resolution is None and condition is None:
            value, span = self.literal(value_node)
            self.out.append(Setting(attr, value, key_span, span, origin="python-assign", call=owner))
            return
        test, unset_value = resolution if resolution is not None else (condition[0], value_node)
        forced = resolution is None and bool(condition[1])
        fields = {**self.class_defaults, attr: None}
        value = _evaluate(unset_value, fields)
        line = test.lineno + self.pos.shift
        via = (f"when `{ast.unparse(test)}` (line {line})" if resolution is None
               else f"line {line} sets `{ast.unparse(unset_value)}` when `{ast.unparse(test)}`")
        self.out.append(ResolvedSetting(
            attr, None if value is _UNKNOWN else _spelled(value), key_span, None, via=via,
            origin="python-forced" if forced else "python-default", call=owner,
            unset="" if value is not _UNKNOWN else _without_self(unset_value)))

    def expression(self, root: ast.AST) -> None:
        nested_dicts: set[int] = set()
        for node in chunks.nodes(root):
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
            if long or isinstance(dest, str):
                self.dests.add(dest if isinstance(dest, str) else flag_key(long))
            if default is not None and (long or dest):
                key = dest if isinstance(dest, str) else flag_key(long)
                self.add(key, default.value, default.value, "argparse-default", flag=True, written=long or "",
                         call=callee)
            return
        if short == "get" and len(node.args) == 2 and not node.keywords:
            key = node.args[0]
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and isinstance(node.args[1], ast.Constant):
                # `cfg.get("enforce_eager", False)`: the value the code uses where the option is not given
                self.add(key.value, key, node.args[1], "python-get", call=callee)
        if callee == "os.environ.setdefault" and len(node.args) == 2:
            key = node.args[0]
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                self.add(key.value, key, node.args[1], "env")
            return
        for kw in node.keywords:
            if kw.arg is not None and kw.arg not in self.guards:
                value, span = self.literal(kw.value)
                start = self.pos.offset(kw.lineno, kw.col_offset)
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
