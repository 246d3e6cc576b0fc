"""One hazard, one finding: which of several rules' findings on the same characters stands. The rule-runner layer's
decision, not a front end's: front ends hand the findings over through `scanned` (rlcompat/pipeline/scanned_file.py),
and only this module asks the catalog which rules could have reported.

- Among config rules (`outranked`): a rule of lower `precedence` (0 a rule written for its hazard, 1 one driven by
  framework knowledge, 2 the net) claims the characters it reports or edits, so data never repeats what a written
  rule says.
- In a Python file (`settle`): where a config rule (over the file's settings, lang/pysettings.py) and a Python rule
  (over its LibCST tree) report the same hazard, the Python rule's finding stands.
"""

from __future__ import annotations

import bisect
import itertools
from typing import Sequence

from rlcompat.findings import Finding
from rlcompat.pipeline.catalog import can_match_text


def outranked(pending: Sequence, anchors: set[tuple[int, int]]) -> list[bool]:
    """For each pending config-rule finding (its rule, span and fix), whether a rule of lower precedence claims
    characters it reports or its fix edits. A command's entry word (`anchors`) anchors findings about different
    missing keys: those never replace each other."""
    claims = [(p.rule.precedence, _ranges(p)) for p in pending]
    return [(p.span.start, p.span.end) not in anchors
            and any(precedence < p.rule.precedence and _overlap(ranges, _ranges(p)) for precedence, ranges in claims)
            for p in pending]


def _ranges(p) -> list[tuple[int, int]]:
    return [(p.span.start, p.span.end)] + ([(e.start, e.end) for e in p.fix.edits] if p.fix else [])


def _overlap(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> bool:
    return any(s1 < e2 and s2 < e1 or s1 == s2 for s1, e1 in a for s2, e2 in b)


def settle(config_found: list[Finding], python_found: list[Finding], text: str, path: str, target, ran: Sequence,
           scanned) -> list[Finding]:
    """The findings of `config_found` (config rules over the Python `text`) that no Python rule for `target` reports
    already: those that ran (`ran`, which found `python_found`) and those the run left out although their triggers
    are in `text`. Overlaps are judged against every Python rule for the target, selected or not: `--ignore RLC201`
    or `# rlcompat: ignore[RLC201]` must not bring the same hazard back under a config rule's code."""
    if not config_found:
        return config_found
    return drop_overlaps(config_found, python_found + _unselected_python_findings(text, path, target, ran, scanned))


def _unselected_python_findings(text: str, path: str, target, ran: Sequence, scanned) -> list[Finding]:
    """Findings of the Python rules for the target that did not run here although their triggers are in `text`
    (deselected with --ignore/--select/per-file-ignores): usually none, and then nothing is parsed."""
    from rlcompat.lang import python
    from rlcompat.lang.pyspeed import plain
    from rlcompat.lang.settings import ConfigRule
    from rlcompat.rules import file_rules

    codes = {r.code for r in ran}
    rules = [cls(target) for cls in file_rules() if "python" in cls.languages and not issubclass(cls, ConfigRule)
             and cls.code not in codes and cls.applies_to(target) and can_match_text(cls, "python", text, plain())]
    if not rules:
        return []
    try:
        return python.check_python(python.parse(text), text, path, rules, target, scanned=scanned)
    except (python.PythonSyntaxError, RecursionError):
        return []


def drop_overlaps(config_findings: list, python_findings: list) -> list:
    """Config-rule findings about a hazard no Python rule of the same family reported already (one hazard, one
    finding): dropped when its fix edits a range such a Python rule's fix edits, or, without a fix, when one reports
    on its line."""
    if not python_findings:
        return config_findings
    by_family: dict = {}

    def indexed(family):
        # One hazard is one family's (RLC1xx dtype, RLC4xx rollout, ...): RLC111's finding on `GRPOConfig(...)` (bf16
        # left at its default) does not stand for RLC404's `use_vllm=True` inside the same call. The net (RLC0xx)
        # reads names of every family, so it yields to all of them (family None).
        if family not in by_family:
            same = python_findings if family is None else [p for p in python_findings if p.code[:4] == family]
            edited = _Intervals((e.start, e.end) for p in same if p.fix for e in p.fix.edits)
            reported = _Intervals(((p.location.line, p.location.column), (p.location.end_line, p.location.end_column))
                                  for p in same)
            by_family[family] = (edited, {start for start, _ in edited.spans}, {p.location.line for p in same},
                                 reported)
        return by_family[family]

    def covered(f) -> bool:
        edited, edited_starts, lines, reported = indexed(None if f.code.startswith("RLC0") else f.code[:4])
        if f.fix is None:
            return f.location.line in lines
        # Inside what a Python rule reported (`bf16=True`, which RLC103 renames to `fp16=True`): the same setting,
        # whose fixes would otherwise combine (the key renamed by one, the value flipped by the other).
        if reported.any_holding((f.location.line, f.location.column)):
            return True
        return any(edited.any_overlapping(e.start, e.end) or e.start in edited_starts for e in f.fix.edits)

    return [f for f in config_findings if not covered(f)]


class _Intervals:
    """Closed intervals, asked which hold a point or overlap a range in log time: a file with as many config
    findings as Python findings made the one-by-one comparison quadratic."""

    def __init__(self, spans) -> None:
        self.spans = sorted(spans)
        self._starts = [start for start, _ in self.spans]
        self._reach = list(itertools.accumulate((end for _, end in self.spans), max))  # furthest end so far

    def any_holding(self, point) -> bool:
        """Some start <= point <= end."""
        i = bisect.bisect_right(self._starts, point)
        return i > 0 and self._reach[i - 1] >= point

    def any_overlapping(self, start, end) -> bool:
        """Some interval with its start < end and its end > start."""
        i = bisect.bisect_left(self._starts, end)
        return i > 0 and self._reach[i - 1] > start
