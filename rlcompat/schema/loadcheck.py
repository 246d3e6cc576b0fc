"""The load check: does a fixed launch script's config still load with the tree's own loader?

For each command of a shell script that runs a Hydra entry point of its tree (rlcompat/schema/tree.py), the tree's
config directory is composed with the command's overrides, before and after the fix, by `hydra.compose` and
`OmegaConf.resolve` in a child process of the interpreter running rlcompat: offline, on the CPU, importing only
hydra-core and omegaconf (never torch, verl or ray, never the tree's code). Where the entry point also merges the
config into a structured dataclass, the merge's check is the static one of the fix gate (rlcompat/schema/gate.py):
importing the tree's dataclasses would run its code.

Shell variables (`$MODEL_PATH`, `${N}`, `$(...)`) become a placeholder word: a load check needs the keys, not their
values, and the same placeholder stands on both sides. Arithmetic (`$((a + b))`) is worked out where it uses only
integer literals and variables the script assigned such values earlier (rlcompat/lang/shellarith.py; nothing is
run); any other is a placeholder too, and the command says why (`Command.unread`): verify's load check leaves such a
command unjudged: a placeholder inside `$((...))` would make a word Hydra's parser refuses. A command
that did not load before the fix cannot show what the fix did: it is reported as such, never as broken by the fix.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass

from rlcompat.schema import SchemaUnread

PLACEHOLDER = "X"
_STOP = {"|", "||", "&&", ";", "&", "2>&1"}
_TIMEOUT_S = 120

# Run by the child interpreter: reads {"jobs": [[config_dir, config_name, overrides], ...]} on stdin, prints one
# answer per job (null: it loads; else the error's type and first line), or {"unavailable": why}.
_CHILD = r"""
import json, sys
try:
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf
except Exception as exc:
    print(json.dumps({"unavailable": f"{type(exc).__name__}: {exc}"}))
    raise SystemExit(0)
out = []
for config_dir, name, overrides in json.load(sys.stdin)["jobs"]:
    try:
        with initialize_config_dir(config_dir=config_dir, version_base=None):
            OmegaConf.resolve(compose(config_name=name, overrides=overrides))
        out.append(None)
    except Exception as exc:
        text = str(exc).strip()
        out.append((type(exc).__name__ + ": " + (text.splitlines()[0] if text else ""))[:300])
