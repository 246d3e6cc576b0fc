"""Launch scripts parsed with bashlex, one top-level command at a time (the shell front end's parser: lang/shell.py).

bashlex is a port of bash's own grammar and gives every word's position in the file, quotes included. It does
not implement everything (arithmetic `$((...))`, `case`, `[[ ... ]]`): the script is first split into logical lines
(quotes, `\\` continuations and heredoc bodies respected), the constructs it cannot read are masked at the same
length, and each command is parsed on its own, so a construct bashlex cannot read costs that command only, not the
file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import bashlex
import bashlex.errors

from rlcompat.lang.textpos import LineIndex


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
        if parts is None and j - i == 1 and _CASE_BLOCK.search(masked, start, lines[i][1]):
            parts, _ = _read_chunk(_blank_case_blocks(masked[start:lines[i][1]]))
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


# A whole `case ... esac` inside one logical line (a Dockerfile RUN joined by `\` continuations: AReaL v1.0.4's
# `case "$VARIANT" in ... esac && uv sync ...`): bashlex reads no `case`, so the block becomes a same-length `:` (a
# no-op) and the commands chained to it are read; what the arms run is not.
_CASE_BLOCK = re.compile(r"(?<![\w.-])case\s.*?(?<![\w.-])esac(?![\w.-])", re.DOTALL)


def _blank_case_blocks(line: str) -> str:
    # the `\` continuations stay: the blanked lines are still one command with what follows
    return _CASE_BLOCK.sub(lambda m: ":" + re.sub(r"\\\r?\n|[^\n]", _blank_but_continuation, m.group(0)[1:]), line)


def _blank_but_continuation(m: re.Match) -> str:
    return m.group(0) if m.group(0).startswith("\\") and len(m.group(0)) > 1 else " "


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
