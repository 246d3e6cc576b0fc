"""Python launchers that compose a training command's flags as strings and hand them to a framework's launch helper
(`U.execute_train(train_args=f"{ckpt_args} {rollout_args} ...")`, which runs `python3 train.py <flags>` through
`bash -c`): each such call is read as the shell command the helper runs, so the shell front end makes of it the
command record it makes of the same command in a script, and the framework's flag knowledge applies unchanged.

Which call runs which entry is knowledge (rlcompat/knowledge/data/launch_helpers.toml: the helper's qualname, the
parameter holding the flags, the entry script). The flags are read from what the file itself spells, in the function
that makes the call (the module, for a call at module level):

- string literals, adjacent literals (`"--a 1 " "--b 2 "`), `+` of such strings, the literal parts of f-strings;
- a name assigned once, directly in that function's body before the call (not under an `if`, a loop or a `with`),
  whose value is one of the above, followed through further names and f-string fields; a `name += ...` after that
  assignment and before the call extends it (one under an `if` or a loop may run or not: it adds an unread part).

Anything else (a parameter, an attribute such as `args.extra_args`, a call, a conditional, a name assigned twice,
an f-string field with a conversion or format spec) is unread: it becomes an unresolved shell variable in the command,
as `${EXTRA_ARGS}` of a script whose value the script does not set, so no rule reads a value into it. A call whose
flags are all unread gives no command at all: nothing is read, so nothing is judged (no finding, and no claim that
the command is clean). A helper parameter that adds words the file does not hold (a model's flags read from another
file: `unread_unless_none`) adds such a variable too unless it is passed as None or left out.

The command's characters keep their offsets in the file: a literal's characters are its own (the helper's
`python3 <entry>` prefix and each unread part sit at the call or the expression they come from), so a finding is
placed at the literal's line and a default the command leaves (`--fp16` not passed) at the call. A fix is kept only
where it edits characters of one literal that are written as they are read (no escapes, no `{{`) and writes no
quote, backslash, brace or newline there; any other fix is dropped and the finding says why.
"""

from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass
from typing import Mapping

from rlcompat.findings import Edit
from rlcompat.lang.embedded import Embedded
from rlcompat.lang.textpos import LineIndex

UNREAD = "${_unread_python_value}"  # an unresolved variable to the shell front end: its value is not known
FORBIDDEN = "\"'\\\n\r{}"  # a fix writing one of these would end the literal or change how Python reads it
WHY_NO_FIX = "the text to change is not written inside one plain string literal of the launcher"
MAX_DEPTH = 8  # names followed through names
STRING_START = re.compile(r"([rRuUfFbB]{0,2})('''|\"\"\"|'|\")")


@dataclass(frozen=True)
class _Char:
    char: str
    offset: int  # where it is written (or, for a character not written as read, where its expression starts)
    literal: int = -1  # the string literal it is written in, as read; -1: not written as read (no edit inside)
    read: bool = True  # False: a character of UNREAD, standing for a value the file does not hold


class _Unreadable(Exception):
    pass


def launch_blocks(text: str, helpers: Mapping) -> list[Embedded]:
    """The shell command of each call of a launch helper (`helpers`, by qualname: the knowledge the runner hands
    over, rlcompat/knowledge/launch_helpers.py) in the Python `text` whose flags are read in part at least."""
    if not any(q.rsplit(".", 1)[-1] in text for q in helpers):
        return []
    with warnings.catch_warnings():  # `"\d"` in the scanned file is its author's business, not a line of our output
        warnings.simplefilter("ignore")
        return _launch_blocks(text, helpers)


def _launch_blocks(text: str, helpers: Mapping) -> list[Embedded]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    reader = _Reader(text, _imports(tree))
    out = []
    for scope in _scopes(tree):
        bound = _bindings(scope)
        for call in _calls(scope):
            helper = helpers.get(reader.qualname(call.func) or "")
            if helper is not None:
                block = reader.command(call, helper, bound)
                if block is not None:
                    out.append(block)
    return out