print(json.dumps({"errors": out}))
"""


@dataclass(frozen=True)
class Command:
    start: int  # offsets of the command in the script's text
    end: int
    words: tuple[str, ...]
    unread: str = ""  # why a `$((...))` of it has no known value (it stands as the placeholder), or ""


@dataclass(frozen=True)
class Broken:
    line: int  # 1-based line of the command in the text before the fix
    start: int
    end: int
    error: str  # how loading fails after the fix
    config: str  # the config directory as shown


@dataclass
class Verdict:
    ran: bool = False  # whether any command was composed
    not_run: str = ""  # why the check could not run (hydra not importable, a config not readable)
    broken: list[Broken] | None = None  # commands that loaded before the fix and fail after it
    failed_before: int = 0  # commands that did not load before the fix either
    checked: int = 0
    parsed: int = 0  # of `checked`, those parsed with the tree's dataclass parser (the others composed by Hydra)


def commands(text: str) -> list[Command]:
    """The commands of a shell script, one per logical line (continuations and multi-line quotes joined, comment
    lines dropped), as words with variables replaced by a placeholder and arithmetic by its value where known;
    words end at a pipe or command separator."""
    out: list[Command] = []
    integers: dict[str, int | str] = {}  # name -> the integer assigned to it, or why it has none
    current, start, pos = "", None, 0

    def emit(begin: int, finish: int) -> None:
        line, unread = _arithmetic(current, integers)
        _assign(current, integers)
        words = _words(line)
        if words:
            out.append(Command(begin, finish, words, unread))

    for raw in text.splitlines(keepends=True):
        line_start, pos = pos, pos + len(raw)
        body = raw.rstrip("\r\n")
        if start is None and body.lstrip().startswith("#"):
            continue
        if start is None:
            start = line_start
        if body.rstrip().endswith("\\"):
            current += body.rstrip()[:-1] + " "
            continue
        if (current + body).count("'") % 2:
            current += body + " "
            continue
        current += body
        emit(start, line_start + len(body))
        current, start = "", None
    if current and start is not None:
        emit(start, len(text))
    return out


_ASSIGNED = re.compile(r"^\s*(?:(?:export|declare|local|readonly)\s+(?:-\w+\s+)*)?([A-Za-z_]\w*)=(.*?)\s*$")
# Other ways a line sets a name: a loop variable, `read`, `+=`, `((n++))`, `let`.
_SET_OTHERWISE = re.compile(r"\bfor\s+([A-Za-z_]\w*)\s+in\b|([A-Za-z_]\w*)\+="
                            r"|\(\(\s*([A-Za-z_]\w*)\s*(?:\+\+|--|[-+*/%]?=[^=])"
                            r"|\blet\s+([A-Za-z_]\w*)")


def _assign(line: str, integers: dict[str, int | str]) -> None:
    """Record what the logical `line` assigns: an integer literal or a known arithmetic value, else why not."""
    from rlcompat.lang.shellarith import Unknown, evaluate

    for m in _SET_OTHERWISE.finditer(line):
        name = next(g for g in m.groups() if g)
        integers[name] = f"`{name}` is set by `{m.group(0).strip()}`, which the load check does not follow"
    if line.lstrip().startswith("read ") or " read " in line:
        for name in re.findall(r"\b([A-Za-z_]\w*)\b", line.split("read", 1)[1]):
            integers[name] = f"`{name}` may be set by `read`"
    m = _ASSIGNED.match(line)
    if not m:
        for name in re.findall(r"(?:^|[\s;&|(])([A-Za-z_]\w*)=", line):  # `if ...; then n=2; fi`, `n=2 cmd`
            integers[name] = f"`{name}` is set inside a compound line, which the load check does not follow"
        return
    name, value = m.group(1), m.group(2)
    if len(value) > 1 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    expansion = re.fullmatch(r"\$\(\((.*)\)\)", value)
    try:
        if re.fullmatch(r"\d+", value):
            found: int | str = int(value)
        elif expansion:
            found = evaluate(expansion.group(1), integers)
        else:
            found = f"`{name}` is set to `{value[:40]}`, not an integer literal"
    except Unknown as exc:
        found = f"`{name}` is set by arithmetic with no known value ({exc})"
    before = integers.get(name)
    if isinstance(before, int) and isinstance(found, int) and before != found:
        # a line reader cannot tell which of two assignments a branch made
        found = f"`{name}` is assigned {before} and {found} in the script"
    integers[name] = found


def _arithmetic(line: str, integers: dict[str, int | str]) -> tuple[str, str]:
    """`line` with each `$((...))` replaced by its value, or by the placeholder where it has none, and why not."""
    from rlcompat.lang.shellarith import Unknown, evaluate

    out, unread, i = [], "", 0
    while True:
        at = line.find("$((", i)
        if at < 0:
            out.append(line[i:])
            return "".join(out), unread
        depth, j = 0, at + 1
        while j < len(line):
            depth += {"(": 1, ")": -1}.get(line[j], 0)
            if depth == 0:
                break
            j += 1
        out.append(line[i:at])
        inner = line[at + 3:j - 1] if depth == 0 and line[j - 1] == ")" else None
        try:
            if inner is None:
                raise Unknown("it is not closed on its line")
            out.append(str(evaluate(inner, integers)))
        except Unknown as exc:
            out.append(PLACEHOLDER)
            unread = unread or f"`{line[at:j + 1].strip()[:60]}` has no known value here: {exc}"
        i = j + 1


def _words(line: str) -> tuple[str, ...]:
    line = line.replace('"$@"', "").replace("$@", "")
    line = re.sub(r"\$\([^()]*\)", PLACEHOLDER, line)
    line = re.sub(r"\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*", PLACEHOLDER, line)
    try:
        tokens = shlex.split(line, comments=True)
    except ValueError:
        return ()
    out = []
    for token in tokens:
        if token in _STOP or token.startswith((">", "2>", "1>")):
            break
        out.append(token)
    return tuple(out)


def compose_errors(jobs: list[tuple[str, str, list[str]]], python: str | None = None) -> list[str | None] | str:
    """One answer per (config_dir, config_name, overrides): None where it loads, else the error; or one string
    saying why no job could run (hydra-core or omegaconf not importable by the interpreter)."""
    python = python or sys.executable
    try:
        with tempfile.TemporaryDirectory(prefix="rlcompat-load-") as cwd:
            done = subprocess.run([python, "-I", "-c", _CHILD], input=json.dumps({"jobs": jobs}), capture_output=True,
                                  text=True, cwd=cwd, timeout=_TIMEOUT_S,
                                  env={**os.environ, "HYDRA_FULL_ERROR": "0", "PYTHONNOUSERSITE": "1"})
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the child interpreter {python} did not answer ({type(exc).__name__})"
    try:
        answer = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return f"the child interpreter {python} failed: {tail[:200]}"
    if "unavailable" in answer:
        return f"hydra-core/omegaconf are not importable by {python} ({answer['unavailable']})"
    return answer["errors"]


# Files that hold shell code in another syntax (a notebook's cells, a Dockerfile's commands, a YAML job spec's).
HOLDING_LANGUAGES = ("notebook", "dockerfile", "jobspec")


def _shell_text(text: str, language: str) -> tuple[str, list[int] | None]:
    """The shell of a file as text, and where it is held in another syntax the file offset of each character (a
    Dockerfile's or a job spec's pieces of shell code one after another, a line each)."""
    if language not in HOLDING_LANGUAGES:
        return text, None
    if language == "notebook":
        from rlcompat.lang import notebook

        chars = notebook.shell_code(text)
    else:
        from rlcompat.lang.frontends import frontend

        fe = frontend(language)
        chars = []
        for block, _ in fe.shell_blocks(fe.parse(text)):
            if block.chars:
                chars += block.chars + [("\n", block.chars[-1][1])]
    return "".join(c for c, _ in chars), [o for _, o in chars]


def _shell_errors() -> tuple:
    """What reading a holding file's shell can raise where the file does not parse."""
    from rlcompat.lang import dockerfile, jobspec, notebook

    return notebook.PARSE_ERRORS + dockerfile.PARSE_ERRORS + jobspec.PARSE_ERRORS


