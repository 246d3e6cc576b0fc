"""The shell front end: launch scripts parsed with bashlex, one top-level command at a time.

bashlex is a port of bash's own grammar and gives every word's position in the file, quotes included. It does
not implement everything (arithmetic `$((...))`, `case`): the script is first split into logical lines
(quotes, `\\` continuations and heredoc bodies respected), and each command is parsed on its own, so a
construct bashlex cannot read costs that command only, not the file.

From each command come settings: Hydra overrides of a verl training command (`python3 -m
verl.trainer.main_ppo`, through `torchrun`, `ray job submit --`, or a wrapper variable like `$PY`) and
argparse-style flags of any command (`--bf16`, `--attn_implementation flash_attention_2`). Values from
variables (`dtype=$DTYPE`, `${DTYPE:-bfloat16}`) resolve to the assignment that sets them, which is where
a fix rewrites them.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Sequence

import bashlex
import bashlex.errors

from rlcompat.lang.embedded import Embedded, check_python
from rlcompat.lang.scanned import ScannedView
from rlcompat.lang.settings import ConfigRule, ConfigView, Setting, Span, flag_key
from rlcompat.lang.shellwords import (PYTHON_COMMAND, SIMPLE_PARAM, HeredocValue, body_tokens, heredoc_of,
                                      array_tokens, is_quoted_delimiter, read_target, value_tokens)
from rlcompat.findings import Edit, Finding
from rlcompat.lang.textpos import LineIndex

OVERRIDE = re.compile(r"^(\+\+|\+|~)?([A-Za-z_][\w\-]*(?:[./@][\w\-]+)*)=(.*)$", re.DOTALL)
BOOL_WORDS = {"true", "false", "True", "False", "TRUE", "FALSE", "1", "0", "yes", "no"}


MAX_EXTRA_LINES = 50


class ShellSyntaxError(Exception):
    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset
        self.line = 1
        self.column = 1


PARSE_ERRORS = (ShellSyntaxError,)


@dataclass
class ShellScript:
    text: str
    nodes: list[tuple[int, object]] = field(default_factory=list)  # (offset of the chunk, bashlex node)
    skipped: list[tuple[int, int, str]] = field(default_factory=list)  # (start, end, why) of commands bashlex cannot read
    heredocs: list[tuple[int, int, int, int]] = field(default_factory=list)  # (word start, word end, body start, end)
    arrays: list[tuple[str, int, int, int]] = field(default_factory=list)  # (name, start, items start, end); `NAME+`: +=
    # Where a bare `NAME=value` is an export (a Dockerfile's `ENV`: the container's environment, lang/dockerfile.py)
    exported_spans: list[tuple[int, int]] = field(default_factory=list)
    image: str = ""  # the container image the script runs in, where its front end knows it (ConfigView.image)


def parse(text: str) -> ShellScript:
    script = ShellScript(text)
    plain = _mask_final_backslash(_crlf_as_lf(text))
    heredocs: list[tuple[int, int, int, int]] = []
    try:
        bounds = _logical_line_starts(plain, heredocs)
    except ShellSyntaxError as exc:
        exc.line, column0 = LineIndex(text).position(exc.offset)
        exc.column = column0 + 1
        raise
    script.heredocs = heredocs
    masked = _mask_arrays(_mask_tests(_mask_arithmetic(_mask_heredocs(plain, heredocs))), script.arrays)
    lines = list(zip(bounds, bounds[1:]))
    i = 0
    while i < len(lines):
        j = _chunk_end(masked, lines, i)
        start = lines[i][0]
        if _blank_or_comment(masked[start:lines[j - 1][1]]):
            i = j
            continue
        parts, why = _read_chunk(masked[start:lines[j - 1][1]])
        extra = 0
        while parts is None and why.startswith("unexpected EOF") and j < len(lines) and extra < MAX_EXTRA_LINES:
            j, extra = j + 1, extra + 1  # the keyword count closed the block too early: read one more line
            parts, why = _read_chunk(masked[start:lines[j - 1][1]])
        if parts is not None:
            script.nodes.extend((start + at, node) for at, node in parts)
        elif j - i == 1:
            script.skipped.append((start, lines[i][1], why))
        else:
            # Something in the block is beyond bashlex: read its lines one by one, so only that command is lost.
            for a, b in lines[i:j]:
                if _blank_or_comment(masked[a:b]):
                    continue
                parts, why = _read_chunk(masked[a:b])
                if parts is None and CASE_ARM.match(masked[a:b]):
                    parts, why = _read_chunk(_blank_case_arm(masked[a:b]))
                if parts is None:
                    script.skipped.append((a, b, why))
                else:
                    script.nodes.extend((a + at, node) for at, node in parts)
        i = j
    return script


# `pattern)` at the start and `;;` at the end of a one-line `case` arm: blanked so the command in between is read.
CASE_ARM = re.compile(r"^([ \t]*)(\(?[^()\s;|]+(?:\|[^()\s;|]+)*\))(.*?)(;;&?|;&)?([ \t]*(?:#.*)?\r?\n?)$", re.DOTALL)


def _blank_case_arm(line: str) -> str:
    m = CASE_ARM.match(line)
    return m.group(1) + " " * len(m.group(2)) + m.group(3) + " " * len(m.group(4) or "") + m.group(5)


def _read_chunk(chunk: str):
    """(nodes as (offset in the chunk, bashlex node), why not) for one logical line or block. A line continuation
    inside a command substitution becomes blanks first (bashlex drops it there and its positions after it would be
    off by two). Where bashlex refuses the chunk because of what a command substitution holds (`$(cd d && vllm serve
    ...)`, `` `a & b` ``: it reads only single commands there), each substitution is read as a script of its own and
    the command around it with the substitution as a same-length variable, so both are checked."""
    spans = _substitutions(chunk)
    if spans:
        chunk = _blank_continuations(chunk, spans)
    parts, why = _parse_chunk(chunk)
    if parts is not None:
        return [(0, node) for node in parts], ""
    if not spans:
        return None, why
    outer = list(chunk)
    for start, end in spans:  # `$(code)` -> `$______`, `` `code` `` -> `$_____`: a variable of the same length
        outer[start - 1:end + 1] = ["$" if chunk[start - 1] == "`" else "_"] + ["_"] * (end - start + 1)
    around, _ = _parse_chunk("".join(outer))
    if around is None:
        return None, why  # the command around is beyond bashlex too: the caller reads the block line by line
    nodes = [(0, node) for node in around]
    for start, end in spans:
        inner, _ = _read_chunk(chunk[start:end])
        nodes.extend((start + at, node) for at, node in inner or ())
    return nodes, ""


def _substitutions(chunk: str) -> list[tuple[int, int]]:
    """(start, end) of the code inside each outermost `$(...)` and `` `...` `` of a chunk (none inside single quotes
    or comments)."""
    out: list[tuple[int, int]] = []
    i, n, quote = 0, len(chunk), ""
    word_start = True
    while i < n:
        ch = chunk[i]
        if quote == "'":
            quote = "" if ch == "'" else quote
            i += 1
            continue
        if ch == "\\":
            i += 2
            word_start = False
            continue
        if ch == "'" and not quote:
            quote = "'"
        elif ch == '"':
            quote = "" if quote == '"' else '"'
        elif ch == "#" and word_start and not quote:
            nl = chunk.find("\n", i)
            i = n if nl < 0 else nl
            continue
        elif ch == "$" and chunk.startswith("$(", i) and not chunk.startswith("$((", i):
            end = _closing(chunk, i + 2)
            if end is None:
                return out
            out.append((i + 2, end))
            i = end + 1
            word_start = False
            continue
        elif ch == "`":
            end = i + 1
            while end < n and chunk[end] != "`":
                end += 2 if chunk[end] == "\\" else 1
            if end >= n:
                return out
            out.append((i + 1, end))
            i = end + 1
            word_start = False
            continue
        word_start = ch in " \t\n;&|()" and not quote
        i += 1
    return out


def _closing(text: str, i: int) -> int | None:
    """The offset of the `)` that closes a `$(` whose code starts at `i` (quotes and nested parentheses counted)."""
    depth, quote, n = 1, "", len(text)
    while i < n:
        ch = text[i]
        if quote == "'":
            quote = "" if ch == "'" else quote
        elif ch == "\\":
            i += 1
        elif ch == "'" and not quote:
            quote = "'"
        elif ch == '"':
            quote = "" if quote == '"' else '"'
        elif not quote and ch == "(":
            depth += 1
        elif not quote and ch == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def _blank_continuations(chunk: str, spans: list[tuple[int, int]]) -> str:
    out = list(chunk)
    for start, end in spans:
        k = chunk.find("\\\n", start, end)
        while k >= 0:
            if k == start or chunk[k - 1] != "\\":
                out[k] = out[k + 1] = " "
            k = chunk.find("\\\n", k + 2, end)
    return "".join(out)


def _parse_chunk(chunk: str):
    try:
        return bashlex.parse(chunk), ""
    except bashlex.errors.ParsingError as exc:
        return None, str(exc)
    except NotImplementedError as exc:
        # bashlex's message dumps its whole parse tree; the construct's name is what a reader needs.
        construct = re.search(r"type = \{([^}]*)\}", str(exc))
        return None, f"bashlex does not implement {construct.group(1) if construct else 'a construct in it'}"
    except (AttributeError, TypeError, ValueError, IndexError, AssertionError, RecursionError) as exc:
        return None, f"not supported by the shell parser ({type(exc).__name__}: {str(exc)[:80]})"


_OPENERS = {"if", "for", "while", "until", "case", "select", "{", "("}
_CLOSERS = {"fi", "done", "esac", "}"}
_COMMAND_START = {";", "&&", "||", "|", "&", ";;", "then", "do", "else", "elif", "{", "(", "!", "time", ")"}
_TOKEN = re.compile(r"\|\||&&|;;|[;&|()]|[^\s;&|()]+")


def _chunk_end(text: str, lines: list[tuple[int, int]], i: int) -> int:
    """Index after the last logical line of the top-level command starting at line i (by counting keywords)."""
    depth = subshells = 0
    j = i
    while j < len(lines):
        at_command = True
        for token in _TOKEN.findall(_strip_quotes_and_comment(text[lines[j][0]:lines[j][1]])):
            if token == ")" and subshells:
                subshells -= 1
                depth -= 1
            elif at_command and token in _OPENERS:
                depth += 1
                subshells += token == "("
            elif at_command and token in _CLOSERS:
                depth -= 1
            at_command = token in _COMMAND_START
        j += 1
        if depth <= 0 and not _continues(text[lines[j - 1][0]:lines[j - 1][1]]):
            break
    return j


def _continues(line: str) -> bool:
    """A logical line ending in a pipe, `&&`/`||` or a function header: the command goes on on the next line."""
    stripped = _strip_quotes_and_comment(line).rstrip()
    if stripped.endswith(("|", "&&")):
        return True
    # A function header whose body starts on the next line: `name()` or `function name`.
    return bool(re.search(r"\(\s*\)$", stripped) or re.fullmatch(r"\s*function\s+\S+", stripped))


def _strip_quotes_and_comment(line: str) -> str:
    line = re.sub(r"'[^']*'|\"(?:\\.|[^\"\\])*\"", "''", line)
    return re.sub(r"(^|\s)#.*", "", line)


def _mask_arithmetic(text: str) -> str:
    """`$((...))` (which bashlex does not implement) becomes `$___...`, a variable of the same length."""
    out, i = [], 0
    while True:
        k = text.find("$((", i)
        if k < 0:
            out.append(text[i:])
            return "".join(out)
        depth, j = 0, k + 1
        while j < len(text):
            if text[j] == "(":
                depth += 1
            elif text[j] == ")":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        if j >= len(text) or "\n" in text[k:j]:
            out.append(text[i:k + 3])
            i = k + 3
            continue
        out.append(text[i:k] + "$" + "_" * (j - k))
        i = j + 1


_FINAL_BACKSLASH = re.compile(r"(?<!\\)((?:\\\\)*)\\([ \t]*\n?[ \t\n]*)\Z")


def _mask_final_backslash(text: str) -> str:
    """A script whose last command ends in a `\\` continuation (bash reads it as continuing into nothing): the
    backslash becomes a blank, at the same offset, so that command is read and not lost to "unexpected EOF"."""
    m = _FINAL_BACKSLASH.search(text)
    if m is None:
        return text
    at = m.start(2) - 1
    return text[:at] + " " + text[at + 1:]


def _crlf_as_lf(text: str) -> str:
    """A script saved with CRLF line ends, read as the LF script its author meant, at the same offsets.

    Read as is, each CR would end the last word of its line (the value `bf16` plus a CR), and a backslash before
    CR LF would continue nothing. A continuation's CR swaps places with its backslash (space, backslash, LF); any
    other CR becomes an empty line, so a heredoc's closing word still stands alone on its line.
    """
    if "\r\n" not in text:
        return text
    return text.replace("\\\r\n", " \\\n").replace("\r\n", "\n\n")


# bashlex reads neither bash's `[[ ... ]]` test (`[[ -n $X ]]` fails alike) nor the C-style `for ((...))`, and a
# command holding one was lost whole: `[[ -f $CKPT ]] && python3 -m verl.trainer.main_ppo ...` on one line. A test
# never holds a setting, so it becomes `:` (the no-op command), and `for ((...))` becomes `for _ in _`, padded to the
# same length so every position stays exact. Only one-line forms with balanced quotes are masked; anything else
# is left for bashlex to refuse (and RLC002 to report).
_DOUBLE_BRACKET_TEST = re.compile(r"(?<![^\s;&|(!])\[\[(?=\s)[^\n]*?\s\]\](?=[\s;&|)]|$)", re.MULTILINE)
_C_STYLE_FOR = re.compile(r"(?<![^\s;&|(])for[ \t]*\(\((?:[^()\n]|\([^()\n]*\))*\)\)")


def _mask_tests(text: str) -> str:
    def blank(m: re.Match, word: str) -> str:
        s = m.group(0)
        if s.count('"') % 2 or s.count("'") % 2 or "`" in s:
            return s
        return word + " " * (len(s) - len(word))

    text = _DOUBLE_BRACKET_TEST.sub(lambda m: blank(m, ":"), text)
    return _C_STYLE_FOR.sub(lambda m: blank(m, "for _ in _"), text)


ARRAY_ASSIGNMENT = re.compile(r"(?m)^[ \t]*(?:(?:export|local|declare(?:[ \t]+-[aAgx]+)*)[ \t]+)?([A-Za-z_]\w*)\+?=\(")


def _mask_arrays(text: str, arrays: list) -> str:
    """Array assignments (`ARGS=(--bf16 --x 1)`, over several lines too), which bashlex refuses, recorded in
    `arrays` and blanked (newlines kept): their items become words where `"${ARGS[@]}"` is used."""
    if "=(" not in text:
        return text
    out = list(text)
    for m in ARRAY_ASSIGNMENT.finditer(text):
        end = _closing_paren(text, m.end())
        if end is None:
            continue
        append = text[m.end() - 3] == "+"
        arrays.append((m.group(1) + "+" * append, m.start(), m.end(), end))
        for k in range(m.start(), end + 1):
            if out[k] not in "\r\n":
                out[k] = " "
    return "".join(out)


def _closing_paren(text: str, i: int) -> int | None:
    quote = None
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\" and quote == '"':
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "\\":
            i += 1
        elif ch == "#" and text[i - 1] in " \t\n(":
            nl = text.find("\n", i)
            i = len(text) if nl < 0 else nl
            continue
        elif ch == ")":
            return i
        elif ch == "(":
            return None  # a nested `$(...)`: not a plain list of words
        i += 1
    return None


def _mask_heredocs(text: str, heredocs: list[tuple[int, int, int, int]]) -> str:
    """Heredoc bodies blanked (they are text, never commands) and quoted delimiters unquoted, for bashlex: it
    refuses `<<'EOF'` and `<<"EOF"` ("delimited by end-of-file"), which cost the whole command."""
    if not heredocs:
        return text
    out = list(text)
    for word_start, word_end, body_start, body_end in heredocs:
        word = "".join(ch for ch in text[word_start:word_end] if ch not in "'\"\\")
        out[word_start:word_end] = list(word.ljust(word_end - word_start))
        for k in range(body_start, body_end):
            if out[k] not in "\r\n":
                out[k] = " "
    return "".join(out)


def _blank_or_comment(chunk: str) -> bool:
    return all(not line.strip() or line.lstrip().startswith("#") for line in chunk.splitlines())


def syntax_error_location(exc: ShellSyntaxError) -> tuple[int, int, str]:
    return exc.line, exc.column, str(exc)


def _logical_line_starts(text: str, heredocs: list | None = None) -> list[int]:
    """Offsets where a logical line starts (plus len(text)): newlines outside quotes, continuations, heredocs.

    `heredocs`, if given, receives each heredoc's (delimiter word start, end, body start, body end)."""
    starts = [0]
    i, n = 0, len(text)
    quote: str | None = None
    quote_start = 0
    pending_heredocs: list[tuple[str, bool]] = []  # (delimiter, strip leading tabs)
    at_word_start = True
    while i < n:
        ch = text[i]
        if quote == "'":
            if ch == "'":
                quote = None
            i += 1
            continue
        if quote == '"':
            if ch == "\\":
                i += 2
                continue
            if ch == '"':
                quote = None
            i += 1
            continue
        if ch == "\\":
            i += 2  # an escaped character; `\` + newline continues the line
            at_word_start = False
            continue
        if ch in "'\"":
            quote, quote_start = ch, i
            at_word_start = False
            i += 1
            continue
        if ch == "#" and at_word_start:
            while i < n and text[i] != "\n":
                i += 1
            continue
        if ch == "<" and text.startswith("<<", i) and not text.startswith("<<<", i):
            m = re.match(r"<<(-?)\s*(?P<word>\\?(['\"]?)([A-Za-z_][\w\-]*)\3)", text[i:])
            if m:
                pending_heredocs.append((m.group(4), bool(m.group(1)), i + m.start("word"), i + m.end("word")))
                i += m.end()
                at_word_start = False
                continue
        if ch == "\n":
            i += 1
            for delimiter, strip_tabs, word_start, word_end in pending_heredocs:
                body_start = body_end = i
                while i < n:
                    end = text.find("\n", i)
                    end = n if end < 0 else end + 1
                    line = text[i:end].rstrip("\r\n")
                    body_end, i = i, end
                    if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                        break
                else:
                    body_end = n
                if heredocs is not None:
                    heredocs.append((word_start, word_end, body_start, body_end))
            pending_heredocs = []
            starts.append(i)
            at_word_start = True
            continue
        at_word_start = ch in " \t;&|()"
        i += 1
    if quote is not None:
        raise ShellSyntaxError(f"unterminated {quote} quote", quote_start)
    if starts[-1] != n:
        starts.append(n)
    return starts


