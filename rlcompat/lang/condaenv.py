"""conda environment files (environment*.yml): channels, conda packages and the nested `pip:` list.

Read line by line, as conda writes them (a block list under `dependencies:`; flow style `[a, b]` is not read):
the YAML front end keeps no positions for scalars in lists, and these files need no more than this.
"""

from __future__ import annotations

import re
from typing import Sequence

from rlcompat.lang.scanned import ScannedView
from rlcompat.lang.declared import Declared, Requirement, normalise, pip_arguments, requirement_at, run
from rlcompat.lang.settings import Span
from rlcompat.findings import Finding
from rlcompat.lang.textpos import lines_at


class CondaEnvError(Exception):
    """Never raised: a line this reader does not understand is skipped."""


PARSE_ERRORS = (CondaEnvError,)
ITEM = re.compile(r"^(?P<indent>\s*)-\s+(?P<value>.*?)\s*(?:\s#.*)?$")
KEY = re.compile(r"^(?P<indent>\s*)(?P<key>[\w.-]+):\s*(?:#.*)?$")
CONDA_SPEC = re.compile(r"^(?:[\w.-]+::)?(?P<name>[A-Za-z0-9][\w.-]*)\s*(?P<spec>[=<>!~].*)?$")


def syntax_error_location(exc: Exception) -> tuple[int, int, str]:
    return 1, 1, str(exc)


def parse(text: str) -> Declared:
    group = Declared("conda", anchor=Span(0, 0))
    section, pip_indent = "", None
    for start, line in lines_at(text):
        key = KEY.match(line)
        if key and not key.group("indent"):
            section, pip_indent = key.group("key"), None
            continue
        item = ITEM.match(line)
        if section != "dependencies" or not item:
            continue
        indent, value = len(item.group("indent")), item.group("value")
        value_at = start + item.start("value")
        if value.rstrip(":").strip() == "pip" and value.endswith(":"):
            pip_indent = indent
            continue
        if value[:1] in "\"'" and value[-1:] == value[:1]:
            value, value_at = value[1:-1], value_at + 1
        if pip_indent is not None and indent > pip_indent:
            words = [(m.group(0), Span(value_at + m.start(), value_at + m.end())) for m in re.finditer(r"\S+", value)]
            if value.startswith("-"):
                pip_arguments(words, group)
            else:
                req = requirement_at(value, value_at)
                if req is not None:
                    group.requirements.append(req)
            continue
        pip_indent = None
        m = CONDA_SPEC.match(value)
        if m:
            spec = (m.group("spec") or "").strip()
            spec_at = value_at + m.start("spec") if m.group("spec") else None
            group.requirements.append(Requirement(
                normalise(m.group("name")), spec, Span(value_at, value_at + len(value)),
                Span(spec_at, spec_at + len(m.group("spec").rstrip())) if spec_at is not None else None, conda=True))
    return group


def check(group: Declared, text: str, path: str, rules: Sequence, target, *,
          scanned: ScannedView) -> list[Finding]:
    return run([group], text, path, rules, target, scanned)
