"""pyproject.toml as a declared environment: `[build-system] requires`, `[project] dependencies`, optional
dependencies, dependency groups,
and uv's package indexes (`[[tool.uv.index]] url`). tomllib gives no positions, so each string is found in the
text after the one before it; a string that cannot be found is still checked, with the file's start as anchor."""

from __future__ import annotations

import re
from typing import Sequence

from rlcompat.lang.knowledge import FrontEndKnowledge
from rlcompat._toml import TOMLDecodeError, load_toml_text
from rlcompat.lang.declared import Declared, IndexUrl, requirement_at, run
from rlcompat.lang.settings import Span
from rlcompat.findings import Finding

PARSE_ERRORS = (TOMLDecodeError,)


def syntax_error_location(exc: TOMLDecodeError) -> tuple[int, int, str]:
    m = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
    return (int(m.group(1)), int(m.group(2)), str(exc)) if m else (1, 1, str(exc))


def parse(text: str) -> Declared:
    data = load_toml_text(text)
    group = Declared("pyproject", anchor=Span(0, 0))
    project = data.get("project") or {}
    # Build requirements first: they come first in the file, and a source build installs them (vLLM pins torch there).
    strings: list[str] = list(_strings((data.get("build-system") or {}).get("requires")))
    strings += _strings(project.get("dependencies"))
    for extra in (project.get("optional-dependencies") or {}).values():
        strings += _strings(extra)
    for deps in (data.get("dependency-groups") or {}).values():
        strings += _strings(deps)
    cursor = 0
    for dep in strings:
        at = _find(text, dep, cursor)
        if at is None:
            continue
        cursor = at + len(dep)
        req = requirement_at(dep, at)
        if req is not None:
            group.requirements.append(req)
    uv = (data.get("tool") or {}).get("uv") or {}
    for index in uv.get("index") or ():
        url = index.get("url") if isinstance(index, dict) else None
        if isinstance(url, str):
            at = _find(text, url, 0)
            if at is not None:
                group.indexes.append(IndexUrl(url, "index", Span(at, at + len(url))))
    return group


def _strings(value) -> list[str]:
    return [v for v in value or () if isinstance(v, str)] if isinstance(value, list) else []


def _find(text: str, value: str, start: int) -> int | None:
    for quote in ('"', "'"):
        at = text.find(quote + value + quote, start)
        if at >= 0:
            return at + 1
    return None


def check(group: Declared, text: str, path: str, rules: Sequence, target, *,
          knowledge: FrontEndKnowledge) -> list[Finding]:
    return run([group], text, path, rules, target, knowledge)