def check_fixed(path: str, before: str, after: str, root: str, package_dir: str | None,
                python: str | None = None, language: str = "shell") -> Verdict:
    """Compose every Hydra command of the script (or notebook: its `!` lines and shell cells) at `path`, in the
    tree at `root`, before and after the fix. `Broken` offsets and lines are the file's."""
    from rlcompat.schema.tree import hydra_config_of

    verdict = Verdict(broken=[])
    try:
        (before_code, offsets), (after_code, _) = _shell_text(before, language), _shell_text(after, language)
    except _shell_errors() as exc:  # a file that does not parse: nothing to compose, said so
        verdict.not_run = f"its shell could not be read ({type(exc).__name__})"
        return verdict
    old, new = commands(before_code), commands(after_code)
    if len(old) != len(new):
        verdict.not_run = "the fix changed the number of commands, so they cannot be compared one by one"
        return verdict
    script_dir = os.path.dirname(os.path.abspath(path))
    jobs, places = [], []
    parsed: list[tuple[Command, str, str]] = []  # (command, parser as shown, its error after the fix)
    for a, b in zip(old, new):
        if a.words == b.words:
            continue
        try:
            config = hydra_config_of(root, package_dir, a.words, script_dir)
        except SchemaUnread as unread:
            verdict.not_run = str(unread)
            continue
        if config is None:
            parser = dataclass_parser(root, a.words, script_dir)
            if parser is not None:
                verdict.ran, verdict.checked, verdict.parsed = True, verdict.checked + 1, verdict.parsed + 1
                was, now = parse_error(parser, a.words), parse_error(parser, b.words)
                if was is not None:
                    verdict.failed_before += 1
                elif now is not None:
                    parsed.append((a, parser.shown, now))
            continue
        config_dir, name, overrides = config
        fixed = hydra_config_of(root, package_dir, b.words, script_dir)
        jobs.append((config_dir, name, list(overrides)))
        jobs.append((config_dir, name, list(fixed[2]) if fixed else []))
        places.append((a, config_dir))
    for command, shown, error in parsed:
        start, end = command.start, command.end
        if offsets is not None and offsets:
            start, end = offsets[min(start, len(offsets) - 1)], offsets[min(max(end - 1, 0), len(offsets) - 1)] + 1
        verdict.broken.append(Broken(before.count("\n", 0, start) + 1, start, end, error, shown))
    if not jobs:
        return verdict
    answers = compose_errors(jobs, python)
    if isinstance(answers, str):
        verdict.not_run = answers
        return verdict
    verdict.ran = True
    for i, (command, config_dir) in enumerate(places):
        was, now = answers[2 * i], answers[2 * i + 1]
        verdict.checked += 1
        if was is not None:
            verdict.failed_before += 1
        elif now is not None:
            shown = "./" + os.path.relpath(config_dir, root).replace(os.sep, "/")
            start, end = command.start, command.end
            if offsets is not None and offsets:
                start, end = offsets[min(start, len(offsets) - 1)], offsets[min(max(end - 1, 0), len(offsets) - 1)] + 1
            verdict.broken.append(Broken(before.count("\n", 0, start) + 1, start, end, now, shown))
    return verdict


