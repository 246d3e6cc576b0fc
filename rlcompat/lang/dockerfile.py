"""Dockerfiles: base images (`FROM`), build variables (`ENV`, `ARG`), the `RUN` commands and the command the
container runs (`CMD`, `ENTRYPOINT`).

`RUN`, `CMD` and `ENTRYPOINT` bodies in shell form are shell code (Docker runs them with `/bin/sh -c`): the file
is blanked to spaces outside them (newlines kept) and the shell front end reads the rest as a script, so commands
keep their real offsets and a fix edits the Dockerfile itself, as for Markdown code blocks. The shell's rules judge
them as they judge the same command in a script (the file's code is shell code: rlcompat/lang/languages.py).
The exec form (`CMD ["python3", "-m", "x"]`, a JSON array) runs without a shell: its elements are the words
(lang/argv.py). In each build stage the last exec-form `ENTRYPOINT` is the program a `CMD` array's words are
passed to, so those two make one command; a `CMD` array alone is a command of its own (its program may be the base
image's `ENTRYPOINT`, which the file does not say).
`ENV`/`ARG` lines of the `KEY=value` form are kept too (without the keyword): to the shell they are assignments,
so `RUN pip install torch --index-url ${TORCH_INDEX}` resolves to the ARG's value, where a fix edits it. An `ENV`
(also the legacy `ENV KEY value`, read as `KEY=value` with the key moved beside the value) is the environment of the
stage's containers: the shell reads the stage's last ENV of each name as exported (ShellScript.exported_spans), ARG
only as a build-time variable. Each command knows the base image it runs in (ShellScript.image): a stage's FROM for
its exec-form commands, and for the shell-form code where the file has one stage. RUN's own options (`--mount=...`)
are not shell words. Likewise a
`FROM ${BASE_IMAGE}` whose ARG writes the whole reference: the image is read, and retagged, in the ARG's value; a FROM
reads only the ARGs declared before the first FROM (an ARG inside a stage is that stage's, as Docker scopes it).
A base image knows whether a RUN line (or a shell heredoc) of its stage installs torch itself (`BaseImage.own_torch`):
the stage then runs that torch, not the image's. Each RUN body's start is kept (`run_starts`): a new shell, in the
WORKDIR, so a `cd` of one RUN does not hold in the next.
A heredoc (`RUN <<EOF` or `RUN <<"EOF" bash -exu`, then the script's lines, then `EOF`) is read as the script it
hands a shell: its body lines are kept. The exec form (`RUN ["pip", "install", ...]`) and a heredoc handed to another
program (`RUN <<EOF python3`) are not read.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Sequence

from rlcompat.lang.scanned import ScannedView
from rlcompat.lang import embedded, shell
from rlcompat.lang.argv import Element, argv_block
from rlcompat.lang.declared import BaseImage, Declared, IndexUrl, Variable, run
from rlcompat.lang.requirements import logical_lines
from rlcompat.lang.settings import Span
from rlcompat.findings import Finding
from rlcompat.lang.textpos import LineIndex, blank_outside

PARSE_ERRORS = shell.PARSE_ERRORS
syntax_error_location = shell.syntax_error_location
INSTRUCTION = re.compile(r"^\s*(?P<op>[A-Za-z]+)\s+(?P<rest>.*)$", re.DOTALL)
# `KEY=value` pairs of ENV/ARG: the value may be quoted.
PAIR = re.compile(r"""(?P<key>[A-Za-z_]\w*)=(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)'|(?P<bare>\S*))""")
INDEX_VARIABLES = {"PIP_INDEX_URL": "index", "PIP_EXTRA_INDEX_URL": "extra", "UV_INDEX_URL": "index",
                   "UV_EXTRA_INDEX_URL": "extra", "PIP_FIND_LINKS": "links"}


