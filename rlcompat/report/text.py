"""Human output: one block per finding with a code frame, then a summary line."""

from __future__ import annotations

import io
from collections import Counter

from rlcompat.report import Summary, fixable_counts


def render(summary: Summary) -> str:
    from rich.console import Console
    from rich.markup import escape

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=summary.color, no_color=not summary.color, width=200, highlight=False,
                      soft_wrap=True)
    for e in summary.errors:
        console.print(f"[bold red]error[/]: {escape(e.one_line())}")
    for f in summary.findings:
        loc = f.location
        colour = "red" if f.severity == "error" else "yellow"
        console.print(f"[bold]{escape(f.path)}:{loc.line}:{loc.column}[/]: [bold {colour}]{f.code}[/] {escape(f.message)}")
        if f.source_line:
            gutter = len(str(loc.line))
            console.print(f"[blue]{' ' * gutter} |[/]")
            # Printed without markup: rich's escape() doubles a trailing backslash, as ends every continued shell line.
            console.print(f"[blue]{loc.line} |[/] ", end="")
            console.print(f.source_line, markup=False)
            width = (loc.end_column - loc.column) if loc.end_line == loc.line else len(f.source_line) - loc.column + 1
            console.print(f"[blue]{' ' * gutter} |[/] {' ' * (loc.column - 1)}[{colour}]{'^' * max(1, width)} {f.name}[/]")
        if f.fix:
            tag = "fix" if f.fix.safety.value == "safe" else "unsafe fix"
            console.print(f"[blue]{' ' * len(str(loc.line))} = {tag}:[/] {escape(f.fix.description)}")
        console.print()
    if summary.statistics:
        _statistics(console, summary)
    console.print(_summary_line(summary))
    return buf.getvalue()


def _statistics(console, summary: Summary) -> None:
    counts = Counter((f.code, f.name) for f in summary.findings)
    fixable = Counter(f.code for f in summary.findings if f.fix)
    for (code, name), n in sorted(counts.items()):
        mark = "[*]" if fixable[code] else "   "
        console.print(f"{n:>5}  {code:<7} {mark} {name}", markup=False)
    console.print()


def _summary_line(summary: Summary) -> str:
    t = summary.target
    where = f"{summary.files} file{'s' if summary.files != 1 else ''} for {t.name} ({t.capability_text}, {t.architecture})"
    parts = []
    if summary.command == "fix":
        parts.append(f"Fixed {len(summary.fixed)} finding{'s' if len(summary.fixed) != 1 else ''}")
        parts.append(f"{len(summary.findings)} remaining" if summary.findings else "nothing remaining")
    elif summary.findings:
        parts.append(f"Found {len(summary.findings)} finding{'s' if len(summary.findings) != 1 else ''}")
    elif summary.errors:
        parts.append("No findings")  # not "all clear": some files could not be checked
    else:
        parts.append("All clear: no findings")
    safe, unsafe_only = fixable_counts(summary.findings, summary.unsafe_fixes)
    if summary.command == "scan" and safe:
        parts.append(f"{safe} fixable with `rlcompat fix`")
    if unsafe_only:
        parts.append(f"{unsafe_only} more with `--unsafe-fixes`")
    if summary.suppressed:
        parts.append(f"{summary.suppressed} suppressed")
    if summary.errors:
        parts.append(f"{len(summary.errors)} file error{'s' if len(summary.errors) != 1 else ''}")
    return f"{', '.join(parts)} in {where}."