def _imports(tree: ast.Module) -> dict[str, str]:
    """Local name -> the dotted name an import binds it to, from every import of the file."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    names[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _scopes(tree: ast.Module) -> list[ast.AST]:
    return [tree] + [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _own_nodes(scope: ast.AST):
    """The nodes of `scope` outside the functions, classes and lambdas it defines."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))


def _calls(scope: ast.AST) -> list[ast.Call]:
    return sorted((n for n in _own_nodes(scope) if isinstance(n, ast.Call)), key=lambda n: (n.lineno, n.col_offset))


@dataclass
class _Binding:
    value: ast.AST  # the name's one assignment, directly in the scope's body
    # `name += ...` statements after it, in order: (the statement, whether it runs whenever the assignment does: written
    # directly in the body too; one under an `if` or a loop may add its text or not, so it adds an unread part)
    appends: list[tuple[ast.AugAssign, bool]]


def _bindings(scope: ast.AST) -> dict[str, _Binding | None]:
    """Each name the scope binds -> its one assignment directly in the scope's body, with the `+=` that extend it;
    None where the name is bound otherwise or more than once (its value at the call is not read)."""
    direct = {id(s) for s in getattr(scope, "body", ())}
    counts: dict[str, int] = {}
    values: dict[str, ast.AST | None] = {}
    appends: dict[str, list[tuple[ast.AugAssign, bool]]] = {}
    for node in _own_nodes(scope):
        targets: list[ast.AST] = []
        value = None
        if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add) and isinstance(node.target, ast.Name):
            appends.setdefault(node.target.id, []).append((node, id(node) in direct))
            continue
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        elif isinstance(node, (ast.AugAssign, ast.For, ast.AsyncFor, ast.comprehension)):
            targets = [node.target]
        elif isinstance(node, ast.NamedExpr):
            targets = [node.target]
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            targets = [i.optional_vars for i in node.items if i.optional_vars is not None]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            targets = [ast.Name((a.asname or a.name).split(".")[0]) for a in node.names]
        for target in targets:
            for name in (n.id for n in ast.walk(target) if isinstance(n, ast.Name)):
                counts[name] = counts.get(name, 0) + 1
                simple = isinstance(target, ast.Name) and value is not None and id(node) in direct
                values[name] = value if simple else None
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = scope.args
        for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]:
            if arg is not None:
                counts[arg.arg] = counts.get(arg.arg, 0) + 1
                values[arg.arg] = None
    out: dict[str, _Binding | None] = {}
    for name, value in values.items():
        if counts[name] != 1 or value is None:
            out[name] = None
            continue
        after = sorted((a for a in appends.get(name, ()) if a[0].lineno > value.lineno), key=lambda a: a[0].lineno)
        out[name] = _Binding(value, after)
    for name in appends.keys() - values.keys():
        out[name] = None  # extended, never assigned here: a parameter's or a global's value
    return out