@dataclass(frozen=True)
class DataclassParser:
    """The options an entry point's HfArgumentParser/TrlParser takes, from the tree's dataclasses."""

    shown: str  # "./train.py (HfArgumentParser over ModelArguments, TrainArguments)"
    entry: str  # the entry point's file name as commands name it
    fields: dict  # field name -> its annotation as written
    complete: bool  # False where a dataclass comes from outside the tree: an unknown option may be one of its


def dataclass_parser(root: str, words: tuple[str, ...], script_dir: str) -> DataclassParser | None:
    """The dataclass parser of the tree's entry point a command runs, or None (no such entry point or parser)."""
    from rlcompat.schema.structured import each_parser_class, field_defaults
    from rlcompat.schema.tree import entry_facts, module_file, read_command

    launch = read_command(words)
    path = module_file(root, None, launch, script_dir) if launch is not None else None
    if path is None:
        return None
    try:
        facts = entry_facts(path)
    except SchemaUnread:
        return None
    if not facts.parser_classes or facts.has_hydra:
        return None
    read, complete = each_parser_class(facts.parser_classes, lambda name: field_defaults(root, path, name))
    fields = {f.name: f.annotation for found in read.values() for f in found}
    shown = "./" + os.path.relpath(path, root).replace(os.sep, "/")
    return DataclassParser(f"{shown} (parser over {', '.join(read) or 'no dataclass of the tree'})",
                           launch.module or launch.script, fields, complete)


def parse_error(parser: DataclassParser, words: tuple[str, ...]) -> str | None:
    """What the parser refuses in the command's options after its entry point, statically, worded as argparse does:
    an option no field declares (where the dataclasses are all the tree's), a value a bool or Literal field does
    not take [S156]; None where nothing is refused. Values that are placeholders (shell variables) are not judged."""
    from rlcompat.schema.structured import parses

    rest = list(words[words.index(parser.entry) + 1:]) if parser.entry in words else []
    i = 0
    while i < len(rest):
        word = rest[i]
        i += 1
        if not word.startswith("--"):
            continue
        option, eq, value = word.partition("=")
        name = option[2:].replace("-", "_")
        if name.startswith("no_") and name[3:] in parser.fields and name not in parser.fields:
            continue  # `--no_<field>` of a bool field: takes no value
        if name not in parser.fields:
            if parser.complete and name not in ("config", "help"):
                return f"error: unrecognized arguments: {option}"
            continue
        if not eq and i < len(rest) and not rest[i].startswith("--"):
            value, i = rest[i], i + 1
        elif not eq:
            continue  # a bare `--flag`: a bool field's const True
        if value != PLACEHOLDER and parses(parser.fields[name], value) is False:
            return f"error: argument {option}: invalid value: {value!r} ({name}: {parser.fields[name]})"
    return None
