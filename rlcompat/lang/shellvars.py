"""A shell command's words and the variables a script assigns (the shell front end's values: lang/shell.py).

A `Word` keeps every unquoted character with its offset in the file, so a value read from it, or from the
assignment a `$VAR` in it expands to, has the span a fix rewrites. `Variables` answers what a name holds at a point
of the script: the last assignment before it (plain, `export`, `${NAME:=value}`, arrays, heredoc bodies read into
it), unless the script's own option parser may assign it from a positional argument.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rlcompat.lang.settings import Span
from rlcompat.lang.shellwords import HeredocValue, array_tokens, body_tokens, value_tokens


@dataclass
class Word:
    raw: str  # as written, quotes included
    start: int  # offset in the file
    chars: list[tuple[str, int]]  # the unquoted characters and their offsets in the file
    dynamic: bool  # contains an expansion ($VAR, $(...), `...`)
    params: list[tuple[str, int, int]]  # ($VAR name or ${...} body, file start, file end)

    @property
    def text(self) -> str:
        return "".join(c for c, _ in self.chars)

    @property
    def end(self) -> int:
        return self.start + len(self.raw)

    def span_of(self, i: int, j: int) -> Span | None:
        """File span of unquoted characters i..j, if they are written contiguously (no quote in between)."""
        if i >= j:
            return Span(self.chars[i - 1][1] + 1, self.chars[i - 1][1] + 1) if i and i == j else None
        first, last = self.chars[i][1], self.chars[j - 1][1]
        return Span(first, last + 1) if last - first == j - i - 1 else None


def word_at(raw: str, start: int) -> Word:
    chars: list[tuple[str, int]] = []
    params: list[tuple[str, int, int]] = []
    dynamic = False
    i, quote = 0, None
    while i < len(raw):
        ch = raw[i]
        if quote == "'":
            if ch == "'":
                quote = None
            else:
                chars.append((ch, start + i))
            i += 1
            continue
        if ch == "\\" and i + 1 < len(raw) and (quote is None or raw[i + 1] in '"\\$`'):
            chars.append((raw[i + 1], start + i + 1))
            i += 2
            continue
        if ch == '"':
            quote = None if quote == '"' else '"'
            i += 1
            continue
        if ch == "'" and quote is None:
            quote = "'"
            i += 1
            continue
        if ch in "$`":
            dynamic = True
            m = re.match(r"\$\{([^}]*)\}|\$([A-Za-z_]\w*)", raw[i:])
            if m:
                params.append((m.group(1) if m.group(1) is not None else m.group(2), start + i, start + i + m.end()))
        chars.append((ch, start + i))
        i += 1
    return Word(raw, start, chars, dynamic, params)


@dataclass
class Assignment:
    name: str
    word: Word  # the whole `NAME=value` word
    value_index: int  # index in word.chars where the value starts


# `${NAME:=value}` / `${NAME=value}` as a word of its own (the argument of `:`): a default the script assigns
DEFAULT_ASSIGNMENT = re.compile(r"\$\{([A-Za-z_]\w*):?=([^}]*)\}")

# A value that is one positional parameter: `"$2"`, `$1`, `${2}` (what a script's own option parser assigns)
POSITIONAL_VALUE = re.compile(r'"?\$(?:[1-9]|\{[1-9]\})"?')


def _past_arguments(candidates: list["Assignment"]) -> list["Assignment"]:
    """The assignments whose last one is what a run without arguments gets: a script that sets a default
    (`ROLLOUT_NAME=vllm_with_tool`) and then lets its own option parser replace it from a positional parameter
    (`--rollout_name) ROLLOUT_NAME="$2"; shift 2;;`) runs with the default unless the caller passes that option, so
    trailing assignments of a positional parameter after a literal default are passed over."""
    kept = list(candidates)
    while len(kept) > 1 and POSITIONAL_VALUE.fullmatch(kept[-1].word.text[kept[-1].value_index:]):
        kept.pop()
    return kept


class Variables:
    """Shell variables set by plain assignments, in script order (the last one before a use wins)."""

    def __init__(self, text: str = "") -> None:
        self.assignments: dict[str, list[Assignment]] = {}
        self.heredocs: dict[str, list[HeredocValue]] = {}  # `read -r -d '' NAME <<EOF`
        self.arrays: dict[str, list[tuple[int, int, int, bool]]] = {}  # NAME=(...): (start, items start, end, +=)
        self.text = text

    def record_heredoc(self, value: HeredocValue) -> None:
        self.heredocs.setdefault(value.name, []).append(value)

    def record_array(self, name: str, start: int, items_start: int, items_end: int) -> None:
        append = name.endswith("+")
        self.arrays.setdefault(name.rstrip("+"), []).append((start, items_start, items_end, append))

    def array_words(self, name: str, before: int) -> list[Word] | None:
        """The items of array `name` (`"${name[@]}"`) as last assigned before `before`, as words in the file."""
        found = [a for a in self.arrays.get(name, ()) if a[0] < before]
        if not found:
            return None
        base = max((i for i, a in enumerate(found) if not a[3]), default=0)  # `NAME+=(...)` appends to it
        return [word_at(self.text[s:e], s) for _, start, end, _ in found[base:] for s, e in array_tokens(self.text, start, end)]

    def words_of(self, name: str, before: int) -> list[Word] | None:
        """The words `$name` (unquoted) splits into at offset `before`, at their offsets in the file; None if unknown."""
        last_assign = _past_arguments([a for a in self.assignments.get(name, ()) if a.word.start < before])
        last_doc = [h for h in self.heredocs.get(name, ()) if h.defined_at < before]
        a = last_assign[-1] if last_assign else None
        h = last_doc[-1] if last_doc else None
        if h is not None and (a is None or h.defined_at > a.word.start):
            return [word_at(self.text[s:e], s) for s, e in body_tokens(self.text, h.body_start, h.body_end, h.quoted)]
        if a is None:
            return None
        if re.fullmatch(r"\$\{?[A-Za-z_]\w*\}?", a.word.text[a.value_index:]):
            return None  # a value that is another variable: left to the resolver (a single word)
        out = []
        for tok in value_tokens(a.word.chars[a.value_index:]):
            first, last = tok[0][1], tok[-1][1]
            out.append(Word(self.text[first:last + 1], first, tok, any(ch in "$`" for ch, _ in tok), []))
        return out

    def record(self, word: Word) -> None:
        text = word.text
        m = re.match(r"^([A-Za-z_]\w*)=", text)
        if m:
            self.assignments.setdefault(m.group(1), []).append(Assignment(m.group(1), word, m.end()))

    def record_default(self, word: Word) -> None:
        """An argument of the null command, `: "${NAME:=value}"` (or `${NAME=value}`): the script's default for NAME,
        what a run gets when the caller's environment does not set it. Recorded as `NAME=value` whose value keeps its
        offsets in the file, so a value read from NAME is rewritten where the default is written."""
        m = DEFAULT_ASSIGNMENT.fullmatch(word.text)
        if not m or "$" in m.group(2) or "`" in m.group(2):
            return
        name = m.group(1)
        earlier = self.assignments.get(name)
        if earlier and (":=" not in word.text or earlier[-1].word.text[earlier[-1].value_index:]):
            return  # the script set it before: `=` keeps any value, `:=` any but the empty one
        chars = word.chars[2:2 + len(name)] + [("=", word.chars[m.start(2) - 1][1])] + word.chars[m.start(2):m.end(2)]
        assigned = Word(word.raw, word.start, chars, False, [])
        self.assignments.setdefault(name, []).append(Assignment(name, assigned, len(name) + 1))

    def value_of(self, name: str, before: int, depth: int = 0) -> tuple[str | None, Span | None, str]:
        """(literal value, span to rewrite it, where it was set) of `$name` used at offset `before`."""
        if depth > 5:
            return None, None, ""
        candidates = [a for a in self.assignments.get(name, ()) if a.word.start < before]
        kept = _past_arguments(candidates)
        if not kept:
            return None, None, ""
        a = kept[-1]
        value = a.word.text[a.value_index:]
        where = f"{name}=... on line {{line:{a.word.start}}}"
        if len(kept) < len(candidates):
            where += " (the script's default, which an argument of its own may replace)"
        if not a.word.dynamic:
            return value, a.word.span_of(a.value_index, len(a.word.chars)), where
        return resolve_expansion(a.word, a.value_index, self, a.word.start, depth + 1, where)

    def partial_value(self, name: str, before: int, depth: int = 0) -> str | None:
        """The value of `$name` at `before` with each plain `$VAR`/`${VAR}` in it replaced where its value is known
        (or, a few levels down, partly known: `LOCAL="+cu128${TORCH_TAG}"`) and every other expansion left as written
        (it keeps its `$`: unknown stays unknown); None if never set."""
        candidates = [a for a in self.assignments.get(name, ()) if a.word.start < before]
        if not candidates or depth > 3:
            return None
        a = candidates[-1]
        value_start = a.word.chars[a.value_index][1] if a.value_index < len(a.word.chars) else a.word.end
        known: dict[int, tuple[int, str]] = {}  # file start of an expansion -> (its file end, its value)
        for body, start, end in a.word.params:
            if start >= value_start and re.fullmatch(r"[A-Za-z_]\w*", body):
                value, _, _ = self.value_of(body, a.word.start, 1)
                if value is None and depth:
                    value = self.partial_value(body, a.word.start, depth + 1)
                if value is not None:
                    known[start] = (end, value)
        return spliced(a.word.chars[a.value_index:], known)


def resolve_expansion(word: Word, from_index: int, variables: Variables, before: int, depth: int,
                       where: str) -> tuple[str | None, Span | None, str]:
    """A value that is exactly one `$VAR`, `${VAR}` or `${VAR:-default}`: what it is, and where to rewrite it."""
    text = word.text[from_index:]
    m = re.fullmatch(r"\$([A-Za-z_]\w*)|\$\{([A-Za-z_]\w*|\d+)\}|\$\{([A-Za-z_]\w*|\d+):?[-=]([^}]*)\}", text)
    if not m:
        return None, None, ""
    name = m.group(1) or m.group(2) or m.group(3)
    value, span, set_where = variables.value_of(name, before, depth)
    if value is not None:
        return value, span, set_where
    if m.group(3) is not None:
        default = m.group(4)
        if "$" in default or "`" in default:
            return None, None, ""
        offset = from_index + len(m.group(0)) - 1 - len(default)
        return default, word.span_of(offset, offset + len(default)), f"the default in ${{{name}:-...}}"
    return None, None, ""


def spliced(chars, known: dict[int, tuple[int, str]]) -> str:
    """A word's characters with each expansion whose value is known (`known[start] = (end, value)`) replaced by it."""
    out, skip_to = [], -1
    for ch, at in chars:
        if at < skip_to:
            continue
        if at in known:
            skip_to, value = known[at]
            out.append(value)
            continue
        out.append(ch)
    return "".join(out)
