"""pyproject.toml as a declared environment: `[build-system] requires`, `[project] dependencies`, optional
dependencies (each requirement knows its extra: pip and uv install it only when asked for), dependency groups,
and uv's package indexes (`[[tool.uv.index]] url`, read by uv only). An index marked `explicit = true` serves only the
packages `[tool.uv.sources]` sends to it, so it is torch's index only where that table names it for torch, and is
reported there. tomllib gives no positions, so each string is found in the text after the one before it; a string
that cannot be found is still checked, with the file's start as anchor."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence
from urllib.parse import unquote

from rlcompat.lang.scanned import ScannedView
from rlcompat._toml import TOMLDecodeError, load_toml_text
from rlcompat.lang.declared import Declared, IndexUrl, Requirement, normalise, requirement_at, run
from rlcompat.lang.settings import Span
from rlcompat.findings import Finding

PARSE_ERRORS = (TOMLDecodeError,)


def syntax_error_location(exc: TOMLDecodeError) -> tuple[int, int, str]:
    m = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
    return (int(m.group(1)), int(m.group(2)), str(exc)) if m else (1, 1, str(exc))


def parse(text: str) -> Declared:
    return declared_from(load_toml_text(text), text, "pyproject")


def declared_from(data: dict, text: str, kind: str) -> Declared:
    """The declared environment of pyproject-shaped `data` loaded from `text` (where each string is looked for):
    a pyproject.toml, or a script's inline metadata shaped as one (lang/inline_script.py)."""
    group = Declared(kind, anchor=Span(0, 0))
    project = data.get("project") or {}
    # Build requirements first: a source build installs them (vLLM pins torch there).
    strings: list[tuple[str, str]] = [(s, "") for s in _strings((data.get("build-system") or {}).get("requires"))]
    strings += [(s, "") for s in _strings(project.get("dependencies"))]
    for extra, deps in (project.get("optional-dependencies") or {}).items():
        strings += [(s, str(extra)) for s in _strings(deps)]
    uv = (data.get("tool") or {}).get("uv") or {}
    optional_groups = _optional_groups(data.get("dependency-groups"), uv)
    for name, deps in (data.get("dependency-groups") or {}).items():
        strings += [(s, str(name) if name in optional_groups else "") for s in _strings(deps)]
    cursor = 0
    for dep, extra in strings:
        # The tables are usually in this order; where one is not (`[build-system]` last, as in prime-rl), the string
        # is looked for from the file's start again.
        at = _find(text, dep, cursor)
        at = _find(text, dep, 0) if at is None else at
        if at is None:
            continue
        cursor = at + len(dep)
        if ";" in dep and not _on_linux(dep.split(";", 1)[1]):
            continue  # `torch<2.9.1; sys_platform == 'darwin'`: installs nothing on the Linux machines judged here
        req = requirement_at(dep, at)
        if req is not None:
            req.extra = extra
            group.requirements.append(req)
    group.requirements += _url_wheels(uv.get("sources"), text, group.requirements, optional_groups)
    group.requirements += _source_rows(uv.get("sources"), text, group.requirements, optional_groups)
    group.requirements += _overrides(uv.get("override-dependencies"), text, group.requirements)
    routes = _torch_routes(uv.get("sources"), text)
    for index in uv.get("index") or ():
        url = index.get("url") if isinstance(index, dict) else None
        if not isinstance(url, str):
            continue
        routed: list = [(None, None)]
        rows = [(r.span, r.extras) for r in routes if r.index == index.get("name")]
        if index.get("explicit") is True:
            # every row that sends torch to it (`extra = "sglang"`, `extra = "cuda"`): one install each
            routed = rows
            if not routed:
                continue  # an explicit index serves only the packages sent to it (on Linux): not torch's
        elif any(extras is None for _, extras in rows):
            # a source row sends every torch there whether or not the index is explicit [S180]: the row is where
            # the install is fixed (torchforge: `torch = { index = "pytorch-cu128" }` beside a plain index)
            routed = [row for row in rows if row[1] is None]
        at = _find(text, url, 0)
        if at is not None:
            for span, extras in routed:
                group.indexes.append(IndexUrl(url, "index", Span(at, at + len(url)), uv_only=True, routed_at=span,
                                              routed_extras=extras))
    # The older settings (`[tool.uv] index-url`, `extra-index-url`): unnamed indexes every package is looked up in,
    # an extra index before the default one [S180]
    legacy = [(uv.get("index-url"), "index")] + [(u, "extra") for u in _strings(uv.get("extra-index-url"))]
    for url, kind in legacy:
        at = _find(text, url, 0) if isinstance(url, str) else None
        if at is not None:
            group.indexes.append(IndexUrl(url, kind, Span(at, at + len(url)), uv_only=True))
    return group


