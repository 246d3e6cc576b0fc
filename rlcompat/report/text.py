"""Human output: one block per finding with a code frame, then a summary line."""

from __future__ import annotations

import io
from collections import Counter
from typing import Iterator

from rlcompat.findings import at_least
from rlcompat.report import Summary, fix_hint, fixable_counts


# A line is a list of (text, rich style) segments. Without colour the styles are dropped, and rich (about 25 ms
# to import) is never loaded: the pre-commit and CI case, where output is not a terminal.
Line = list[tuple[str, str]]


def render(summary: Summary) -> str:
    return "".join(render_pieces(summary))


def render_pieces(summary: Summary) -> Iterator[str]:
    """The report a line at a time (with colour, a few hundred lines at a time)."""
    if not summary.color:
        for line in _lines(summary):
            yield "".join(text for text, _ in line) + "\n"
        return
    from rich.console import Console
    from rich.text import Text

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=200, highlight=False, soft_wrap=True)
    for n, line in enumerate(_lines(summary), start=1):
        console.print(Text.assemble(*line))
        if n % 500 == 0:
            yield buf.getvalue()
            buf.seek(0)
            buf.truncate()
    yield buf.getvalue()


def _lines(summary: Summary) -> Iterator[Line]:
    for e in summary.errors:
        yield [("error", "bold red"), (f": {e.one_line()}", "")]
    for f in summary.findings:
        loc = f.location
        colour = "red" if f.severity == "error" else "yellow"
        yield [(f"{f.path}:{loc.line}:{loc.column}", "bold"), (": ", ""), (f.code, f"bold {colour}"), (f" {f.message}", "")]
        gutter = " " * len(str(loc.line))
        if f.source_line:
            width = (loc.end_column - loc.column) if loc.end_line == loc.line else len(f.source_line) - loc.column + 1
            yield [(f"{gutter} |", "blue")]
            yield [(f"{loc.line} |", "blue"), (f" {f.source_line}", "")]
            yield [(f"{gutter} |", "blue"), (" " + " " * (loc.column - 1), ""), (f"{'^' * max(1, width)} {f.name}", colour)]
        if f.fix:
            tag = "fix" if f.fix.safety.value == "safe" else "unsafe fix"
            yield [(f"{gutter} = {tag}:", "blue"), (f" {f.fix.description}", "")]
        yield []
    if summary.statistics:
        yield from _statistics(summary)
    for line in summary.identity:
        yield [(f"Identity: {line}.", "")]
    for line in summary.load_checks:
        yield [(f"Load check: {line}.", "")]
    if summary.knowledge:
        yield [(f"Framework knowledge applied: {'; '.join(summary.knowledge)}.", "")]
    from rlcompat.report import not_read_line, not_read_lines

    if summary.verbose:
        for line in not_read_lines(summary.not_read):
            yield [(line, "")]
    skipped = not_read_line(summary.not_read)
    if skipped:
        yield [(skipped, "")]
    if summary.run:
        from rlcompat.analysis.run_model import Split, not_reached_line

        yield [(f"Run: {summary.run}.", "")]
        line = not_reached_line(Split(summary.findings, summary.not_reached))
        if line:
            yield [(line, "")]
    yield [(_summary_line(summary), "")]


def _statistics(summary: Summary) -> Iterator[Line]:
    """Findings per rule, marked as Ruff marks them, by what is left: `[*]` some are fixable by `fix` as configured,
    `[u]` the rule's fixes left all need `--unsafe-fixes`, blank none has a fix."""
    counts = Counter((f.code, f.name) for f in summary.findings)
    now = Counter(f.code for f in summary.findings if f.fix and f.fix.applies(summary.unsafe_fixes))
    unsafe = Counter(f.code for f in summary.findings if f.fix and not f.fix.applies(summary.unsafe_fixes))
    for (code, name), n in sorted(counts.items()):
        mark = "[*]" if now[code] else "[u]" if unsafe[code] else "   "
        yield [(f"{n:>5}  {code:<7} {mark} {name}", "")]
    legend = []
    if now:
        legend.append(f"[*] fixable with {fix_hint(False, summary.fix_command)}")
    if unsafe:
        legend.append(f"[u] only with {fix_hint(True, summary.fix_command)}")
    if legend:
        yield [("; ".join(legend) + ".", "")]
    yield []


def _unknown_releases(summary: Summary) -> list[str]:
    """"verl 0.4.0's defaults" for each framework release a scanned tree runs that rlcompat has no knowledge
    of (FrameworkIdentity.exact): its defaults and dead keys are withheld, so an empty report promises nothing."""
    out = []
    for tree in summary.identity_json:
        for f in tree["frameworks"]:
            if not f["exact"] and f["how"] in ("release", "pinned") and f["version"]:
                phrase = f"{f['framework']} {f['version']}'s defaults"
                if phrase not in out:
                    out.append(phrase)
    return out


def _summary_line(summary: Summary) -> str:
    """One line of counts in which no finding is counted twice: what was fixed, then what is left, split into what
    `fix` can still do (and with which flag) so the parts add up to at most the whole."""
    t = summary.target
    where = f"{summary.files} file{'s' if summary.files != 1 else ''} for {t.name} ({t.capability_text}, {t.architecture})"
    n = len(summary.findings)
    parts = []
    # Not "all clear" nor "nothing remaining" where a release's defaults were withheld (the identity line says so).
    unjudged = _unknown_releases(summary)
    if summary.command == "fix":
        parts.append(f"Fixed {len(summary.fixed)} finding{'s' if len(summary.fixed) != 1 else ''}")
        left = f"{n} remaining" if n else "nothing remaining"
    elif n:
        left = f"Found {n} finding{'s' if n != 1 else ''}" + (" this run reaches" if summary.run else "")
    elif summary.errors:
        left = "No findings"  # not "all clear": some files could not be checked
    elif unjudged:
        left = "No findings"
    elif summary.run:
        left = "All clear for this run: no finding it reaches"
    else:
        left = "All clear: no findings"
    safe, unsafe_only = fixable_counts(summary.findings, summary.unsafe_fixes)
    fixable = []
    if summary.command == "scan" and safe:  # after `fix`, safe fixes left are those it could not write
        fixable.append(f"{safe} fixable with {fix_hint(False, summary.fix_command)}")
    if unsafe_only:
        fixable.append(f"{unsafe_only} {'more ' if safe else ''}fixable with {fix_hint(True, summary.fix_command)}")
    if summary.fail_on == "error" and n:
        errors = sum(1 for f in summary.findings if at_least(f.severity, "error"))
        fixable.append(f"{errors} of severity error" if errors else "none of severity error")
    if unjudged and not n:
        fixable.append(f"{' and '.join(unjudged)} not judged")
    parts.append(f"{left} ({', '.join(fixable)})" if fixable else left)
    if summary.suppressed:
        parts.append(f"{summary.suppressed} suppressed")
    if summary.errors:
        parts.append(f"{len(summary.errors)} file error{'s' if len(summary.errors) != 1 else ''}")
    return f"{', '.join(parts)} in {where}."