# `COPY --from=cuda13 ...`, `RUN --mount=type=bind,from=builder,...`: the build stage (name or index) a file comes from
FROM_STAGE = re.compile(r"--(?:from=|mount=\S*?\bfrom=)([\w.-]+)")
# An install command whose words name torch itself (`pip install torch==2.9.1`, `uv pip install "torch==${V}+cu129"`,
# `conda install pytorch`): the stage installs its own torch.
TORCH_INSTALL = re.compile(r"(?:\bpip3?|\bconda|\bmamba)(?:\s+-\S+)*\s+install\b[^;&|\n]*?(?:^|[\s\"'])"
                           r"(?:torch|pytorch)(?:[=<>~!\s\"'\[]|$)")
RUN_OPTIONS = re.compile(r"(?:[ \t]*(?:\\\r?\n)?[ \t]*--[A-Za-z][\w-]*(?:=\S*)?(?=\s))+")
EXEC_WHY = "an exec-form array takes the fix only inside one element, as new elements or by removing whole ones"


@dataclass
class Dockerfile:
    group: Declared  # FROM, ENV and ARG of the whole file
    shell_view: str  # the file blanked outside RUN bodies and ENV/ARG assignments (what declared_pins reads)
    script: shell.ShellScript  # the shell code: RUN, and CMD/ENTRYPOINT in shell form (with the ENV/ARG assignments)
    launch_view: str = ""
    # exec-form CMD/ENTRYPOINT commands: each an argument list's shell line and its parse
    exec_commands: list[tuple[embedded.Embedded, shell.ShellScript]] = field(default_factory=list)
    # where each shell-form RUN body starts: a new shell, in the WORKDIR (a `cd` of an earlier RUN no longer holds)
    run_starts: tuple[int, ...] = ()


# `RUN <<EOF`, `RUN <<-"EOF" bash -exu -o pipefail`: the delimiter, then what reads the body (a shell, or nothing:
# the build's default shell).
HEREDOC = re.compile(r"""^\s*<<-?(?P<q>["']?)(?P<delim>[A-Za-z_]\w*)(?P=q)(?P<reader>[^\r\n]*)$""")
SHELL_READER = re.compile(r"^\s*(?:(?:/usr)?/bin/)?(?:ba|da)?sh(?:\s+-[A-Za-z-]+(?:\s+pipefail)?)*\s*$|^\s*$")


