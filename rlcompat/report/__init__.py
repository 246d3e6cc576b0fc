"""Output formats. Each module has `render(summary) -> str` and `render_pieces(summary)`, the same text in pieces
(what the CLI writes: a report of 100,000 findings is tens of MB of text, and several times that as the Python
objects it is built from); FORMATS maps `--output-format` names to them."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Iterator

from rlcompat.findings import FileError, Finding
from rlcompat.knowledge.targets import Target

FORMATS = {
    "text": "rlcompat.report.text",
    "json": "rlcompat.report.json_format",
    "sarif": "rlcompat.report.sarif",
    "github": "rlcompat.report.github",
}


@dataclass
class Summary:
    """Everything a report shows, for scan and fix alike."""

    command: str  # "scan" | "fix"
    target: Target
    findings: list[Finding]
    errors: list[FileError]
    files: int
    suppressed: int = 0
    fixed: list[Finding] = field(default_factory=list)
    unsafe_fixes: bool = False
    statistics: bool = False
    color: bool = False
    knowledge: list[str] = field(default_factory=list)  # framework knowledge applied: "verl 0.9.1", "OpenRLHF 0.11.2"
    not_read: list[tuple[str, str]] = field(default_factory=list)  # (path, why) of files seen but not read
    verbose: bool = False  # text: list every file not read, not only the counts
    fail_on: str = "warning"  # the lowest severity that makes the run exit 1 (findings.SEVERITIES)
    identity: list[str] = field(default_factory=list)  # per scanned tree: the frameworks it was judged with, and why
    identity_json: list[dict] = field(default_factory=list)  # the same, as data (rlcompat/knowledge/identity.py to_json)
    fix_command: str = ""  # the command that fixes what this report read, where `rlcompat fix` alone would not
    load_checks: list[str] = field(default_factory=list)  # fix: "path: what the load check found" (rlcompat/schema)
    # `--run LAUNCH.sh` (rlcompat/analysis/run_model.py): the run in words; `findings` are those it reaches, these
    # the rest as (finding, NotReached)
    run: str = ""
    not_reached: list = field(default_factory=list)


def not_read_line(not_read: list[tuple[str, str]]) -> str:
    """`Not read: ...` for the text report, or "" when every file seen was read: files left out on purpose with the
    reason and the first paths, then walked files of types no front end reads counted by extension (a tree has
    many: READMEs, data, images; `--verbose` lists them, `not_read_lines`)."""
    from collections import Counter

    from rlcompat.pipeline.discovery import UNKNOWN_TYPE

    shown = [(p, why) for p, why in not_read if why != UNKNOWN_TYPE]
    parts = []
    for why, n in Counter(why for _, why in shown).items():
        paths = [p for p, w in shown if w == why]
        parts.append(f"{n} file{'s' if n != 1 else ''} ({why}: {', '.join(paths[:3])}{', ...' if n > 3 else ''})")
    named = {p for p, _ in shown}
    other = [p for p, why in not_read if why == UNKNOWN_TYPE and p not in named]  # a named file walked too: once
    if other:
        parts.append(f"{len(other)} file{'s' if len(other) != 1 else ''} of types no front end reads ({_by_type(other)})")
    return "Not read: " + "; ".join(parts) + "." if parts else ""


def not_read_lines(not_read: list[tuple[str, str]]) -> list[str]:
    """Every file seen but not read, with why, one a line (`scan --verbose`)."""
    return [f"  {path}: {why}" for path, why in sorted(not_read)]


def _by_type(paths: list[str], shown: int = 5) -> str:
    """`12 .md, 3 without an extension, 2 .png, 4 of other types`: the most common types first."""
    import os
    from collections import Counter

    kinds = Counter(os.path.splitext(os.path.basename(p))[1].lower() or "without an extension" for p in paths)
    common = sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))  # most common first, ties by name
    out = [f"{n} {kind}" for kind, n in common[:shown]]
    rest = sum(n for _, n in common[shown:])
    if rest:
        out.append(f"{rest} of other types")
    return ", ".join(out)


def render(format_name: str, summary: Summary) -> str:
    return importlib.import_module(FORMATS[format_name]).render(summary)


def render_pieces(format_name: str, summary: Summary) -> Iterator[str]:
    """`render` in pieces to be written one after the other, built as they are written (a format without
    `render_pieces`: its whole text, one piece)."""
    module = importlib.import_module(FORMATS[format_name])
    pieces = getattr(module, "render_pieces", None)
    return pieces(summary) if pieces is not None else iter((module.render(summary),))


def fix_hint(unsafe: bool, command: str = "") -> str:
    """How the user runs `fix` (with `--unsafe-fixes` when `unsafe`) from where this report is read; `command` when
    the report names one (`rlcompat fix --installed verl --target sm61`: a plain `rlcompat fix` fixes the current
    folder, not site-packages).

    Under pre-commit, which sets PRE_COMMIT=1 for its hooks since 2.5.0 (pre_commit/commands/run.py:417 in 4.6.2:
    https://github.com/pre-commit/pre-commit/blob/v4.6.2/pre_commit/commands/run.py#L417), rlcompat lives in the
    hook's own environment (whose bin/ pre-commit puts on the hook's PATH) and the user may have no `rlcompat`
    command at all: the `rlcompat-fix` hook is the way. Elsewhere, without `rlcompat` on PATH, the command this run
    was started as (`.venv/bin/rlcompat`) or the module form."""
    import os
    import shutil
    import sys

    if command:
        return f"`{command} --unsafe-fixes`" if unsafe else f"`{command}`"
    if os.environ.get("PRE_COMMIT") == "1":
        return "the `rlcompat-fix` hook" + (" with `args: [--unsafe-fixes]`" if unsafe else "")
    if shutil.which("rlcompat"):
        command = "rlcompat fix"
    elif os.path.basename(sys.argv[0]) == "rlcompat":
        command = f"{sys.argv[0]} fix"
    else:
        command = "python -m rlcompat fix"
    return f"`{command} --unsafe-fixes`" if unsafe else f"`{command}`"


def fixable_counts(findings: list[Finding], unsafe_fixes: bool) -> tuple[int, int]:
    """(fixable by `fix` as configured, fixable only with --unsafe-fixes): two parts of `findings` that never
    overlap; the rest has no fix."""
    safe = sum(1 for f in findings if f.fix and f.fix.applies(unsafe_fixes))
    unsafe_only = sum(1 for f in findings if f.fix and not f.fix.applies(unsafe_fixes))
    return safe, unsafe_only
