"""pyproject.toml as a declared environment: `[build-system] requires`, `[project] dependencies`, optional
dependencies (each requirement knows its extra: pip and uv install it only when asked for), dependency groups,
and uv's package indexes (`[[tool.uv.index]] url`, read by uv only). An index marked `explicit = true` serves only the
packages `[tool.uv.sources]` sends to it, so it is torch's index only where that table names it for torch, and is
reported there. tomllib gives no positions, so each string is found in the text after the one before it; a string
that cannot be found is still checked, with the file's start as anchor."""

from __future__ import annotations

import re
from typing import Sequence

from rlcompat.lang.scanned import ScannedView
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
    strings: list[tuple[str, str]] = [(s, "") for s in _strings((data.get("build-system") or {}).get("requires"))]
    strings += [(s, "") for s in _strings(project.get("dependencies"))]
    for extra, deps in (project.get("optional-dependencies") or {}).items():
        strings += [(s, str(extra)) for s in _strings(deps)]
    for deps in (data.get("dependency-groups") or {}).values():
        strings += [(s, "") for s in _strings(deps)]
    cursor = 0
    for dep, extra in strings:
        at = _find(text, dep, cursor)
        if at is None:
            continue
        cursor = at + len(dep)
        req = requirement_at(dep, at)
        if req is not None:
            req.extra = extra
            group.requirements.append(req)
    uv = (data.get("tool") or {}).get("uv") or {}
    torch_source = _torch_source(uv.get("sources"), text)
    for index in uv.get("index") or ():
        url = index.get("url") if isinstance(index, dict) else None
        if not isinstance(url, str):
            continue
        routed = None
        if index.get("explicit") is True:
            if torch_source is None or index.get("name") not in torch_source[0]:
                continue  # an explicit index serves only the packages sent to it: not torch
            routed = torch_source[1]
        at = _find(text, url, 0)
        if at is not None:
            group.indexes.append(IndexUrl(url, "index", Span(at, at + len(url)), uv_only=True, routed_at=routed))
    return group


_SOURCES_TABLE = re.compile(r"^\[tool\.uv\.sources\][ \t]*(?:#[^\r\n]*)?\r?$", re.M)
_NEXT_TABLE = re.compile(r"^[ \t]*\[", re.M)
_TORCH_SOURCE = re.compile(r"^[ \t]*[\"']?torch[\"']?[ \t]*=", re.M)


def _torch_source(sources, text: str) -> tuple[set[str], Span | None] | None:
    """The index names `[tool.uv.sources]` gives torch (one source, or a list of them with markers), and where
    its line is written (None when the table is not written as a `[tool.uv.sources]` header)."""
    source = sources.get("torch") if isinstance(sources, dict) else None
    rows = source if isinstance(source, list) else [source]
    names = {r["index"] for r in rows if isinstance(r, dict) and isinstance(r.get("index"), str)}
    if not names:
        return None
    header = _SOURCES_TABLE.search(text)
    if header is None:
        return names, None
    end = _NEXT_TABLE.search(text, header.end())
    line = _TORCH_SOURCE.search(text, header.end(), end.start() if end else len(text))
    if line is None:
        return names, None
    start = line.start() + len(line.group(0)) - len(line.group(0).lstrip())
    stop = text.find("\n", start)
    return names, Span(start, len(text.rstrip("\r")) if stop < 0 else stop - (text[stop - 1] == "\r"))


def _strings(value) -> list[str]:
    return [v for v in value or () if isinstance(v, str)] if isinstance(value, list) else []


def _find(text: str, value: str, start: int) -> int | None:
    for quote in ('"', "'"):
        at = text.find(quote + value + quote, start)
        if at >= 0:
            return at + 1
    return None


def check(group: Declared, text: str, path: str, rules: Sequence, target, *,
          scanned: ScannedView) -> list[Finding]:
    return run([group], text, path, rules, target, scanned)