# --- words ------------------------------------------------------------------------------------------------


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


def _word(raw: str, start: int) -> Word:
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
        return [_word(self.text[s:e], s) for _, start, end, _ in found[base:] for s, e in array_tokens(self.text, start, end)]

    def words_of(self, name: str, before: int) -> list[Word] | None:
        """The words `$name` (unquoted) splits into at offset `before`, at their offsets in the file; None if unknown."""
        last_assign = _past_arguments([a for a in self.assignments.get(name, ()) if a.word.start < before])
        last_doc = [h for h in self.heredocs.get(name, ()) if h.defined_at < before]
        a = last_assign[-1] if last_assign else None
        h = last_doc[-1] if last_doc else None
        if h is not None and (a is None or h.defined_at > a.word.start):
            return [_word(self.text[s:e], s) for s, e in body_tokens(self.text, h.body_start, h.body_end, h.quoted)]
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
        return _resolve_expansion(a.word, a.value_index, self, a.word.start, depth + 1, where)

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
        return _spliced(a.word.chars[a.value_index:], known)


def _resolve_expansion(word: Word, from_index: int, variables: Variables, before: int, depth: int,
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


# --- commands ---------------------------------------------------------------------------------------------


@dataclass
class Command:
    words: list[Word]
    assignments: list[Word]  # `VAR=value` before the command name
    start: int
    end: int
    guards: tuple = ()  # the test commands of the `if`/`elif` branches it runs in, outermost first


def _commands(script: ShellScript) -> list[Command]:
    out: list[Command] = []

    def visit(node, base: int, guards: tuple = ()) -> None:
        kind = getattr(node, "kind", "")
        if kind == "command":
            words, prefix = [], []
            for part in node.parts:
                if part.kind == "word":
                    words.append(_word(script.text[base + part.pos[0]: base + part.pos[1]], base + part.pos[0]))
                elif part.kind == "assignment" and not words:
                    prefix.append(_word(script.text[base + part.pos[0]: base + part.pos[1]], base + part.pos[0]))
            out.append(Command(words, prefix, base + node.pos[0], base + node.pos[1], guards))
        if kind == "if":
            _visit_if(node, base, guards)
            return
        for attr in ("parts", "list"):
            for child in getattr(node, attr, None) or ():
                visit(child, base, guards)
        for attr in ("command",):
            child = getattr(node, attr, None)
            if child is not None and hasattr(child, "kind"):
                visit(child, base, guards)

    def _visit_if(node, base: int, guards: tuple) -> None:
        # if TEST; then BODY; elif TEST; then BODY; else BODY; fi: a branch's body runs under its own test (the
        # `else` body and the tests themselves under the enclosing ones).
        test, branch_guard = None, None
        for part in node.parts:
            word = getattr(part, "word", None) if part.kind == "reservedword" else None
            if word in ("if", "elif"):
                test, branch_guard = "next", None
            elif word == "then":
                branch_guard = test if not isinstance(test, str) else None
            elif word in ("else", "fi"):
                branch_guard = None
            elif word is None:
                if test == "next":
                    start = len(out)
                    visit(part, base, guards)
                    tests = out[start:]
                    test = tests[0] if len(tests) == 1 else None  # one test command: `[ "$X" = y ]`
                else:
                    visit(part, base, guards + ((branch_guard,) if branch_guard is not None else ()))

    for base, node in script.nodes:
        visit(node, base)
    return sorted(out, key=lambda c: c.start)


def _never_runs(command: Command, variables: Variables) -> bool:
    """Whether an enclosing `if` test compares values the script sets and is false with them
    (`ARG INSTALL_FLASHATTN=false`, then `if [ "${INSTALL_FLASHATTN}" == "true" ]; then pip install flash-attn`):
    the command does not run as the file is written. Only `[ A = B ]`, `[ A == B ]`, `[ A != B ]` and `test ...`
    with both sides known."""
    for guard in command.guards:
        words = list(guard.words)
        if words and words[0].text == "[" and words[-1].text == "]":
            words = words[1:-1]
        elif words and words[0].text == "test":
            words = words[1:]
        else:
            continue
        if len(words) != 3 or words[1].text not in ("=", "==", "!="):
            continue
        left, right = (_known_value(w, variables) for w in (words[0], words[2]))
        if left is None or right is None:
            continue
        if (left == right) != (words[1].text != "!="):
            return True
    return False


def _known_value(word: Word, variables: Variables) -> str | None:
    if not word.dynamic:
        return word.text
    value, _, _ = _resolve_expansion(word, 0, variables, word.start, 0, "")
    return value


QUOTED_PARAM = re.compile(r'"\$(?:([A-Za-z_]\w*)|\{([A-Za-z_]\w*)\})"')


def _expanded_words(command: Command, variables: Variables) -> list[tuple[str, Word]]:
    """The command's words with a leading wrapper variable (`$PY` = "python3 -m") split into its words. A
    double-quoted `"$VAR"` is one word (never split); where part of its value is unknown
    (`FILE="flash_attn-2.8.0+cu12${ABI}-cp312-cp312-linux_x86_64.whl"`, `ABI=$(python -c ...)`), the known parts are
    filled in and the unknown ones keep their `$`."""
    out: list[tuple[str, Word]] = []
    for w in command.words:
        quoted = QUOTED_PARAM.fullmatch(w.raw)
        if quoted:
            value, _, _ = _resolve_expansion(w, 0, variables, w.start, 0, "")
            if value is None:
                value = variables.partial_value(quoted.group(1) or quoted.group(2), w.start)
            # A value with blanks stays unread: no program or requirement is one word with a blank in it. An empty
            # one too (`ARG TORCH_INDEX_URL=""`, tested by `if [ -n "$TORCH_INDEX_URL" ]` before it is used): the
            # word is what a later setting gives it, unknown here.
            out.append((w.text if not value or re.search(r"\s", value) else value, w))
            continue
        if w.dynamic and re.fullmatch(r"\$\{?[A-Za-z_]\w*\}?", w.raw):
            value, _, _ = _resolve_expansion(w, 0, variables, w.start, 0, "")
            if value is not None:
                try:
                    out.extend((part, w) for part in shlex.split(value))
                    continue
                except ValueError:
                    pass
        filled = _filled(w, variables) if w.dynamic else None
        out.append((filled if filled is not None else w.text, w))
    return out


def _filled(word: Word, variables: Variables) -> str | None:
    """A word that mixes text and plain `$VAR`/`${VAR}` (`"$WORK/flash_attn-${FA_VER}-cp311-...whl"`,
    `"flash-attn==${FA_VER}"`) with each variable whose value is known (or partly known) filled in and every other
    expansion left as written; None where nothing is filled or a value holds a blank (one word stays one word)."""
    known: dict[int, tuple[int, str]] = {}
    for body, start, end in word.params:
        if not re.fullmatch(r"[A-Za-z_]\w*", body):
            continue
        value, _, _ = variables.value_of(body, word.start)
        if value is None:
            value = variables.partial_value(body, word.start, 1)
        if value is None or re.search(r"\s", value) or not re.sub(r"\$\{?\w+\}?", "", value):
            continue  # unknown (`$1`) stays as written: `torch==${V}` is a pin by variable
        known[start] = (end, value)
    if not known:
        return None
    return _spliced(word.chars, known)


def _spliced(chars, known: dict[int, tuple[int, str]]) -> str:
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


def _entry_index(expanded: list[tuple[str, Word]], scanned: ScannedView) -> int | None:
    """Index (in `expanded`) of the word naming a training entry point that takes overrides, if the command runs one."""
    for i, (text, _) in enumerate(expanded):
        if text == "-m" and i + 1 < len(expanded):
            if scanned.runs_entry_module(expanded[i + 1][0]):
                return i + 1
        if text.endswith(".py") and scanned.runs_entry_script(text):
            return i
    return None


def entry_point_overrides(script: ShellScript, scanned: ScannedView) -> list[Setting] | None:
    """The Hydra overrides of the script's first command that runs a training entry point (the knowledge's
    `runs_entry_module` / `runs_entry_script`), in order, variables resolved where the script sets them (a value it
    cannot resolve is None); None when no command runs one. Read without positions: `rlcompat verify` replays them."""
    found = entry_commands(script, scanned)
    return found[0][2] if found else None


def entry_commands(script: ShellScript, scanned: ScannedView) -> list[tuple[str, Span, list[Setting]]]:
    """Every command of the script that runs a training entry point: (the module or script it runs, where that word
    is written, its Hydra overrides in order as `entry_point_overrides` reads them)."""
    index = LineIndex(script.text)  # where a value read from a variable was set, for messages
    return [(entry_text, Span(entry_word.start, entry_word.end),
             [s for s in (_override(w, variables, index) for w in words) if s is not None])
            for entry_text, entry_word, words, variables in _entry_command_words(script, scanned)]


def entry_arguments(script: ShellScript, scanned: ScannedView) -> list[list[Word]]:
    """The words after the entry point of each command `entry_commands` lists (flags, overrides, anything else)."""
    return [words for _, _, words, _ in _entry_command_words(script, scanned)]


def _entry_command_words(script: ShellScript, scanned: ScannedView):
    """(entry text, entry word, the words after it, the variables set before) of each command running an entry."""
    variables = Variables()
    for command in _commands(script):
        if not command.words:
            for a in command.assignments:
                variables.record(a)
            continue
        if command.words[0].text in ("export", "declare", "local", "readonly"):
            for w in command.words[1:]:
                variables.record(w)
            continue
        if command.words[0].text == ":":
            for w in command.words[1:]:
                variables.record_default(w)
            continue
        expanded = _expanded_words(command, variables)
        entry = _entry_index(expanded, scanned)
        if entry is None:
            continue
        entry_text, entry_word = expanded[entry]
        yield entry_text, entry_word, command.words[command.words.index(entry_word) + 1:], variables


# What `check` keeps of a script on its file (`scanned.derived(SCRIPT_KIND, text, ...)`): its parse, which a rule
# that reads the script's commands again (analysis/command_config.py) takes instead of parsing the text twice.
SCRIPT_KIND = "shell-script"


def check_targets(script: ShellScript, text: str, path: str, groups: Sequence[tuple[Sequence, object]], *,
                  scanned: ScannedView) -> list[list[Finding]]:
    """`check` for several (rules, target) groups (`rlcompat matrix`): one parse, the commands read per group."""
    return [check(script, text, path, rules, target, scanned=scanned) for rules, target in groups]


def check(script: ShellScript, text: str, path: str, rules: Sequence, target, _depth: int = 0, *,
          scanned: ScannedView, language: str = "shell") -> list[Finding]:
    """Findings of `rules` in the script: its own commands for the config rules that declare `language` (the file's:
    a Dockerfile's RUN lines are read as a script too), the Python it runs for the rules that declare Python (a
    script's rules include them, since its files embed Python: rlcompat/lang/languages.py)."""
    config_rules = [r for r in rules if isinstance(r, ConfigRule) and language in r.languages]
    python_rules = [r for r in rules if not isinstance(r, ConfigRule)]  # Python inside the script is read for these
    scanned.derived(SCRIPT_KIND, text, lambda: script)  # the parse, for rules that read the script's commands
    index = LineIndex(text)
    variables = Variables(text)
    for name, start, items_start, items_end in script.arrays:
        variables.record_array(name, start, items_start, items_end)
    views: list[ConfigView] = []
    exported: list[Setting] = []
    embedded: list[Embedded] = []
    for command in _commands(script):
        if command.guards and _never_runs(command, variables):
            continue
        if not command.words:
            for a in command.assignments:
                variables.record(a)
                if script.exported_spans and _is_exported(script, a):
                    env = _env_setting(a, variables, index)
                    if env is not None:
                        exported.append(env)
            continue
        head = command.words[0].text
        if head == ":":  # `: "${NAME:=value}"`: only its defaults matter
            for w in command.words[1:]:
                variables.record_default(w)
            continue
        if head in ("export", "declare", "local", "readonly", "typeset"):
            exporting = head == "export" or any(w.text.startswith("-") and "x" in w.text for w in command.words[1:])
            for w in command.words[1:]:
                variables.record(w)
                if exporting:
                    env = _env_setting(w, variables, index)
                    if env is not None:
                        exported.append(env)
            continue
        heredoc = heredoc_of(script.heredocs, text, command.start, command.end) if script.heredocs else None
        if head == "read" and heredoc is not None:
            name = read_target(command.words)
            if name:
                variables.record_heredoc(HeredocValue(name, command.start, heredoc[2], heredoc[3],
                                                      is_quoted_delimiter(text, heredoc[0], heredoc[1])))
            continue
        inner = _shell_code(command)
        if inner is not None:
            embedded.append(inner)
        if python_rules and PYTHON_COMMAND.match(head):
            block = _python_code(command, heredoc, text)
            if block is not None:
                embedded.append(block)
        view = _view(command, variables, scanned, text, index)
        view.image = script.image
        view.settings[:0] = exported + [e for e in map(lambda w: _env_setting(w, variables, index), command.assignments)
                                        if e is not None]
        views.append(view)
    if exported:
        views.append(ConfigView("env", list(exported), image=script.image))  # the container's software reads them
    # A command bashlex refused is not silently dropped: a view says where it is (RLC002 reads it), so a hazard in it
    # is not lost.
    views += [ConfigView("unread", anchor=_command_span(text, start, end), unread=why)
              for start, end, why in script.skipped]
    findings = scanned.run_config_rules(views, text, path, config_rules, target)
    for block in embedded:
        if block.language == "python":
            findings += check_python(block, path, rules, target, index, scanned)
        elif _depth < MAX_NESTED_SHELL:
            findings += _check_shell_block(block, path, rules, target, index, _depth + 1, scanned, script.image)
    return findings


def _is_exported(script: ShellScript, word: Word) -> bool:
    """Whether the bare assignment `word` is written where its front end says it is exported."""
    return any(start <= word.start and word.end <= end for start, end in script.exported_spans)


MAX_NESTED_SHELL = 3  # `bash -c "... bash -c '...'"`: deeper nesting is not followed


def _shell_code(command: Command) -> Embedded | None:
    """The script `bash -c CODE` / `sh -c CODE` runs (srun, docker and ssh wrap launches this way), or the one
    `sbatch --wrap CODE` submits."""
    words = command.words
    wrapped = _sbatch_wrap(words)
    if wrapped is not None:
        return wrapped
    for i, w in enumerate(words):
        if re.fullmatch(r"(?:.*/)?(?:ba)?sh", w.text) and i + 2 < len(words) + 1:
            rest = words[i + 1:]
            for j, opt in enumerate(rest):
                if opt.text == "-c" and j + 1 < len(rest) and "`" not in rest[j + 1].text:
                    code = rest[j + 1]
                    quote = code.raw[:1]
                    forbidden = "'" if quote == "'" else '"$`\\' if quote == '"' else " \t\n'\"$`\\;&|<>()"
                    return Embedded("shell", list(code.chars), forbidden)
                if not opt.text.startswith("-"):
                    break
    return None


def _sbatch_wrap(words: list[Word]) -> Embedded | None:
    """`sbatch [options] --wrap CODE` or `--wrap=CODE`: Slurm runs CODE as a shell script (`sbatch --help`)."""
    if not words or words[0].text.rsplit("/", 1)[-1] != "sbatch":
        return None
    for i, w in enumerate(words[1:], 1):
        if w.text == "--wrap" and i + 1 < len(words):
            return _code_of(words[i + 1], 0)
        if w.text.startswith("--wrap="):
            return _code_of(w, len("--wrap="))
    return None


def _code_of(word: Word, skip: int) -> Embedded | None:
    """The characters of `word` from its `skip`-th on, as shell code; None when it holds a command substitution in
    backquotes (its text is not the code that runs)."""
    if "`" in word.text:
        return None
    raw_at = word.chars[skip][1] - word.start if skip < len(word.chars) else len(word.raw)
    quote = word.raw[raw_at - 1:raw_at] if raw_at and word.raw[raw_at - 1] in "'\"" else ""
    forbidden = "'" if quote == "'" else '"$`\\' if quote == '"' else " \t\n'\"$`\\;&|<>()"
    return Embedded("shell", list(word.chars[skip:]), forbidden)


def _check_shell_block(block: Embedded, path: str, rules, target, index: LineIndex, depth: int,
                       scanned: ScannedView, image: str = "") -> list[Finding]:
    from rlcompat.lang.embedded import map_findings

    code = block.code
    try:
        script = parse(code)
    except ShellSyntaxError:
        return []
    script.image = image  # `sh -c CODE` runs in the same container
    return map_findings(block, check(script, code, path, rules, target, _depth=depth, scanned=scanned), index)


def _env_setting(w: Word, variables: Variables, index: LineIndex) -> Setting | None:
    """`NAME=value` exported or set before a command: an environment setting keyed by the variable's name."""
    m = re.match(r"^([A-Za-z_]\w*)=", w.text)
    if not m:
        return None
    name, vi = m.group(1), m.end()
    key_span = w.span_of(0, len(name)) or Span(w.start, w.end)
    if w.dynamic:
        value, span, where = _resolve_expansion(w, vi, variables, w.start, 0, "")
    else:
        value, span, where = w.text[vi:], w.span_of(vi, len(w.chars)), ""
    return Setting(name, value, key_span, span, via=_where(where, index), origin="env", word_span=Span(w.start, w.end))


def _python_code(command: Command, heredoc, text: str) -> Embedded | None:
    """The Python a `python - <<EOF` heredoc or `python -c CODE` runs, as an embedded block."""
    words = command.words
    for i, w in enumerate(words[1:], 1):
        if w.text == "-c" and i + 1 < len(words):
            code = words[i + 1]
            if code.dynamic:
                return None
            quote = code.raw[:1]
            forbidden = "'" if quote == "'" else '"$`\\' if quote == '"' else " \t\n'\"$`\\;&|<>()"
            return Embedded("python", list(code.chars), forbidden)
        if w.text == "-m" or (not w.text.startswith("-") and w.text != "-"):
            return None  # a module or a script file: not code written here
    if heredoc is None:
        return None
    quoted = is_quoted_delimiter(text, heredoc[0], heredoc[1])
    body = [(text[k], k) for k in range(heredoc[2], heredoc[3])]
    return Embedded("python", body, "" if quoted else "$`\\")


def _command_span(text: str, start: int, end: int) -> Span:
    """A logical line (continuations included) without its indent, trailing blanks and comment: a finding on it
    starts at the command, and a suppression comment after its last line covers it."""
    chunk = text[start:end]
    body = _strip_trailing_comment(chunk).rstrip()
    lead = len(body) - len(body.lstrip())
    return Span(start + lead, start + max(lead, len(body)))


def _strip_trailing_comment(chunk: str) -> str:
    """`chunk` up to a `#` comment that starts a word outside quotes (the last line's), if any."""
    quote = None
    for i, ch in enumerate(chunk):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or chunk[i - 1] in " \t"):
            return chunk[:i]
    return chunk


