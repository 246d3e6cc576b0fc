"""Dockerfiles: base images (`FROM`), build variables (`ENV`, `ARG`) and the `RUN` commands.

`RUN` bodies (shell form) go through the shell front end: the file is blanked to spaces outside them (newlines
kept), so commands keep their real offsets and a fix edits the Dockerfile itself, as for Markdown code blocks.
`ENV`/`ARG` lines of the `KEY=value` form are kept too (without the keyword): to the shell they are assignments,
so `RUN pip install torch --index-url ${TORCH_INDEX}` resolves to the ARG's value, where a fix edits it. Likewise a
`FROM ${BASE_IMAGE}` whose ARG writes the whole reference: the image is read, and retagged, in the ARG's value.
A heredoc (`RUN <<EOF` or `RUN <<"EOF" bash -exu`, then the script's lines, then `EOF`) is read as the script it
hands a shell: its body lines are kept. The exec form (`RUN ["pip", "install", ...]`) and a heredoc handed to another
program (`RUN <<EOF python3`) are not read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Sequence

from rlcompat.lang.scanned import ScannedView
from rlcompat.lang import shell
from rlcompat.lang.declared import BaseImage, Declared, IndexUrl, Variable, run
from rlcompat.lang.requirements import logical_lines
from rlcompat.lang.settings import Span
from rlcompat.findings import Finding
from rlcompat.pipeline.textpos import LineIndex

PARSE_ERRORS = shell.PARSE_ERRORS
syntax_error_location = shell.syntax_error_location
INSTRUCTION = re.compile(r"^\s*(?P<op>[A-Za-z]+)\s+(?P<rest>.*)$", re.DOTALL)
# `KEY=value` pairs of ENV/ARG: the value may be quoted.
PAIR = re.compile(r"""(?P<key>[A-Za-z_]\w*)=(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)'|(?P<bare>\S*))""")
INDEX_VARIABLES = {"PIP_INDEX_URL": "index", "PIP_EXTRA_INDEX_URL": "extra", "UV_INDEX_URL": "index",
                   "UV_EXTRA_INDEX_URL": "extra", "PIP_FIND_LINKS": "links"}


@dataclass
class Dockerfile:
    group: Declared  # FROM, ENV and ARG of the whole file
    shell_view: str  # the file blanked outside RUN bodies
    script: shell.ShellScript


# `RUN <<EOF`, `RUN <<-"EOF" bash -exu -o pipefail`: the delimiter, then what reads the body (a shell, or nothing:
# the build's default shell).
HEREDOC = re.compile(r"""^\s*<<-?(?P<q>["']?)(?P<delim>[A-Za-z_]\w*)(?P=q)(?P<reader>[^\r\n]*)$""")
SHELL_READER = re.compile(r"^\s*(?:(?:/usr)?/bin/)?(?:ba|da)?sh(?:\s+-[A-Za-z-]+(?:\s+pipefail)?)*\s*$|^\s*$")


def parse(text: str) -> Dockerfile:
    group = Declared("dockerfile", anchor=Span(0, 0))
    keep: list[tuple[int, int]] = []
    body_end = -1
    for start, line in logical_lines(text):
        if start < body_end or line.lstrip().startswith("#"):
            continue
        m = INSTRUCTION.match(line)
        if not m:
            continue
        op, rest, rest_at = m.group("op").upper(), m.group("rest"), start + m.start("rest")
        if op == "FROM":
            _base_image(rest, rest_at, group)
        elif op in ("ENV", "ARG"):
            _variables(rest, rest_at, group)
            if re.fullmatch(r"\s*(?:" + PAIR.pattern + r"\s*(?:\\\s*)?)+", rest):
                # `KEY=value ...` is also a shell assignment: RUN commands then resolve `$KEY` to it.
                keep.append((rest_at, start + len(line)))
        elif op == "RUN" and (heredoc := HEREDOC.match(rest)) is not None:
            body_end = _heredoc(text, start + len(line), heredoc, keep)
        elif op == "RUN" and not rest.lstrip().startswith(("[", "<<")):
            keep.append((rest_at, start + len(line)))
    view = _blank_outside(text, keep)
    return Dockerfile(group, view, shell.parse(view))


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


def _expand(value: str, group: Declared, depth: int = 0, partial: bool = False) -> str | None:
    """`$NAME` / `${NAME}` / `${NAME:-default}` replaced by the ARG/ENV values set before (which may use others in
    turn); None if one is unknown, or (`partial`) the unknown ones left empty."""
    unknown = False

    def one(m: re.Match) -> str:
        nonlocal unknown
        known = group.variable(m.group("braced") or m.group("bare"))
        inner = _expand(known.value, group, depth + 1) if known is not None and depth < 4 else None
        if inner is not None:
            return inner
        if m.group("default") is not None:
            return m.group("default")
        unknown = True
        return ""

    out = VARIABLE.sub(one, value)
    return None if unknown and not partial else out


def _base_image(rest: str, at: int, group: Declared) -> None:
    words = [(m.group(0), at + m.start()) for m in re.finditer(r"\S+", rest)]
    words = [w for w in words if not w[0].startswith("--")]
    if not words:
        return
    ref, start = words[0]
    literal = "$" not in ref
    whole = VARIABLE.fullmatch(ref)
    known = group.variable(whole.group("braced") or whole.group("bare")) if whole else None
    if known is not None and "$" not in known.value:
        # FROM ${BASE_IMAGE}: the reference is the ARG's value, read (and rewritten) where the ARG writes it
        ref, start, literal = known.value, known.span.start, True
    elif not literal:
        # FROM nvidia/cuda:${CUDA_VERSION}-cudnn-devel-ubuntu${UBUNTU}: what is known is enough to read the CUDA.
        ref = _expand(ref, group, partial=True)
        if ref is None:
            return
    ref = ref.split("@", 1)[0]
    image, colon, tag = ref.rpartition(":")
    if not colon or "/" in tag:
        return  # no tag (or a registry port): nothing to read
    # A tag built from variables is reported on the FROM reference, and not rewritten there.
    span = Span(start + len(image) + 1, start + len(image) + 1 + len(tag)) if literal else Span(start, start + len(words[0][0]))
    group.images.append(BaseImage(image.lower(), tag, span, literal))


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


def _blank_outside(text: str, keep: list[tuple[int, int]]) -> str:
    mask = bytearray(len(text))
    for a, b in keep:
        mask[a:b] = b"\x01" * (b - a)
    return "".join(ch if mask[i] or ch in "\r\n" else " " for i, ch in enumerate(text))


def check(dockerfile: Dockerfile, text: str, path: str, rules: Sequence, target, *,
          scanned: ScannedView) -> list[Finding]:
    findings = run([dockerfile.group], text, path, rules, target, scanned)
    from_runs = shell.check(dockerfile.script, dockerfile.shell_view, path, rules, target, scanned=scanned,
                            language="dockerfile")
    index = LineIndex(text)  # reports quote the Dockerfile line as written
    return findings + [replace(f, source_line=index.line_text(f.location.line)) for f in from_runs]
