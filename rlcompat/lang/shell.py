"""The shell front end: launch scripts parsed with bashlex, one top-level command at a time (lang/shellparse.py).

From each command come settings: Hydra overrides of a verl training command (`python3 -m
verl.trainer.main_ppo`, through `torchrun`, `ray job submit --`, or a wrapper variable like `$PY`) and
argparse-style flags of any command (`--bf16`, `--attn_implementation flash_attention_2`). Values from
variables (`dtype=$DTYPE`, `${DTYPE:-bfloat16}`) resolve to the assignment that sets them, which is where
a fix rewrites them.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Sequence

from rlcompat.lang.embedded import Embedded, check_python
from rlcompat.lang.scanned import ScannedView
from rlcompat.lang.settings import ConfigRule, ConfigView, Setting, Span, flag_key
# the parser; PARSE_ERRORS, parse and syntax_error_location are what the pipeline asks of every front end module
from rlcompat.lang.shellparse import (PARSE_ERRORS, ShellScript, ShellSyntaxError, parse,  # noqa: F401
                                      syntax_error_location)
from rlcompat.lang.shellvars import Variables, Word, resolve_expansion, spliced, word_at
from rlcompat.lang.shellwords import (PYTHON_COMMAND, SIMPLE_PARAM, HeredocValue, heredoc_of, is_quoted_delimiter,
                                      read_target)
from rlcompat.lang.written_files import check_written, heredoc_file
from rlcompat.findings import Edit, Finding
from rlcompat.lang.textpos import LineIndex

OVERRIDE = re.compile(r"^(\+\+|\+|~)?([A-Za-z_][\w\-]*(?:[./@][\w\-]+)*)=(.*)$", re.DOTALL)
BOOL_WORDS = {"true", "false", "True", "False", "TRUE", "FALSE", "1", "0", "yes", "no"}

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
                    words.append(word_at(script.text[base + part.pos[0]: base + part.pos[1]], base + part.pos[0]))
                elif part.kind == "assignment" and not words:
                    prefix.append(word_at(script.text[base + part.pos[0]: base + part.pos[1]], base + part.pos[0]))
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
        for part in _if_parts(node.parts):
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


def _if_parts(parts) -> list:
    """An `if` node's parts in order. bashlex hands the third and later branches of an `if`/`elif` chain as one
    reservedword node whose `word` is the list of their nodes (`elif`, test, `then`, body, and so on): spliced in, so
    that their commands are read (xtuner's run_rl.sh picks its rollout backend in a third branch)."""
    out = []
    for part in parts:
        word = getattr(part, "word", None) if getattr(part, "kind", "") == "reservedword" else None
        if isinstance(word, list):
            out.extend(_if_parts(word))
        else:
            out.append(part)
    return out


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
    value, _, _ = resolve_expansion(word, 0, variables, word.start, 0, "")
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
            value, _, _ = resolve_expansion(w, 0, variables, w.start, 0, "")
            if value is None:
                value = variables.partial_value(quoted.group(1) or quoted.group(2), w.start)
            # A value with blanks stays unread: no program or requirement is one word with a blank in it. An empty
            # one too (`ARG TORCH_INDEX_URL=""`, tested by `if [ -n "$TORCH_INDEX_URL" ]` before it is used): the
            # word is what a later setting gives it, unknown here.
            out.append((w.text if not value or re.search(r"\s", value) else value, w))
            continue
        if w.dynamic and re.fullmatch(r"\$\{?[A-Za-z_]\w*\}?", w.raw):
            value, _, _ = resolve_expansion(w, 0, variables, w.start, 0, "")
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
    return spliced(word.chars, known)


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
        written = heredoc_file(head, text, command.start, heredoc, is_quoted_delimiter(text, heredoc[0], heredoc[1])) \
            if heredoc is not None else None
        if written is not None:
            embedded.append(written)  # a config the run reads (`cat <<EOF > cfg.yaml`): checked as that file
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
        elif block.language != "shell":  # a config file a heredoc writes
            findings += check_written(block, path, rules, target, index, scanned)
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
        value, span, where = resolve_expansion(w, vi, variables, w.start, 0, "")
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
    value, span, where = resolve_expansion(w, value_index, variables, w.start, 0, "")
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
                value, span, where = resolve_expansion(w, vi, variables, w.start, 0, "")
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
                value, span, where = resolve_expansion(nxt, 0, variables, nxt.start, 0, "")
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