def _view(command: Command, variables: Variables, scanned: ScannedView, text: str, index: LineIndex) -> ConfigView:
    command = Command(_split_variables(command.words, variables), command.assignments, command.start, command.end)
    expanded = _expanded_words(command, variables)
    entry = _entry_index(expanded, scanned)
    settings: list[Setting] = []
    last_override: Word | None = None
    if entry is not None:
        entry_word = expanded[entry][1]
        seen_entry = False
        for w in command.words:
            if w is entry_word:
                seen_entry = True
                continue
            if not seen_entry:
                continue
            setting = _override(w, variables, index)
            if setting is not None:
                settings.append(setting)
                last_override = w
    else:
        settings.extend(_other_overrides(command.words, variables, index, scanned.override_clis))
    settings.extend(_flags(command.words, variables, index, scanned.switches))
    anchor_word = expanded[entry][1] if entry is not None else command.words[0]
    view = ConfigView("command", settings, is_verl=entry is not None, anchor=Span(anchor_word.start, anchor_word.end),
                      command_words=tuple(t for t, _ in expanded),
                      word_spans=tuple(Span(w.start, w.end) for _, w in expanded))
    if entry is not None:
        view._adder = _adder(text, index, command, last_override or anchor_word)
    return view


def _other_overrides(words: list[Word], variables: Variables, index: LineIndex,
                     override_clis: frozenset[str]) -> list[Setting]:
    """`key=value` words after the program of a command that runs Python (a `*.py` script, `-m module`, a trainer
    CLI of `override_clis`, handed by the knowledge): other Hydra entry points' overrides. Words before the program
    (`torchrun --nnodes=1`) are not."""
    start = None
    for i, w in enumerate(words):
        text = w.text
        if text.endswith(".py") or (text == "-m" and i + 1 < len(words)) or text.rsplit("/", 1)[-1] in override_clis:
            start = i + (2 if text == "-m" else 1)
            break
    if start is None:
        return []
    out = []
    for w in words[start:]:
        if OVERRIDE.match(w.text) and not w.text.startswith("-") and re.match(r"^[+~]*[A-Za-z_][\w\-]*[.=/@]", w.text):
            setting = _override(w, variables, index)
            if setting is not None:
                out.append(setting)
    return out


