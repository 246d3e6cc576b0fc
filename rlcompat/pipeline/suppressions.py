"""Inline suppressions: `# rlcompat: ignore[RLC101, RLC2]` (codes or prefixes) or `# rlcompat: ignore` (all).

The comment silences findings whose range includes its line, in every language (`#` starts a comment in all
that have comments). In Python only real comments count; in languages whose commands continue over backslash
lines, a comment after the last line covers the command (`python_comments` and `continued_command` of the
language's record in rlcompat/lang/languages.py). A suppression that silences nothing is reported by a
`SuppressionRule` (RLC001, rules/meta/unused_suppression.py).
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

from rlcompat.lang.languages import BY_NAME
from rlcompat.findings import Finding
from rlcompat.rule import Rule
from rlcompat.lang.textpos import LineIndex

PATTERN = re.compile(r"#\s*rlcompat:\s*ignore(?:\[([A-Za-z0-9_,\s]*)\])?", re.IGNORECASE)


@dataclass
class Suppression:
    line: int
    column: int  # 1-based
    codes: tuple[str, ...]  # empty: every code
    used: set[str] = field(default_factory=set)
    first_line: int = 0  # a shell comment ending a `\`-continued command covers the command's lines from here

    @property
    def lines(self) -> range:
        return range(self.first_line or self.line, self.line + 1)

    def covers(self, code: str) -> bool:
        return not self.codes or any(code.startswith(c) for c in self.codes)


def find(text: str, language: str) -> list[Suppression]:
    if "rlcompat" not in text:
        return []
    lang = BY_NAME.get(language)
    if lang is not None and lang.python_comments:
        return _from_python_comments(text)
    out = []
    index = LineIndex(text)
    for m in PATTERN.finditer(text):
        line, col = index.position(m.start())
        first = line
        if lang is not None and lang.continued_command:
            # A comment cannot sit inside a continued command, only after its last line: it covers all of them.
            while first > 1 and index.line_text(first - 1).rstrip().endswith("\\"):
                first -= 1
        out.append(Suppression(line, col + 1, _codes(m.group(1)), first_line=first))
    return out


def _codes(group: str | None) -> tuple[str, ...]:
    if not group:
        return ()
    return tuple(c.strip().upper() for c in group.split(",") if c.strip())


def _from_python_comments(text: str) -> list[Suppression]:
    # Only real comments count: the same text inside a string literal suppresses nothing.
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                m = PATTERN.search(tok.string)
                if m:
                    out.append(Suppression(tok.start[0], tok.start[1] + m.start() + 1, _codes(m.group(1))))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return out


def apply(findings: list, suppressions: list[Suppression]) -> tuple[list, int]:
    """Drop suppressed findings; returns what is left and how many were suppressed."""
    if not suppressions:
        return findings, 0
    by_line: dict[int, list[Suppression]] = {}
    for s in suppressions:
        for line in s.lines:
            by_line.setdefault(line, []).append(s)
    kept, dropped = [], 0
    for f in findings:
        hit = None
        for line in range(f.location.line, f.location.end_line + 1):
            hit = next((s for s in by_line.get(line, ()) if s.covers(f.code)), None)
            if hit:
                break
        if hit:
            hit.used.add(f.code)
            dropped += 1
        else:
            kept.append(f)
    return kept, dropped


class SuppressionRule(Rule):
    """A rule over a file's inline suppressions, run for each target once the other rules' findings are suppressed
    (what it reports is not itself suppressed), in a file of each language it declares."""

    def check_suppressions(self, suppressions: list[Suppression], active_codes: set[str], path: str) -> list[Finding]:
        """Findings about `suppressions` (each with the codes it silenced, `used`) in the file at `path`;
        `active_codes`: the codes of the rules that ran for the target (selected, applying to it)."""
        raise NotImplementedError

    def still_holds(self, finding: Finding, suppression: Suppression) -> bool:
        """Whether `finding`, which this rule reported about `suppression`, still holds now that the suppression has
        silenced more (`suppression.used`: the codes of findings reported after the file's check, at a launch
        command for what its run reaches: rlcompat/analysis/launch_path.py)."""
        return True
