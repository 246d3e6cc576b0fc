"""setup.py and setup.cfg as declared environments: what `pip install .` (and `pip install .[extra]`) asks for.

setup.py is read, never run: CPython's `ast` gives the `setup(...)` call's `install_requires` and `extras_require`,
and the expressions they are built from are followed through the module's top-level assignments: literal lists and
tuples, `+` of lists, names, dicts (literal, `dict(...)`, `name["extra"] = ...` assignments), and the
transformers-style table of pins (`_deps = ["torch>=2.0", ...]`, `deps = {b: a for a, b in ... _deps}`, then
`deps["torch"]` or `deps_list("torch", ...)`, a function returning `[deps[n] for n in names]`). Each requirement is
reported where its string is written (the `_deps` entry, not the use); one that only an extra reaches keeps that
extra's name, one that `install_requires` reaches is installed by default. What is read from another file
(`open("requirements.txt")`, directly or through a module function that opens its argument:
`install_requires=_fetch_requirements("requirements.txt")`) is that file's to report when it is scanned; the group
names the file (`core_files`), since what it pins installs with every extra.

setup.cfg: `[options] install_requires` and `[options.extras_require]`, one requirement a line (dangling lists) or
`;`-separated on one line, with setuptools' comment rules.
"""

from __future__ import annotations

import ast
import re
from typing import Sequence

from rlcompat.findings import Finding
from rlcompat.lang.declared import Declared, Requirement, requirement_at, run
from rlcompat.lang.scanned import ScannedView
from rlcompat.lang.settings import Span
from rlcompat.lang.textpos import LineIndex, lines_at

SETUP_PY_NAMES = ("setup.py",)


class SetupCfgError(Exception):
    """Never raised: a line-based reader refuses nothing; setuptools reports its own syntax errors."""


PARSE_ERRORS = (SetupCfgError,)


def syntax_error_location(exc: Exception) -> tuple[int, int, str]:
    return 1, 1, str(exc)


# --- setup.py ---------------------------------------------------------------------------------------------------


def parse_setup_py(text: str) -> Declared:
    """The requirements a setup.py's `setup(...)` call installs (SyntaxError where CPython does not parse it)."""
    module = ast.parse(text)
    reader = _SetupReader(module, text)
    group = Declared("setup.py", anchor=Span(0, 0))
    found: dict[int, tuple[Requirement, str]] = {}  # by offset: the first reach decides, a default install wins
    for node, extra in reader.requirements():
        req = reader.requirement(node)
        if req is None:
            continue
        seen = found.get(req.span.start)
        if seen is None or (seen[1] and not extra):
            found[req.span.start] = (req, extra)
    for _, (req, extra) in sorted(found.items()):
        req.extra = extra
        group.requirements.append(req)
    group.core_files = reader.core_files()
    return group