def _split_variables(words: list[Word], variables: Variables) -> list[Word]:
    """Unquoted `$VAR` arguments holding several words (a heredoc read into a variable, `ARGS="--bf16 --x"`)
    replaced by those words at their offsets in the file. The first word (a wrapper like `$PY`) is kept."""
    out = words[:1]
    for w in words[1:]:
        a = ARRAY_USE.fullmatch(w.raw)
        items = variables.array_words(a.group(1), w.start) if a else None
        if items is not None:
            out.extend(items)
            continue
        m = SIMPLE_PARAM.fullmatch(w.raw)
        parts = variables.words_of(m.group(1) or m.group(2), w.start) if m else None
        if parts is not None and (len(parts) > 1 or variables.heredocs.get(m.group(1) or m.group(2))):
            out.extend(parts)
        else:
            out.append(w)
    return out


def _override(w: Word, variables: Variables, index: LineIndex) -> Setting | None:
    m = OVERRIDE.match(w.text)
    if not m or w.text.startswith("-"):
        return None
    prefix, key = m.group(1) or "", m.group(2)
    value_index = m.start(3)
    key_start = len(prefix)
    key_span = w.span_of(key_start, key_start + len(key)) or Span(w.start, w.end)
    if not w.dynamic:
        value = w.text[value_index:]
        return Setting(key, value, key_span, w.span_of(value_index, len(w.chars)), prefix=prefix,
                       word_span=Span(w.start, w.end), origin="hydra-override")
    value, span, where = _resolve_expansion(w, value_index, variables, w.start, 0, "")
    return Setting(key, value, key_span, span, via=_where(where, index), prefix=prefix, word_span=Span(w.start, w.end),
                   origin="hydra-override")