def parse(text: str) -> Dockerfile:
    group = Declared("dockerfile", anchor=Span(0, 0))
    keep: list[tuple[int, int]] = []
    body_end = -1
    launches: list[tuple[int, int]] = []  # CMD and ENTRYPOINT bodies in shell form
    stages: list[list[tuple[str, list[Element]]]] = [[]]  # per build stage: its exec-form CMD/ENTRYPOINT arrays
    env_spans: list[dict[str, tuple[int, int]]] = [{}]  # per build stage: where each ENV name is last set
    moved: list[tuple[int, str]] = []  # characters the shell views write where the file has others (legacy ENV)
    images: list[str] = [""]  # per build stage: its base image (`image:tag`), "" where not read
    # per FROM: its base reference (None where a variable in it is not known), its stage name, its image
    built: list[tuple[str | None, str, BaseImage | None]] = []
    copied: set[str] = set()  # the stages `--from=` names (lowercase: Docker's stage names ignore case)
    run_starts: list[int] = []
    bases: list[BaseImage | None] = [None]  # per build stage: its base image as read, None where not read
    global_args: GlobalArgs | None = None
    for start, line in logical_lines(text):
        if start < body_end or line.lstrip().startswith("#"):
            continue
        m = INSTRUCTION.match(line)
        if not m:
            continue
        op, rest, rest_at = m.group("op").upper(), m.group("rest"), start + m.start("rest")
        if op == "FROM":
            if global_args is None:  # the ARGs before the first FROM: the only ones a FROM line reads
                global_args = GlobalArgs(tuple(group.variables))
            known = len(group.images)
            _base_image(rest, rest_at, group, global_args)
            built.append(_stage(rest, group.images[-1] if len(group.images) > known else None, global_args))
            stages.append([])
            env_spans.append({})
            images.append(f"{group.images[-1].image}:{group.images[-1].tag}" if len(group.images) > known else "")
            bases.append(group.images[-1] if len(group.images) > known else None)
        elif op in ("ENV", "ARG"):
            _variables(rest, rest_at, group)
            if re.fullmatch(r"\s*(?:" + PAIR.pattern + r"\s*(?:\\\s*)?)+", rest):
                # `KEY=value ...` is also a shell assignment: RUN commands then resolve `$KEY` to it.
                keep.append((rest_at, start + len(line)))
                pairs = [(p.group("key"), rest_at + p.start(), rest_at + p.end()) for p in PAIR.finditer(rest)]
            else:
                pairs = _legacy_assignment(rest, rest_at, keep, moved)
            if op == "ENV":
                # Only the stage's last ENV of a name is what its containers get.
                env_spans[-1].update({key: (a, b) for key, a, b in pairs})
        elif op == "RUN" and (heredoc := HEREDOC.match(rest)) is not None:
            body_end = _heredoc(text, start + len(line), heredoc, keep)
            run_starts.append(start + len(line) + 1)
            if bases[-1] is not None and SHELL_READER.match(heredoc.group("reader")) and TORCH_INSTALL.search(
                    re.sub(r"\\\r?\n", " ", text[start + len(line):body_end])):
                bases[-1].own_torch = True
        elif op == "RUN" and not rest.lstrip().startswith(("[", "<<")):
            # RUN's own options (`--mount=type=secret,id=x`, `--network=none`) are Docker's, not the shell's words
            options = RUN_OPTIONS.match(rest)
            keep.append((rest_at + (options.end() if options else 0), start + len(line)))
            run_starts.append(rest_at)
            if bases[-1] is not None and TORCH_INSTALL.search(re.sub(r"\\\r?\n", " ", rest)):
                bases[-1].own_torch = True
        elif op in ("CMD", "ENTRYPOINT"):
            elements = _json_array(text, rest_at, start + len(line)) if rest.lstrip().startswith("[") else None
            if elements is not None:
                stages[-1].append((op, elements))
            elif not rest.lstrip().startswith("["):
                launches.append((rest_at, start + len(line)))
        if op in ("COPY", "ADD", "RUN"):
            copied.update(m.group(1).lower() for m in FROM_STAGE.finditer(rest))
    _mark_stage_use(built, copied)
    view = blank_outside(text, keep, moved)
    launch_view = blank_outside(text, keep + launches, moved) if launches else view
    commands = []
    for image, words in ((image, c) for image, stage in zip(images, stages) for c in _exec_commands(stage)):
        block = argv_block(words, escape=lambda _element, t: _json_text(t),
                           new_element=lambda after, word, words=words: _new_element(text, words, after, word),
                           why=EXEC_WHY)
        try:
            commands.append((block, shell.parse(block.code)))
        except shell.ShellSyntaxError:
            continue  # words the shell front end cannot read as one command: the command is not judged
        commands[-1][1].image = image  # the stage's base image runs its CMD/ENTRYPOINT
    script = shell.parse(launch_view)
    # The shell-form code of all stages is one script: it runs in the base image only where the file has one stage.
    script.image = images[1] if len(images) == 2 else ""
    # ENV is the environment of every later instruction and of the stage's containers: to the shell, an export.
    script.exported_spans = sorted(span for stage in env_spans for span in stage.values())
    return Dockerfile(group, view, script, launch_view, commands, tuple(run_starts))


# The value of the legacy `ENV KEY value` form when it is one shell word (quoted or not): the shell reads it as
# `KEY=value` once the key is moved next to it.
LEGACY = re.compile(r"""(?P<key>[A-Za-z_]\w*)[ \t]+(?P<value>(?:"[^"\n$`\\]*"|'[^'\n]*'|[^\s"'\\;&|<>()`$#])+)\s*""")