class _Reader:
    def __init__(self, text: str, imports: dict[str, str]) -> None:
        self.text = text
        self.imports = imports
        # the line breaks CPython's tokenizer counts (not str.splitlines', which also breaks at \f, \v, \x1c, ...)
        self.lines = LineIndex(text)
        self.literals = 0

    def offset(self, lineno: int, col: int) -> int:
        """The text offset of an ast position (its column counts UTF-8 bytes)."""
        return self.lines.ast_offset(lineno, col)

    def span(self, node: ast.AST) -> tuple[int, int]:
        return self.offset(node.lineno, node.col_offset), self.offset(node.end_lineno, node.end_col_offset)

    def qualname(self, func: ast.AST) -> str | None:
        parts = []
        while isinstance(func, ast.Attribute):
            parts.append(func.attr)
            func = func.value
        if not isinstance(func, ast.Name) or func.id not in self.imports:
            return None
        return ".".join([self.imports[func.id], *reversed(parts)])

    def command(self, call: ast.Call, helper, bound: dict) -> Embedded | None:
        flags = _argument(call, helper.argument, helper.position)
        entry = _argument(call, helper.entry_argument, helper.entry_position)
        if flags is None:
            return None
        if entry is None:
            entry_text = helper.entry
        elif isinstance(entry, ast.Constant) and isinstance(entry.value, str):
            entry_text = entry.value
        else:
            return None  # which script runs is not read: the command is not the framework's known entry
        read = self.value(flags, bound, call.lineno, 0, frozenset())
        if not any(c.read and not c.char.isspace() for c in read):
            return None  # nothing of the flags is read: no command is judged
        at = self.offset(call.lineno, call.col_offset)
        chars = [_Char(c, at) for c in f"python3 {entry_text} "]
        for name, position in helper.unread_unless_none:
            extra = _argument(call, name, position)
            if extra is not None and not (isinstance(extra, ast.Constant) and extra.value is None):
                chars += [_Char(c, self.offset(extra.lineno, extra.col_offset), read=False) for c in UNREAD + " "]
        chars += read
        return Embedded("shell", [(c.char, c.offset) for c in chars], place=_placer(chars), why_no_fix=WHY_NO_FIX)

    def value(self, node: ast.AST, bound: dict, before: int, depth: int, seen: frozenset) -> list[_Char]:
        """The characters of the string `node` evaluates to, unread parts as UNREAD."""
        try:
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                return self.literal(node, bound, before, depth, seen)
            if isinstance(node, ast.JoinedStr):
                return self.literal(node, bound, before, depth, seen)
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
                left = self.value(node.left, bound, before, depth, seen)
                return left + self.value(node.right, bound, before, depth, seen)
            if isinstance(node, ast.Name):
                named = self.name_value(node.id, bound, before, depth, seen)
                if named is not None:
                    return named
        except (_Unreadable, ValueError, SyntaxError):  # a literal this lexer cannot read (`ast.literal_eval`'s errors)
            pass
        return self.unread(node)

    def unread(self, node: ast.AST) -> list[_Char]:
        at = self.offset(node.lineno, node.col_offset)
        return [_Char(c, at, read=False) for c in UNREAD]

    def literal(self, node: ast.AST, bound: dict, before: int, depth: int, seen: frozenset) -> list[_Char]:
        """A string literal, adjacent literals or an f-string, lexed from the text: each piece's characters at
        their offsets."""
        start, end = self.span(node)
        text, out, i = self.text, [], start
        while i < end:
            c = text[i]
            if c in " \t\r\n\f\\":
                i += 1
                continue
            if c == "#":
                i = text.find("\n", i)
                i = end if i < 0 else i
                continue
            m = STRING_START.match(text, i)
            if m is None or "b" in m.group(1).lower():
                raise _Unreadable
            prefix, quote = m.group(1).lower(), m.group(2)
            body, j = m.end(), m.end()
            while not text.startswith(quote, j):
                if j >= end:
                    raise _Unreadable
                j += 2 if text[j] == "\\" else 1
            self.literals += 1
            if "f" in prefix:
                out += self.fstring_body(body, j, prefix, quote, bound, before, depth, seen)
            else:
                out += self.plain_body(body, j, prefix, quote)
            i = j + len(quote)
        return out

    def plain_body(self, start: int, end: int, prefix: str, quote: str) -> list[_Char]:
        body = self.text[start:end]
        if "r" in prefix or "\\" not in body:
            return [_Char(c, start + k, self.literals) for k, c in enumerate(body)]
        value = ast.literal_eval(quote + body + quote)  # escapes: read, but not written as read
        return [_Char(c, start) for c in value]

    def fstring_body(self, start: int, end: int, prefix: str, quote: str, bound: dict, before: int, depth: int,
                     seen: frozenset) -> list[_Char]:
        text, out, i = self.text, [], start
        while i < end:
            c = text[i]
            if c in "{}" and text.startswith(c * 2, i):
                out.append(_Char(c, i))
                i += 2
            elif c == "{":
                close = _field_end(text, i + 1, end)
                out += self.field(text[i + 1:close], i + 1, bound, before, depth, seen)
                i = close + 1
            elif c == "\\" and "r" not in prefix:
                k = i
                while k < end and text[k] not in "{}":
                    k += 1
                out += [_Char(ch, i) for ch in ast.literal_eval(quote + text[i:k] + quote)]
                i = k
            else:
                out.append(_Char(c, i, self.literals))
                i += 1
        return out

    def field(self, source: str, at: int, bound: dict, before: int, depth: int, seen: frozenset) -> list[_Char]:
        """An f-string field: its expression's value where it is read (no conversion, no format spec)."""
        try:
            expr = ast.parse(source.strip(), mode="eval").body
        except SyntaxError:
            return [_Char(c, at, read=False) for c in UNREAD]  # `{x!r}`, `{x:>8}`: formatted, not read
        if isinstance(expr, ast.Name):
            named = self.name_value(expr.id, bound, before, depth, seen)
            if named is not None:
                return named
        return [_Char(c, at, read=False) for c in UNREAD]

    def name_value(self, name: str, bound: dict, before: int, depth: int, seen: frozenset) -> list[_Char] | None:
        """The characters of a name's value at the call (line `before`): its assignment and the `+=` that extend it
        before the call; None where it is not read."""
        binding = bound.get(name)
        if binding is None or depth >= MAX_DEPTH or name in seen or binding.value.lineno >= before:
            return None
        inner = seen | {name}
        out = self.value(binding.value, bound, before, depth + 1, inner)
        for statement, always in binding.appends:
            if statement.lineno >= before:
                break
            out += self.value(statement.value, bound, before, depth + 1, inner) if always else self.unread(statement)
        return out