# (TOML allows indentation before a table header: a script's inline metadata is read indented)
_SOURCES_TABLE = re.compile(r"^[ \t]*\[tool\.uv\.sources\][ \t]*(?:#[^\r\n]*)?\r?$", re.M)
_NEXT_TABLE = re.compile(r"^[ \t]*\[", re.M)
_TORCH_SOURCE = re.compile(r"^[ \t]*[\"']?torch[\"']?[ \t]*=", re.M)
_NEXT_KEY = re.compile(r"^[ \t]*[\"']?[A-Za-z0-9_.-]+[\"']?[ \t]*=", re.M)
# What a source row's marker says about a Linux x86-64 machine, the one rlcompat's targets are: `sys_platform`,
# `platform_system` and `platform_machine` clauses only; a row whose marker names anything else is taken to apply.
_PLATFORM = re.compile(r"(sys_platform|platform_system)\s*(==|!=)\s*['\"]([^'\"]+)['\"]")
_MACHINE = re.compile(r"platform_machine\s*(==|!=)\s*['\"]([^'\"]+)['\"]")
_X86_64 = ("x86_64", "amd64")
_EXTRA = re.compile(r"\bextra\s*==\s*['\"]([^'\"]+)['\"]")


@dataclass(frozen=True)
class Route:
    """One row of `[tool.uv.sources] torch` that applies on Linux: the index it names, the extras it is limited to
    (None: every install; from the row's `extra = "X"` key or `extra == 'X'` in its marker [S180]), and its text."""

    index: str
    extras: tuple[str, ...] | None
    span: Span | None


def _torch_routes(sources, text: str) -> list[Route]:
    """The rows `[tool.uv.sources]` gives torch (one source, or a list of them with markers) that apply on Linux,
    each with where it is written (None when the table is not written as a `[tool.uv.sources]` header)."""
    source = sources.get("torch") if isinstance(sources, dict) else None
    rows = [r for r in (source if isinstance(source, list) else [source])
            if isinstance(r, dict) and isinstance(r.get("index"), str) and _on_linux(r.get("marker"))]
    if not rows:
        return []
    entry = _torch_entry(text)
    out = []
    seen: dict[str, int] = {}
    for row in rows:
        marker = row.get("marker") if isinstance(row.get("marker"), str) else ""
        extras = tuple(_EXTRA.findall(marker)) + ((row["extra"],) if isinstance(row.get("extra"), str) else ())
        nth = seen[row["index"]] = seen.get(row["index"], -1) + 1  # rows naming the same index: the nth is this one
        out.append(Route(row["index"], extras or None, _row_span(text, entry, row["index"], isinstance(source, list), nth)))
    return out


def _optional_groups(groups, uv: dict) -> frozenset[str]:
    """The dependency groups an install leaves out unless asked (`uv sync --group NAME`): every group but uv's
    `default-groups` (["dev"] where unset; "all" for every group) [S300]. Their requirements are judged as an optional
    extra's are."""
    if not isinstance(groups, dict):
        return frozenset()
    defaults = uv.get("default-groups", ["dev"])
    if defaults == "all":
        return frozenset()
    chosen = {str(d) for d in defaults} if isinstance(defaults, list) else set()
    return frozenset(str(name) for name in groups if str(name) not in chosen)