ARRAY_USE = re.compile(r'"?\$\{([A-Za-z_]\w*)\[[@*]\]\}"?')
FLAG = re.compile(r"^--[A-Za-z][\w.\-]*$")


def _flags(words: list[Word], variables: Variables, index: LineIndex, switches: frozenset[str]) -> list[Setting]:
    """Every `--long` flag of the command: `--flag=value`, `--flag value`, or a bare switch (value ""): after one of
    `switches` (flags that take no value) the next word is its value only when it is a boolean word."""
    out = []
    for i, w in enumerate(words):
        text = w.text
        name, _, inline = text.partition("=")
        if not FLAG.match(name) or "$" in name:
            continue
        key = flag_key(name)
        common = dict(flag=True, origin="flag", written=name)
        name_span = w.span_of(0, len(name)) or Span(w.start, w.end)
        if inline or text.endswith("="):
            vi = len(name) + 1
            if w.dynamic:
                value, span, where = _resolve_expansion(w, vi, variables, w.start, 0, "")
            else:
                value, span, where = text[vi:], w.span_of(vi, len(w.chars)), ""
            out.append(Setting(key, value, name_span, span, via=_where(where, index), word_span=Span(w.start, w.end),
                               **common))
            continue
        nxt = words[i + 1] if i + 1 < len(words) else None
        takes_value = nxt is not None and not nxt.text.startswith("-") and (
            key not in switches or nxt.text in BOOL_WORDS) and not POSITIONAL.search(nxt.text)
        if takes_value and not OVERRIDE.match(nxt.text):
            if nxt.dynamic:
                value, span, where = _resolve_expansion(nxt, 0, variables, nxt.start, 0, "")
            else:
                value, span, where = nxt.text, nxt.span_of(0, len(nxt.chars)), ""
            out.append(Setting(key, value, name_span, span, via=_where(where, index), word_span=Span(w.start, nxt.end),
                               **common))
        else:
            out.append(Setting(key, "", name_span, None, word_span=Span(w.start, w.end), switch=True, **common))
    return out