class _SetupReader:
    def __init__(self, module: ast.Module, text: str) -> None:
        self.text = text
        self.lines = LineIndex(text)
        self.assigned: dict[str, list[ast.expr]] = {}  # top-level name -> values assigned, in order
        self.items: dict[str, dict[str, list[ast.expr]]] = {}  # `name["key"] = value` at top level
        self.functions: dict[str, ast.FunctionDef] = {}
        self.setup_calls: list[ast.Call] = []
        for stmt in module.body:
            self._statement(stmt)
        for node in ast.walk(module):
            if isinstance(node, ast.Call) and _called_name(node) in ("setup", "setuptools.setup"):
                self.setup_calls.append(node)

    def _statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            for assigned in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                if isinstance(assigned, ast.Name):
                    self.assigned.setdefault(assigned.id, []).append(stmt.value)
                elif isinstance(assigned, ast.Subscript) and isinstance(assigned.value, ast.Name):
                    key = _string(assigned.slice)
                    if key is not None:
                        self.items.setdefault(assigned.value.id, {}).setdefault(key, []).append(stmt.value)
        elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) and isinstance(stmt.op, ast.Add):
            self.assigned.setdefault(stmt.target.id, []).append(stmt.value)
        elif isinstance(stmt, ast.FunctionDef):
            self.functions[stmt.name] = stmt
        elif isinstance(stmt, (ast.If, ast.Try, ast.With)):
            # Pins set under `if sys.platform ...` or `try:` at top level are still the module's.
            for body in (getattr(stmt, "body", []), getattr(stmt, "orelse", []), getattr(stmt, "finalbody", [])):
                for inner in body:
                    self._statement(inner)

    def requirements(self):
        """(string node, extra) for every requirement string `setup(...)` reaches."""
        for call in self.setup_calls:
            for kw in call.keywords:
                if kw.arg in ("install_requires", "setup_requires"):
                    yield from ((n, "") for n in self._strings(kw.value, set()))
                elif kw.arg == "extras_require":
                    for extra, value in self._dict_entries(kw.value, set()):
                        yield from ((n, extra or "extra") for n in self._strings(value, set()))
                elif kw.arg is None:  # setup(**kwargs)
                    for key, value in self._dict_entries(kw.value, set()):
                        if key in ("install_requires", "setup_requires"):
                            yield from ((n, "") for n in self._strings(value, set()))

    def core_files(self) -> tuple[str, ...]:
        """The files `install_requires` is read from: `open("requirements.txt")` in its expression, or a call of a
        module function that opens one of its parameters with the file's name for it."""
        out: list[str] = []
        for call in self.setup_calls:
            for kw in call.keywords:
                if kw.arg == "install_requires":
                    out += [f for f in self._opened(kw.value, set()) if f not in out]
        return tuple(out)

    def _opened(self, node: ast.expr, inside: set) -> list[str]:
        if isinstance(node, ast.Name) and node.id not in inside:
            return [f for v in self.assigned.get(node.id, ()) for f in self._opened(v, inside | {node.id})]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self._opened(node.left, inside) + self._opened(node.right, inside)
        out = []
        for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
            name = _called_name(call)
            if name == "open" and call.args and (file := _string(call.args[0])) is not None:
                out.append(file)
                continue
            function = self.functions.get(name or "")
            if function is None or name in inside:
                continue
            params = [a.arg for a in function.args.posonlyargs + function.args.args]
            opened = {n.args[0].id for n in ast.walk(function) if isinstance(n, ast.Call) and _called_name(n) == "open"
                      and n.args and isinstance(n.args[0], ast.Name)}
            for param, arg in zip(params, call.args):
                if param in opened and (file := _string(arg)) is not None:
                    out.append(file)
        return out

    # Each reader carries the names it is inside of, so a name assigned from itself is read once.
    def _strings(self, node: ast.expr, inside: set) -> list[ast.Constant]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node]
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return [s for e in node.elts for s in self._strings(e, inside)]
        if isinstance(node, ast.Starred):
            return self._strings(node.value, inside)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self._strings(node.left, inside) + self._strings(node.right, inside)
        if isinstance(node, ast.Name) and node.id not in inside:
            return [s for v in self.assigned.get(node.id, ()) for s in self._strings(v, inside | {node.id})]
        if isinstance(node, ast.Subscript):
            return self._subscript(node, inside)
        if isinstance(node, ast.Call):
            return self._call(node, inside)
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            return self._comprehension(node, inside)
        return []

    def _subscript(self, node: ast.Subscript, inside: set) -> list[ast.Constant]:
        key = _string(node.slice)
        if key is None or not isinstance(node.value, ast.Name):
            return []
        table = node.value.id
        if table in self.items and key in self.items[table]:
            return [s for v in self.items[table][key] for s in self._strings(v, inside)]
        for entry_key, value in self._dict_entries(node.value, inside):
            if entry_key == key:
                return self._strings(value, inside)
        return self._pin_table(table, [key], inside)

    def _call(self, node: ast.Call, inside: set) -> list[ast.Constant]:
        name = _called_name(node)
        if name in ("list", "tuple", "sorted", "set") and node.args:
            return self._strings(node.args[0], inside)
        function = self.functions.get(name or "")
        if function is None or name in inside:
            return []
        # `deps_list("torch", "accelerate")`: a helper that looks its arguments up in a table of pins.
        names = [s for a in node.args if (s := _string(a)) is not None]
        tables = {n.value.id for n in ast.walk(function) if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name)}
        return [s for t in sorted(tables) for s in self._pin_table(t, names, inside | {name})]

    def _comprehension(self, node, inside: set) -> list[ast.Constant]:
        # `[deps[n] for n in ("torch", "numpy")]`
        if len(node.generators) != 1 or not isinstance(node.elt, ast.Subscript):
            return []
        names = [s for s in (_string(e) for e in getattr(node.generators[0].iter, "elts", ())) if s is not None]
        table = node.elt.value
        return self._pin_table(table.id, names, inside) if isinstance(table, ast.Name) else []

    def _pin_table(self, table: str, names: list[str], inside: set) -> list[ast.Constant]:
        """The strings of a table of pins keyed by package name (`deps = {b: a for a, b in ... for x in _deps}`)
        that `names` select."""
        if table in inside:
            return []
        wanted = {_norm(n) for n in names}
        out = []
        for value in self.assigned.get(table, ()):
            if not isinstance(value, ast.DictComp):
                continue
            sources = [n for g in value.generators for n in ast.walk(g.iter) if isinstance(n, ast.Name)]
            for source in sources:
                for s in self._strings(source, inside | {table}):
                    req = requirement_at(s.value.strip(), 0)
                    if req is not None and req.name in wanted:
                        out.append(s)
        return out

    def _dict_entries(self, node: ast.expr, inside: set) -> list[tuple[str | None, ast.expr]]:
        if isinstance(node, ast.Dict):
            out = []
            for k, v in zip(node.keys, node.values):
                if k is None:  # {**other}
                    out += self._dict_entries(v, inside)
                else:
                    out.append((_string(k), v))
            return out
        if isinstance(node, ast.Call) and _called_name(node) == "dict":
            out = [e for a in node.args for e in self._dict_entries(a, inside)]
            return out + [(kw.arg, kw.value) for kw in node.keywords if kw.arg is not None]
        if isinstance(node, ast.Name) and node.id not in inside:
            out = [e for v in self.assigned.get(node.id, ()) for e in self._dict_entries(v, inside | {node.id})]
            out += [(k, v) for k, values in self.items.get(node.id, {}).items() for v in values]
            return out
        return []

    def requirement(self, node: ast.Constant) -> Requirement | None:
        value = node.value
        stripped = value.strip()
        if not stripped:
            return None
        start = self._content_start(node)
        written = start is not None and self.text[start:start + len(value)] == value
        offset = (start + len(value) - len(value.lstrip())) if written else self._node_start(node)
        req = requirement_at(stripped, offset)
        if req is None:
            return None
        if not written:
            req.editable = False
            req.span = Span(offset, offset)
            req.spec_span = None
        return req

    def _node_start(self, node: ast.expr) -> int:
        return self.lines.ast_offset(node.lineno, node.col_offset)

    def _content_start(self, node: ast.Constant) -> int | None:
        """Where a plain one-line string's characters start (after its prefix and quote), else None."""
        if node.end_lineno != node.lineno:
            return None
        at = self._node_start(node)
        m = re.match(r"[rRuU]?(\"|')", self.text[at:at + 2])
        return at + m.end() if m else None