def _url_wheels(sources, text: str, declared: list[Requirement],
                optional_groups: frozenset[str] = frozenset()) -> list[Requirement]:
    """The wheels `[tool.uv.sources]` sends declared packages to (`flash-attn = { url = ".../flash_attn-2.8.0.post2+
    cu12torch2.7-cp312-cp312-linux_x86_64.whl" }`): uv installs the package from that file, at the version its name
    implies, wherever the project requires the package [S236]; a package the project does not declare is not routed
    [S180]. Each is a requirement at the URL (never edited: the file is what it is), in the extras the project asks for
    the package in (every install where a dependency of its own names it), narrowed by the row's marker or `extra`."""
    if not isinstance(sources, dict):
        return []
    header = _SOURCES_TABLE.search(text)
    if header is None:
        return []
    out: list[Requirement] = []
    for name, source in sources.items():
        asked = [r.extra for r in declared if r.name == normalise(str(name)) and r.editable]
        if not asked:
            continue
        for row in source if isinstance(source, list) else [source]:
            url = row.get("url") if isinstance(row, dict) else None
            if not isinstance(url, str) or not _on_linux(row.get("marker")):
                continue
            at = _find(text, url, header.end())
            req = requirement_at(unquote(url), at) if at is not None else None
            if req is None or req.name != normalise(str(name)):
                continue
            req.span = Span(at, at + len(url))
            for extra in _row_extras(row, asked, optional_groups):
                out.append(Requirement(req.name, req.spec, req.span, None, editable=False, extra=extra))
    return out


def _row_extras(row: dict, asked: list[str], optional_groups: frozenset[str]) -> tuple[str, ...]:
    """The installs a `[tool.uv.sources]` row applies in: the extras its marker or `extra` narrows it to (and its
    `group` where that group is installed only on request, `group = "cuda13"`), else every install the project asks
    for the package in (`asked`; "" for its core dependencies)."""
    marker = row.get("marker") if isinstance(row.get("marker"), str) else ""
    narrowed = tuple(_EXTRA.findall(marker)) + ((row["extra"],) if isinstance(row.get("extra"), str) else ())
    if row.get("group") in optional_groups:
        narrowed += (row["group"],)
    return ("",) if "" in asked and not narrowed else (narrowed or tuple(dict.fromkeys(asked)))


# Packages whose rows follow torch's route (the route itself is read by _torch_routes)
_TORCH_ROUTED = frozenset({"torch", "torchvision", "torchaudio"})


def _source_rows(sources, text: str, declared: list[Requirement],
                 optional_groups: frozenset[str] = frozenset()) -> list[Requirement]:
    """The rows `[tool.uv.sources]` sends a declared package to a git commit or a named index by
    (`flash-attn-4 = { git = "...", rev = "96bd151" }`, `flash_attn_3 = { index = "pytorch-cu128-test" }`): uv installs
    the package from there wherever the project requires it [S236][S180], so each row is that package's install, as a
    URL row is (_url_wheels), in the extras the project asks for it in, narrowed by the row's marker or `extra`. The
    row names no release (an index serves several; a commit is no release a table knows): version_known is False, so
    rules judge on it what every release shares (a minimum capability), not the torch one release pins. Never edited.
    torch's rows are its route (_torch_routes), torchvision's and torchaudio's follow it."""
    if not isinstance(sources, dict) or _SOURCES_TABLE.search(text) is None:
        return []
    out: list[Requirement] = []
    for name, source in sources.items():
        package = normalise(str(name))
        asked = [r.extra for r in declared if r.name == package and r.editable]
        if not asked or package in _TORCH_ROUTED:
            continue
        entry = _source_entry(text, re.compile(r"^[ \t]*[\"']?" + re.escape(str(name)) + r"[\"']?[ \t]*=", re.M))
        rows = source if isinstance(source, list) else [source]
        seen: dict[tuple[str, str], int] = {}
        for row in rows:
            field = next((f for f in ("git", "index") if isinstance(row, dict) and isinstance(row.get(f), str)), None)
            if field is None:
                continue
            nth = seen[field, row[field]] = seen.get((field, row[field]), -1) + 1
            if not _on_linux(row.get("marker")):
                continue
            span = _row_span(text, entry, row[field], isinstance(source, list), nth, field)
            if span is None:
                continue
            for extra in _row_extras(row, asked, optional_groups):
                out.append(Requirement(package, "", span, None, editable=False, extra=extra, version_known=False,
                                       uv_source=field))
    return out