def _legacy_assignment(rest: str, at: int, keep: list[tuple[int, int]],
                       moved: list[tuple[int, str]]) -> list[tuple[str, int, int]]:
    """`ENV KEY value`: kept for the shell as `KEY=value` written over the gap, the key moved right so that the
    value keeps its offsets (a fix edits the value where the file writes it); [(key, start, end)] of the assignment
    as the shell reads it, or [] where the value is not one plain word (`ENV A b c` sets A to "b c")."""
    m = LEGACY.fullmatch(rest)
    if m is None:
        return []
    key, value_at = m.group("key"), at + m.start("value")
    start = value_at - 1 - len(key)
    moved.extend((start + i, ch) for i, ch in enumerate(key + "="))
    keep.append((start, at + m.end("value")))
    return [(key, start, at + m.end("value"))]


def _exec_commands(stage: list[tuple[str, list[Element]]]) -> list[list[Element]]:
    """The commands a stage's exec-form arrays make: each CMD after the stage's last ENTRYPOINT array (Docker passes
    CMD's words to it), that ENTRYPOINT alone where no CMD array follows it, a CMD array alone where none is set."""
    entry = next((elements for op, elements in reversed(stage) if op == "ENTRYPOINT"), None)
    cmds = [elements for op, elements in stage if op == "CMD" and elements]
    if entry:
        return [entry + c for c in cmds] or [entry]
    return cmds


def _new_element(text: str, words: list[Element], after: Element, word: str) -> str:
    """`word` as the element after `after`: on a continued line of its own, indented as `after`'s line, where the
    array already puts elements on several lines; else on the same line."""
    newline = "\r\n" if "\r\n" in text else "\n"
    at = next(i for i, w in enumerate(words) if w is after)
    between = text[words[at - 1].end:after.start] if at else ""
    if not re.search(r"\\[ \t]*\r?\n", between):  # `after` is not on a continued line of its array
        return ", " + json.dumps(word)
    line_start = text.rfind("\n", 0, after.start) + 1
    indent = re.match(r"[ \t]*", text[line_start:after.start]).group(0)
    return f", \\{newline}{indent}{json.dumps(word)}"


def _json_text(text: str) -> str | None:
    """`text` as it is written inside a JSON string; None for a line break (one element stays on its line)."""
    if "\n" in text or "\r" in text:
        return None
    return json.dumps(text, ensure_ascii=False)[1:-1]


JSON_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _json_array(text: str, start: int, end: int) -> list[Element] | None:
    """The strings of the JSON array written in text[start:end] (a logical line: `\\` continuations between
    elements), each character with its offset; None where it is not an array of strings (Docker then runs the text
    as a shell command, which fails: not a command rlcompat judges)."""
    i = start
    elements: list[Element] = []

    def blank(i: int) -> int:
        while i < end and (text[i] in " \t\r\n" or (text[i] == "\\" and text[i + 1:i + 2] in ("\n", "\r"))):
            i += 1
        return i

    i = blank(i)
    if i >= end or text[i] != "[":
        return None
    i = blank(i + 1)
    if i < end and text[i] == "]":
        return elements
    while i < end:
        if text[i] != '"':
            return None
        opening, i, chars, exact = i, i + 1, [], True
        while i < end and text[i] != '"':
            if text[i] == "\\":
                esc = text[i + 1:i + 2]
                if esc == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2:i + 6]):
                    chars.append((chr(int(text[i + 2:i + 6], 16)), i))
                    exact = False
                    i += 6
                    continue
                if esc not in JSON_ESCAPES:
                    return None
                chars.append((JSON_ESCAPES[esc], i))
                exact = False
                i += 2
                continue
            if text[i] in "\r\n":
                return None
            chars.append((text[i], i))
            i += 1
        if i >= end:
            return None
        elements.append(Element(chars, opening, i + 1, exact))
        i = blank(i + 1)
        if i < end and text[i] == "]":
            return elements if not text[blank(i + 1):end].strip() else None
        if i >= end or text[i] != ",":
            return None
        i = blank(i + 1)
    return None