# A word after a flag that is the command's positional argument, not the flag's value: a script or config file.
POSITIONAL = re.compile(r"\.(py|sh|yaml|yml|json)$")


def _where(where: str, index: LineIndex) -> str:
    m = re.search(r"\{line:(\d+)\}", where)
    if m:
        return where.replace(m.group(0), str(index.position(int(m.group(1)))[0]))
    return where


def _adder(text: str, index: LineIndex, command: Command, after: Word):
    """Adds `key=value` after `after`, as the script writes overrides: on its own continued line or inline."""
    first_line = index.position(command.start)[0]
    line, _ = index.position(after.start)
    line_text = index.line_text(line)
    multiline = line > first_line or text[after.end:command.end].lstrip(" \t").startswith("\\")
    if multiline:
        indent = re.match(r"[ \t]*", line_text).group(0)
        if line == first_line:
            next_line = index.line_text(line + 1)
            indent = re.match(r"[ \t]*", next_line).group(0) or "    "

    line_end = text.find("\n", after.end)
    # The new continuation line ends as the script's lines do: a CRLF script stays CRLF.
    newline = "\r\n" if (text[line_end - 1] == "\r" if line_end > 0 else "\r\n" in text) else "\n"

    def add(key: str, value: str) -> Edit:
        word = f"{key}={_quote(value)}"
        if multiline:
            return Edit(after.end, after.end, f" \\{newline}{indent}{word}")
        return Edit(after.end, after.end, f" {word}")

    return add


def _quote(value: str) -> str:
    return value if re.fullmatch(r"[\w.+\-/:@,]+", value) else shlex.quote(value)