_OVERRIDES_KEY = re.compile(r"^[ \t]*[\"']?override-dependencies[\"']?[ \t]*=", re.M)


def _overrides(rows, text: str, declared: list[Requirement]) -> list[Requirement]:
    """`[tool.uv] override-dependencies`: uv replaces every requirement on a package, the project's and its
    dependencies', with the override's ("torch==2.13.0; sys_platform == 'linux'"), so in a uv install the override is
    that package's install [S243]. Each row for a package the project declares (core, an extra, a group) whose marker
    can hold on Linux is a requirement at the row, in the extras the project asks for the package in, marked uv's
    only (pip reads no `[tool.uv]` table). Not editable (the fix of a torch route is at the route); a row for a
    package the project never declares decides nothing rlcompat judges (an override adds no dependency [S243])."""
    header = _OVERRIDES_KEY.search(text)
    if header is None:
        return []
    out: list[Requirement] = []
    cursor = header.end()
    for row in _strings(rows):
        at = _find(text, row, cursor)
        if at is None:
            continue
        cursor = at + len(row)
        spec, _, marker = row.partition(";")
        req = requirement_at(spec.rstrip(), at)
        if req is None or not _on_linux(marker or None):
            continue
        asked = [r.extra for r in declared if r.name == req.name and r.editable]
        for extra in ("",) if "" in asked else tuple(dict.fromkeys(asked)):
            out.append(Requirement(req.name, req.spec, req.span, None, editable=False, extra=extra, extras=req.extras,
                                   origin="[tool.uv] override-dependencies", uv_only=True))
    return out


def _on_linux(marker) -> bool:
    """Whether a row's marker can hold on Linux x86-64 (the machines a P40 or T4 sits in): some `or` branch whose
    platform and machine clauses all hold there (an `aarch64` row of a wheel list installs nothing there)."""
    if not isinstance(marker, str):
        return True
    for branch in re.split(r"\s+or\s+", marker):
        if (all((value.lower() == "linux") == (op == "==") for _, op, value in _PLATFORM.findall(branch))
                and all((value.lower() in _X86_64) == (op == "==") for op, value in _MACHINE.findall(branch))):
            return True
    return False


def _torch_entry(text: str) -> Span | None:
    """The text of the `torch = ...` entry of a `[tool.uv.sources]` header table (to the next key or table)."""
    return _source_entry(text, _TORCH_SOURCE)


def _source_entry(text: str, key: re.Pattern) -> Span | None:
    """The text of the entry `key` matches in a `[tool.uv.sources]` header table (to the next key or table)."""
    header = _SOURCES_TABLE.search(text)
    if header is None:
        return None
    end = _NEXT_TABLE.search(text, header.end())
    stop = end.start() if end else len(text)
    line = key.search(text, header.end(), stop)
    if line is None:
        return None
    following = _NEXT_KEY.search(text, line.end(), stop)
    return Span(line.start() + len(line.group(0)) - len(line.group(0).lstrip()), following.start() if following else stop)


def _row_span(text: str, entry: Span | None, index: str, listed: bool, nth: int = 0, field: str = "index") -> Span | None:
    """The line of the entry that routes torch to `index`: the `torch = {...}` line itself, or for a list of rows the
    `nth` row (from 0) naming that index (a list may route two extras to one index); `field` = "git" for a row naming
    a repository instead."""
    if entry is None:
        return None
    start = entry.start
    if listed:
        found = list(re.compile(r"\{[^{}]*\b" + field + r"\s*=\s*[\"']" + re.escape(index) + r"[\"'][^{}]*\}")
                     .finditer(text, entry.start, entry.end))
        if len(found) <= nth:
            return None
        start = found[nth].start()
    stop = text.find("\n", start)
    stop = len(text) if stop < 0 else stop
    return Span(start, stop - (text[stop - 1:stop] == "\r"))


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
