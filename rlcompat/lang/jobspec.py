"""Shell inside YAML job specs: what a YAML file runs, found by the file's structure (its keys and their shapes),
never by its name alone. A YAML file whose top-level keys have one of these shapes is read as a job spec
(`jobspec`, lang/languages.py: YAML's `refine`); its shell code goes to the rules of shell code, as the same commands
in a script would, and the file is not read as a run's config.

- SkyPilot tasks: top-level `run:` and `setup:` strings beside another task key (`resources`, `num_nodes`, `envs`,
  `file_mounts`, `workdir`, `secrets`, or each other);
- GitHub Actions: each step's `run:` under `jobs.<job>.steps` (a workflow) or `runs.steps` (a composite action),
  unless its `shell:` is not a POSIX shell (`pwsh`, `powershell`, `cmd`, `python`);
- KubeRay `RayJob`: `spec.entrypoint` (a document whose `kind` is RayJob, or whose `spec` holds `rayClusterSpec`);
- docker-compose: each service's `command:` and `entrypoint:` (`services.<name>` holding `image` or `build`);
- Kubernetes: each container (`containers`/`initContainers` items holding `image`, at any depth: a Pod, a Job's
  template, a RayCluster's head and workers) runs `command:` followed by `args:`.

A container's or service's `image:` goes with its command (ShellScript.image): the software that runs it.
A string value is shell code (a block scalar `|`/`>`, or a one-line scalar); a list value is an argument list, no
shell (lang/argv.py; a compose list, a container's command and args). Each becomes an embedded block
(lang/embedded.py) whose characters keep their offsets in the YAML file, so findings sit at the YAML file's lines and
fixes edit it: inside a literal block scalar a fix's new lines get the block's indentation, everything else in the
file stays as it is. Where a scalar's characters are not its value as written (escapes, folding that changes the
text), its findings stay without a fix, and say why.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Sequence

from rlcompat.findings import Finding
from rlcompat.lang import embedded, shell, yaml as yaml_lang
from rlcompat.lang.argv import PLAIN_WORD, Element, argv_block
from rlcompat.lang.embedded import Embedded
from rlcompat.lang.scanned import ScannedView
from rlcompat.lang.textpos import LineIndex

# A file holds a job spec only where one of these keys starts a line (so a config is not composed twice).
_KEYS = re.compile(r"^[ \t-]*(?:run|setup|entrypoint|command|args)[ \t]*:", re.MULTILINE)
_SKYPILOT_KEYS = {"resources", "num_nodes", "envs", "file_mounts", "workdir", "secrets", "setup", "run"}
_NOT_SHELL = {"pwsh", "powershell", "cmd", "python"}
MAX_DEPTH = 40  # containers are looked for this deep (a Pod spec inside a Job inside a RayCluster is about 10)
SCALAR_WHY = "the YAML scalar's text is not its value character for character (escapes or folded lines)"
LIST_WHY = "a YAML argument list takes the fix only inside one element, as new elements or by removing whole ones"


PARSE_ERRORS = yaml_lang.PARSE_ERRORS + shell.PARSE_ERRORS


def syntax_error_location(exc) -> tuple[int, int, str]:
    """Where the YAML, or the shell code in it (as a script's error is reported), stops being readable."""
    if isinstance(exc, yaml_lang.PARSE_ERRORS):
        return yaml_lang.syntax_error_location(exc)
    return exc.line, exc.column, f"{exc} (in the shell code of a job spec)"


def parse(text: str) -> list["JobBlock"]:
    yaml_lang.parse(text)  # a file that is not YAML is reported as YAML reports it
    return blocks(text)


def shell_blocks(jobs: list["JobBlock"]) -> list[tuple[Embedded, shell.ShellScript]]:
    """The shell code the job spec runs, with its parses (`parse` gives `jobs`)."""
    return [(job.block, job.script) for job in jobs]


def check(jobs: list["JobBlock"], text: str, path: str, rules: Sequence, target, *,
          scanned: ScannedView) -> list[Finding]:
    return check_targets(jobs, text, path, [(rules, target)], scanned=scanned)[0]


def check_targets(jobs: list["JobBlock"], text: str, path: str, groups, *, scanned: ScannedView) -> list[list[Finding]]:
    """Each group's findings in the file's shell code, placed at the YAML file's lines."""
    index = LineIndex(text)
    out = []
    for rules, target in groups:
        found: list[Finding] = []
        for job in jobs:
            code_found = shell.check(job.script, job.block.code, path, rules, target, scanned=scanned)
            found += embedded.map_findings(job.block, code_found, index)
        out.append(found)
    return out


@dataclass
class JobBlock:
    what: str  # "skypilot run", "github-actions step", "kubernetes container", ...
    block: Embedded
    script: shell.ShellScript


def blocks(text: str) -> list[JobBlock]:
    """The shell code and argument lists the YAML `text`'s job specs run; [] for any other YAML."""
    if not _KEYS.search(text):
        return []
    try:
        roots = _compose(text)
    except Exception:  # the YAML front end reports a file that does not parse; a composer that trips reads nothing
        return []
    index = LineIndex(text)
    found: list[tuple[str, Embedded] | tuple[str, Embedded, str]] = []
    for root in roots:
        if _kind(root) == "mapping":
            _specs(root, text, index, found)
    out = []
    for what, block, *image in found:
        if not block.chars:
            continue
        try:
            script = shell.parse(block.code)
            script.image = image[0] if image else ""
            out.append(JobBlock(what, block, script))
        except shell.ShellSyntaxError as exc:
            # as a script that does not parse: the file's error, where the shell stopped, at the YAML file's line
            exc.offset = block.file_offset(exc.offset)
            exc.line, column0 = index.position(exc.offset)
            exc.column = column0 + 1
            raise
    return out


def _compose(text: str) -> list:
    try:
        import yaml

        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        return [node for node in yaml.compose_all(text, Loader=loader) if node is not None]
    except ImportError:
        from ruamel.yaml import YAML

        return [node for node in YAML(typ="rt").compose_all(text) if node is not None]


def _kind(node) -> str:
    name = type(node).__name__
    return "mapping" if name == "MappingNode" else "sequence" if name == "SequenceNode" else "scalar"


def _get(mapping, key: str):
    for k, v in mapping.value:
        if _kind(k) == "scalar" and k.value == key:
            return v
    return None


def _keys(mapping) -> set[str]:
    return {k.value for k, _ in mapping.value if _kind(k) == "scalar"}


def _specs(root, text: str, index: LineIndex, found: list) -> None:
    keys = _keys(root)
    scalars = {k for k in ("run", "setup") if _get(root, k) is not None and _kind(_get(root, k)) == "scalar"}
    if scalars and (len(scalars) == 2 or (keys & _SKYPILOT_KEYS) - scalars):
        env = _environment(_get(root, "envs"), text, index)
        for k in sorted(scalars):
            found.append((f"skypilot {k}", _shell_scalar(_get(root, k), text, index, env=env)))
    for job, steps in _workflow_steps(root):
        outer = _environment(_get(root, "env"), text, index) + _environment(_get(job, "env"), text, index)
        for step in steps.value:
            if _kind(step) != "mapping":
                continue
            run, kind = _get(step, "run"), _get(step, "shell")
            if run is not None and _kind(run) == "scalar" and not (
                    kind is not None and _kind(kind) == "scalar" and kind.value.split()[0] in _NOT_SHELL):
                env = outer + _environment(_get(step, "env"), text, index)
                found.append(("github-actions step", _shell_scalar(run, text, index, expressions=True, env=env)))
    spec = _get(root, "spec")
    kind = _get(root, "kind")
    if spec is not None and _kind(spec) == "mapping" and (
            (kind is not None and _kind(kind) == "scalar" and kind.value == "RayJob") or "rayClusterSpec" in _keys(spec)):
        entry = _get(spec, "entrypoint")
        if entry is not None and _kind(entry) == "scalar":
            found.append(("rayjob entrypoint", _shell_scalar(entry, text, index)))
    services = _get(root, "services")
    if services is not None and _kind(services) == "mapping":
        for _, service in services.value:
            if _kind(service) == "mapping" and _keys(service) & {"image", "build"}:
                _program(service, "entrypoint", "command", "compose service", text, index, found,
                         _environment(_get(service, "environment"), text, index))
    _containers(root, text, index, found, 0)


def _workflow_steps(root):
    jobs = _get(root, "jobs")
    if jobs is not None and _kind(jobs) == "mapping":
        for _, job in jobs.value:
            steps = _get(job, "steps") if _kind(job) == "mapping" else None
            if steps is not None and _kind(steps) == "sequence":
                yield job, steps
    runs = _get(root, "runs")
    steps = _get(runs, "steps") if runs is not None and _kind(runs) == "mapping" else None
    if steps is not None and _kind(steps) == "sequence":
        yield runs, steps


def _containers(node, text: str, index: LineIndex, found: list, depth: int) -> None:
    if depth > MAX_DEPTH:
        return
    if _kind(node) == "mapping":
        for key, value in node.value:
            if _kind(key) == "scalar" and key.value in ("containers", "initContainers") and _kind(value) == "sequence":
                for container in value.value:
                    if _kind(container) == "mapping" and "image" in _keys(container):
                        _program(container, "command", "args", "kubernetes container", text, index, found,
                                 _environment(_get(container, "env"), text, index))
            elif _kind(value) != "scalar":
                _containers(value, text, index, found, depth + 1)
    elif _kind(node) == "sequence":
        for item in node.value:
            _containers(item, text, index, found, depth + 1)


def _program(holder, first: str, then: str, what: str, text: str, index: LineIndex, found: list,
             env: list[tuple[str, int]]) -> None:
    """What a container or a compose service runs: `first` (its program: a container's command, a service's
    entrypoint) then `then`'s words, both lists; a string value is a shell command of its own. `env`: its
    environment, as the `export` lines before the command (`_environment`). Each is found with the holder's
    `image:` (the software that runs it), where that is a plain string."""
    image_node = _get(holder, "image")
    image = image_node.value.strip() if image_node is not None and _kind(image_node) == "scalar" else ""
    lists, alone = [], []
    for key in (first, then):
        node = _get(holder, key)
        if node is None:
            continue
        if _kind(node) == "sequence":
            lists.append(node)
        elif _kind(node) == "scalar" and node.value.strip():
            alone.append(node)
    elements, writers = [], {}
    for node in lists:
        for item in node.value:
            if _kind(item) != "scalar":
                return  # a list holding a mapping or a list: not an argument list
            element = _element(item, text, index)
            elements.append(element)
            writers[id(element)] = (node, item)
    if elements:
        block = argv_block(elements, escape=lambda element, t: _escape_item(writers[id(element)][1], t),
                           new_element=lambda after, word: _new_item(writers[id(after)], word, text, index),
                           why=LIST_WHY, prefix=env)
        found.append((what, block, image))
    for node in alone:
        found.append((what, _shell_scalar(node, text, index, env=env), image))


_NAME = re.compile(r"[A-Za-z_]\w*")


def _environment(node, text: str, index: LineIndex) -> list[tuple[str, int]]:
    """The variables a job spec sets for its command, as `export NAME=value` lines of shell code: each name and
    value at their characters in the file (a fix may rewrite a value), `export ` and `=` at the name's. Read:
    a mapping (`envs:`, `env:`, compose `environment:`), a compose list of `NAME=value` strings, a Kubernetes list
    of `{name, value}`. A value the shell would split or expand, or written with escapes, is left out."""
    out: list[tuple[str, int]] = []
    if node is None:
        return out
    pairs = []
    if _kind(node) == "mapping":
        pairs = [(k, v) for k, v in node.value if _kind(k) == "scalar" and _kind(v) == "scalar"]
    elif _kind(node) == "sequence":
        for item in node.value:
            if _kind(item) == "mapping":
                name, value = _get(item, "name"), _get(item, "value")
                if name is not None and value is not None and _kind(name) == _kind(value) == "scalar":
                    pairs.append((name, value))
            elif _kind(item) == "scalar" and "=" in item.value:
                chars, exact = _scalar_chars(item, text, index)
                name, _, value = item.value.partition("=")
                if exact and _NAME.fullmatch(name) and PLAIN_WORD.fullmatch(value):
                    out += [(c, chars[0][1]) for c in "export "] + chars + [("\n", chars[-1][1] + 1)]
    for key, value in pairs:
        key_chars, key_exact = _scalar_chars(key, text, index)
        value_chars, value_exact = _scalar_chars(value, text, index)
        if not (key_exact and value_exact and _NAME.fullmatch(key.value) and PLAIN_WORD.fullmatch(value.value)):
            continue
        at = key_chars[0][1]
        out += [(c, at) for c in "export "] + key_chars + [("=", key_chars[-1][1] + 1)] + value_chars
        out.append(("\n", value_chars[-1][1] + 1))
    return out


def _escape_item(item, t: str) -> str | None:
    """`t` written inside a list item as its quoting needs; None where it cannot stay one plain item."""
    if "\n" in t or "\r" in t:
        return None
    style = item.style or ""
    if style == '"':
        return None if '"' in t or "\\" in t else t
    if style == "'":
        return t.replace("'", "''")
    return None if style or ": " in t or " #" in t else t


def _element(item, text: str, index: LineIndex) -> Element:
    chars, contiguous = _scalar_chars(item, text, index)
    start = index.offset(item.start_mark.line + 1, item.start_mark.column)
    end = index.offset(item.end_mark.line + 1, item.end_mark.column)
    if not contiguous:
        chars = [(c, start) for c, _ in chars]
    return Element(chars, start, end, contiguous)


def _new_item(where, word: str, text: str, index: LineIndex) -> str:
    seq, item = where
    value = word if PLAIN_WORD.fullmatch(word) and not word.startswith(("-", "@", "%")) or re.fullmatch(
        r"--?[A-Za-z0-9_.=/+-]+", word) else json.dumps(word)
    if seq.flow_style:
        return ", " + value
    line = index.line_text(item.start_mark.line + 1)
    dash = re.match(r"[ \t]*-[ \t]+", line)
    newline = "\r\n" if "\r\n" in text else "\n"
    return newline + (dash.group(0) if dash else "- ") + value


_EXPRESSION = re.compile(r"\$\{\{.*?\}\}", re.DOTALL)


def _shell_scalar(node, text: str, index: LineIndex, expressions: bool = False,
                  env: list[tuple[str, int]] = ()) -> Embedded:
    """A string value as shell code, after `env`'s `export` lines. `expressions`: GitHub Actions replaces
    `${{ ... }}` before the shell runs: each is read as one variable whose value is not known (`$_____`, as long)."""
    chars, contiguous = _scalar_chars(node, text, index)
    if expressions:
        code = "".join(c for c, _ in chars)
        for m in _EXPRESSION.finditer(code):
            for k in range(m.start(), m.end()):
                chars[k] = ("$" if k == m.start() else "_", chars[k][1])
    start = index.offset(node.start_mark.line + 1, node.start_mark.column)
    env = list(env)
    if not contiguous:
        return Embedded("shell", env + [(c, start) for c, _ in chars], place=lambda edit: None, why_no_fix=SCALAR_WHY)
    style = node.style or ""
    newline = "\r\n" if "\r\n" in text else "\n"
    if style == "|":
        indent = _block_indent(node, text, index)
        return Embedded("shell", env + chars, escape=lambda t: t.replace("\n", newline + " " * indent),
                        why_no_fix=SCALAR_WHY)
    forbidden = {"'": "'\r\n", '"': '"\\\r\n', ">": "\r\n"}.get(style, "\r\n#")
    return Embedded("shell", env + chars, forbidden=forbidden,
                    escape=(lambda t: None if ": " in t else t) if not style else None,
                    why_no_fix="the fix would write a line break or a character the YAML scalar's quoting changes")


def _scalar_chars(node, text: str, index: LineIndex) -> tuple[list[tuple[str, int]], bool]:
    """The scalar's value with the file offset of each character, and whether that mapping is exact (the value is
    the text as written: no escape, no folding that changes it)."""
    value = node.value
    start = index.offset(node.start_mark.line + 1, node.start_mark.column)
    end = index.offset(node.end_mark.line + 1, node.end_mark.column)
    style = node.style or ""
    if style in ("|", ">"):
        chars = _block_chars(node, text, index, folded=style == ">")
        if chars is not None and "".join(c for c, _ in chars).rstrip("\n") == value.rstrip("\n"):
            return chars[:len(value)], True
        return [(c, start) for c in value], False
    inner = (start + 1, end - 1) if style in ("'", '"') else (start, end)
    if text[inner[0]:inner[1]] == value:
        return [(c, inner[0] + k) for k, c in enumerate(value)], True
    return [(c, start) for c in value], False


def _block_indent(node, text: str, index: LineIndex) -> int:
    header = index.line_text(node.start_mark.line + 1)
    m = re.search(r"[|>]([1-9])?[+-]?([1-9])?\s*(?:#.*)?$", header)
    explicit = m and (m.group(1) or m.group(2))
    if explicit:
        # the indicator counts from the parent node's indentation
        return len(header) - len(header.lstrip(" ")) + int(explicit)
    for line_no in range(node.start_mark.line + 2, node.end_mark.line + 2):
        line = index.line_text(line_no) if line_no <= index.line_count else ""
        if line.strip():
            return len(line) - len(line.lstrip(" "))
    return 0


def _block_chars(node, text: str, index: LineIndex, folded: bool) -> list[tuple[str, int]] | None:
    indent = _block_indent(node, text, index)
    out: list[tuple[str, int]] = []
    last = node.end_mark.line + (1 if node.end_mark.column else 0)
    previous_plain = False
    for line_no in range(node.start_mark.line + 2, last + 1):
        if line_no > index.line_count:
            break
        begin = index.starts[line_no - 1]
        body = index.line_text(line_no)
        newline_at = begin + len(body)
        if not body.strip():
            # a blank line keeps the blanks past the block's indentation (YAML 1.2 8.1.1.2)
            out.extend((c, begin + indent + k) for k, c in enumerate(body[indent:]))
            out.append(("\n", newline_at))
            previous_plain = False
            continue
        if len(body) - len(body.lstrip(" ")) < indent:
            return None
        plain = folded and not body[indent:indent + 1].isspace()
        if plain and previous_plain and out and out[-1][0] == "\n":
            out[-1] = (" ", out[-1][1])  # folding joins two plain lines with a blank
        out.extend((c, begin + indent + k) for k, c in enumerate(body[indent:]))
        out.append(("\n", newline_at))
        previous_plain = plain
    return out