def _heredoc(text: str, after: int, heredoc: re.Match, keep: list[tuple[int, int]]) -> int:
    """Keep the body of a heredoc a shell reads (the lines after `after` up to the delimiter's line); the offset where
    the instruction ends (the delimiter line's end, or the file's)."""
    first = text.find("\n", after)
    if first < 0:
        return len(text)
    end = re.compile(r"^[ \t]*" + re.escape(heredoc.group("delim")) + r"[ \t]*\r?$", re.M).search(text, first + 1)
    stop = end.start() if end else len(text)
    if SHELL_READER.match(heredoc.group("reader")):
        keep.append((first + 1, stop))
    return end.end() if end else len(text)


VARIABLE = re.compile(r"\$(?:\{(?P<braced>[A-Za-z_]\w*)(?::?-(?P<default>[^}]*))?\}|(?P<bare>[A-Za-z_]\w*))")


@dataclass(frozen=True)
class GlobalArgs:
    """The ARGs declared before the first FROM. Docker expands a FROM line's variables with these alone: an ARG
    declared inside a stage belongs to that stage's build, and a later FROM does not see it."""

    variables: tuple[Variable, ...]

    def variable(self, name: str) -> Variable | None:
        found = [v for v in self.variables if v.name == name]
        return found[-1] if found else None


def _expand(value: str, args: GlobalArgs, depth: int = 0, partial: bool = False) -> str | None:
    """`$NAME` / `${NAME}` / `${NAME:-default}` replaced by the global ARG values (which may use others in turn);
    None if one is unknown, or (`partial`) the unknown ones left empty."""
    unknown = False

    def one(m: re.Match) -> str:
        nonlocal unknown
        known = args.variable(m.group("braced") or m.group("bare"))
        inner = _expand(known.value, args, depth + 1) if known is not None and depth < 4 else None
        if inner is not None:
            return inner
        if m.group("default") is not None:
            return m.group("default")
        unknown = True
        return ""

    out = VARIABLE.sub(one, value)
    return None if unknown and not partial else out


def _base_image(rest: str, at: int, group: Declared, args: GlobalArgs) -> None:
    words = [(m.group(0), at + m.start()) for m in re.finditer(r"\S+", rest)]
    words = [w for w in words if not w[0].startswith("--")]
    if not words:
        return
    ref, start = words[0]
    literal = "$" not in ref
    whole = VARIABLE.fullmatch(ref)
    known = args.variable(whole.group("braced") or whole.group("bare")) if whole else None
    if known is not None and "$" not in known.value:
        # FROM ${BASE_IMAGE}: the reference is the ARG's value, read (and rewritten) where the ARG writes it
        ref, start, literal = known.value, known.span.start, True
    pieces: list[tuple[int, int, Span]] = []
    if not literal:
        # FROM nvidia/cuda:${CUDA_VERSION}-cudnn-devel-ubuntu${UBUNTU}: what is known is enough to read the CUDA, and
        # each part an ARG writes out is placed at that ARG's value.
        ref, pieces = _expand_placed(ref, args)
    ref = ref.split("@", 1)[0]
    image, colon, tag = ref.rpartition(":")
    if not colon or "/" in tag:
        return  # no tag (or a registry port): nothing to read
    # A tag built from variables is reported on the FROM reference (or the ARG that writes the part a rule reads:
    # BaseImage.written_at), and not rewritten there.
    span = Span(start + len(image) + 1, start + len(image) + 1 + len(tag)) if literal else Span(start, start + len(words[0][0]))
    shift = len(image) + 1
    placed = tuple((a - shift, b - shift, s) for a, b, s in pieces if a >= shift)
    group.images.append(BaseImage(image.lower(), tag, span, literal, placed))


def _stage(rest: str, image: BaseImage | None,
           args: GlobalArgs) -> tuple[str | None, str, BaseImage | None]:
    """(base reference, stage name, its image) of a FROM: `FROM builder AS cuda-trim` -> ("builder", "cuda-trim").
    The reference is read with the global ARG values (`FROM cuda${CUDA_VERSION}` -> "cuda12"); None where one
    of its variables has no known value (any stage may be its base)."""
    words = [w for w in rest.split() if not w.startswith("--")]
    name = words[2] if len(words) >= 3 and words[1].lower() == "as" else ""
    base = _expand(words[0], args) if words else ""
    return (base.lower() if base is not None else None), name.lower(), image