def _argument(call: ast.Call, name: str, position: int) -> ast.AST | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    positional = [a for a in call.args if not isinstance(a, ast.Starred)]
    if len(positional) == len(call.args) and position < len(call.args):
        return call.args[position]
    return None


def _field_end(text: str, i: int, end: int) -> int:
    """The offset of the `}` closing the f-string field whose expression starts at `i`."""
    depth, quote = 0, ""
    while i < end:
        c = text[i]
        if quote:
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                return i
            depth -= 1
        i += 1
    raise _Unreadable


def _placer(chars: list[_Char]):
    def place(edit: Edit) -> Edit | None:
        if any(ch in FORBIDDEN for ch in edit.content):
            return None
        if edit.start == edit.end:  # an insertion: before a character written as read, or just after one
            if edit.start < len(chars) and chars[edit.start].literal >= 0:
                at = chars[edit.start].offset
            elif 0 < edit.start <= len(chars) and chars[edit.start - 1].literal >= 0:
                at = chars[edit.start - 1].offset + 1
            else:
                return None
            return Edit(at, at, edit.content)
        span = chars[edit.start:edit.end]
        first = span[0]
        if first.literal < 0 or any(c.literal != first.literal or c.offset != first.offset + k
                                    for k, c in enumerate(span)):
            return None
        return Edit(first.offset, span[-1].offset + 1, edit.content)

    return place


def check_launches(text: str, path: str, groups, scanned) -> list[list]:
    """For each (rules, target) group, the findings of its shell config rules over the launch commands of `text`."""
    from rlcompat.lang.settings import ConfigRule

    out: list[list] = [[] for _ in groups]
    shell_rules = [[r for r in rules if isinstance(r, ConfigRule) and "shell" in r.languages] for rules, _ in groups]
    blocks = launch_blocks(text, scanned.launch_helpers()) if any(shell_rules) else []
    if not blocks:
        return out  # (before the shell front end is imported: most Python files call no launch helper)
    from rlcompat.lang import shell
    from rlcompat.lang.embedded import map_findings

    index = LineIndex(text)
    for block in blocks:
        code = block.code
        try:
            script = shell.parse(code)
        except shell.PARSE_ERRORS:
            continue
        for i, ((_, target), rules) in enumerate(zip(groups, shell_rules)):
            woken = scanned.woken(rules, "shell", code)
            if woken:
                found = shell.check(script, code, path, woken, target, scanned=scanned)
                out[i] += map_findings(block, found, index)
    return out