def _called_name(call: ast.Call) -> str | None:
    f = call.func
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
        return f"{f.value.id}.{f.attr}"
    return None


def _string(node) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def check_setup_py(text: str, path: str, rules: Sequence, target, scanned: ScannedView) -> list[Finding]:
    """The declared-environment rules over a setup.py (none where it does not parse: the Python front end says so)."""
    try:
        group = parse_setup_py(text)
    except (SyntaxError, ValueError, RecursionError):
        return []
    return run([group], text, path, rules, target, scanned) if group.requirements else []


# --- setup.cfg --------------------------------------------------------------------------------------------------

_SECTION = re.compile(r"^\[(?P<name>[^\]]+)\]\s*(?:[#;].*)?$")
_KEY = re.compile(r"^(?P<key>[A-Za-z0-9_.\-]+)\s*[=:]\s*(?P<value>.*)$")


def parse(text: str) -> Declared:
    """setup.cfg's `[options] install_requires`/`setup_requires` and `[options.extras_require]` entries."""
    group = Declared("setup.cfg", anchor=Span(0, 0))
    section, key = "", None
    for start, line in lines_at(text):
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", ";")):
            continue
        if not line[0].isspace():
            header = _SECTION.match(line)
            if header:
                section, key = header.group("name").strip(), None
                continue
            m = _KEY.match(line)
            key = m.group("key").lower() if m else None
            if m and m.group("value").strip():
                _values(group, section, key, m.group("value"), start + m.start("value"))
            continue
        if key is not None:  # a continuation line of a dangling list
            _values(group, section, key, line, start)
    return group


def _values(group: Declared, section: str, key: str, value: str, offset: int) -> None:
    if section == "options" and key in ("install_requires", "setup_requires"):
        extra = ""
    elif section == "options.extras_require":
        extra = key
    else:
        return
    body = re.sub(r"\s[#;].*$", "", value)  # an inline comment needs a blank before it
    # A one-line list separates requirements with `;`, which is also PEP 508's marker separator: a part that starts
    # with a name is a requirement, the rest are markers of the one before.
    for m in re.finditer(r"[^;]+", body):
        part = m.group(0)
        if not part.strip() or not re.match(r"\s*[A-Za-z0-9]", part) or re.match(r"\s*\w+\s*[<>=!]=?\s*['\"]", part):
            continue
        at = offset + m.start() + len(part) - len(part.lstrip())
        req = requirement_at(part.strip(), at)
        if req is not None:
            req.extra = extra
            group.requirements.append(req)


def check(group: Declared, text: str, path: str, rules: Sequence, target, *,
          scanned: ScannedView) -> list[Finding]:
    return run([group], text, path, rules, target, scanned)