def _mark_stage_use(built: list[tuple[str | None, str, BaseImage | None]], copied: set[str]) -> None:
    """Mark the images of the stages that only `--from=` reads (BaseImage.copied_only: named or numbered there, not
    the last stage, and no later FROM builds on them) and of those nothing names (BaseImage.unreached)."""
    if any(base is None for base, _, _ in built):
        return  # a FROM whose reference is not known may build on any stage
    for i, (_, name, image) in enumerate(built[:-1]):
        names = {name, str(i)} - {""}
        if image is None or any(base in names for base, _, _ in built[i + 1:]):
            continue
        if names & copied:
            image.copied_only = True
        else:
            image.unreached = True


def _expand_placed(ref: str, args: GlobalArgs) -> tuple[str, list[tuple[int, int, Span]]]:
    """`ref` with its variables expanded (unknown ones left empty), and for each variable whose ARG/ENV value is
    written out (no `$` in it) where its text sits in the result and where the value is written."""
    out, pieces, at = [], [], 0
    for m in VARIABLE.finditer(ref):
        out.append(ref[at:m.start()])
        known = args.variable(m.group("braced") or m.group("bare"))
        if known is not None and "$" not in known.value:
            begin = sum(map(len, out))
            pieces.append((begin, begin + len(known.value), known.span))
            out.append(known.value)
        else:
            out.append(_expand(m.group(0), args, partial=True) or "")
        at = m.end()
    out.append(ref[at:])
    return "".join(out), pieces


def _variables(rest: str, at: int, group: Declared) -> None:
    pairs = list(PAIR.finditer(rest))
    if not pairs:
        # the legacy form `ENV KEY value with spaces`
        m = re.match(r"([A-Za-z_]\w*)\s+(\S.*?)\s*$", rest)
        if m:
            found = [(m.group(1), m.group(2).strip("\"'"), at + m.start(2) + (1 if m.group(2)[:1] in "\"'" else 0))]
        else:
            found = []
    else:
        found = []
        for p in pairs:
            which = "dq" if p.group("dq") is not None else "sq" if p.group("sq") is not None else "bare"
            found.append((p.group("key"), p.group(which), at + p.start(which)))
    for key, value, start in found:
        span = Span(start, start + len(value))
        m = VARIABLE.fullmatch(value)
        known = group.variable(m.group("braced") or m.group("bare")) if m else None
        if known is not None:
            # `ENV TORCH_CUDA_ARCH_LIST=$TORCH_CUDA_ARCH_LIST`: the value, and where to change it, are the ARG's.
            group.variables.append(Variable(key, known.value, known.span))
            continue
        group.variables.append(Variable(key, value, span))
        if key in INDEX_VARIABLES:
            for url in re.finditer(r"\S+", value):
                group.indexes.append(IndexUrl(url.group(0), INDEX_VARIABLES[key],
                                              Span(start + url.start(), start + url.end())))


def shell_blocks(dockerfile: Dockerfile) -> list[tuple[embedded.Embedded, shell.ShellScript]]:
    """The shell code the Dockerfile runs: its shell-form bodies (the file's own characters), then each exec-form
    command, with their parses."""
    view = dockerfile.launch_view or dockerfile.shell_view
    same = embedded.Embedded("shell", [(c, i) for i, c in enumerate(view)])
    return [(same, dockerfile.script), *dockerfile.exec_commands]


def check(dockerfile: Dockerfile, text: str, path: str, rules: Sequence, target, *,
          scanned: ScannedView) -> list[Finding]:
    findings = run([dockerfile.group], text, path, [r for r in rules if "dockerfile" in r.languages], target, scanned)
    index = LineIndex(text)  # reports quote the Dockerfile line as written
    # The shell-form code keeps the file's offsets: a block whose characters are the file's own, so its findings
    # are placed (and counted) as shell code's, as the exec-form commands' are.
    for block, script in shell_blocks(dockerfile):
        found = shell.check(script, block.code, path, rules, target, scanned=scanned)
        findings += embedded.map_findings(block, found, index)
    return findings
