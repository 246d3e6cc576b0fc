"""The runner of config rules: front ends turn a file into `ConfigView`s (lang/settings.py) and hand them here through
`ScannedView.run_config_rules`; which findings are kept (precedence, one per line across mounts, options no entry
config selects) is decided here, not in a front end."""

from __future__ import annotations

from typing import Sequence

from rlcompat.findings import Finding, Location
from rlcompat.lang.keypath import is_under_prefixes
from rlcompat.lang.scanned import ScannedView
from rlcompat.lang.settings import ConfigContext, ConfigRule, ConfigView
from rlcompat.lang.textpos import LineIndex


def run_config_rules(views: Sequence[ConfigView], text: str, path: str, rules: Sequence[ConfigRule], target,
                     scanned: ScannedView) -> list[Finding]:
    """The findings of config `rules` over a front end's `views` of the file at `path`. Views of what the front end
    could not read (kind "unread") go to the rules that watch for such text (`reads_unread`) and only to them, in a
    run of their own; every other view goes to the other rules."""
    unread = [v for v in views if v.kind == "unread"]
    found = _run([v for v in views if v.kind != "unread"], text, path, [r for r in rules if not r.reads_unread],
                 target, scanned)
    watchers = [r for r in rules if r.reads_unread]
    return found + _run(unread, text, path, watchers, target, scanned) if unread and watchers else found


def _run(views: Sequence[ConfigView], text: str, path: str, rules: Sequence[ConfigRule], target,
         scanned: ScannedView) -> list[Finding]:
    """Each rule checks each view through one ConfigContext; what they report is kept unless a rule of lower
    precedence claims it (overlaps.py), it repeats at a line another mount of the same file reported, or it sits
    under an option no shipped entry config selects."""
    if not views or not rules:
        return []
    ctx = ConfigContext(target, path, scanned.for_rules, text, scanned.framework, scanned.model_shape,
                        scanned.record_reads, scanned)
    for view in views:
        if view.kind == "command" and view.is_verl:
            view._gate = scanned.spell_added_key
        for rule in rules:
            ctx._rule = rule
            rule.check_config(view, ctx)
    if not ctx.pending:
        return []
    index = LineIndex(text)
    findings, seen = [], set()
    unused = _unused_defaults(views, ctx.pending, scanned)
    unselected = scanned.unselected_prefixes
    lines = text.splitlines() if unselected else []
    # Which findings a rule of lower precedence claims already: the runner's layer decides (rlcompat/pipeline/overlaps.py).
    anchors = {(v.anchor.start, v.anchor.end) for v in views if v.anchor is not None}
    for p, outranked in zip(ctx.pending, scanned.outranked(ctx.pending, anchors)):
        if outranked:
            continue  # a more specific rule reports this setting already (its key, its value or what a fix edits)
        # One YAML file can be mounted at several places (engine/fsdp.yaml: actor, ref, critic): one finding per
        # line, not one per mount. Findings about different keys at one anchor (a script's missing overrides) stay.
        if (p.rule.code, p.span.start, p.message) in seen:
            continue
        if unselected and is_under_prefixes(unselected, lines, index.position(p.span.start)[0]):
            continue  # verl's own setting of an option no shipped entry config selects (knowledge/verl_own_files.py)
        if any(start <= p.span.start < end for start, end in unused):
            continue  # a class default every subclass of the tree sets itself: no run gets it
        seen.add((p.rule.code, p.span.start, p.message))
        line, col = index.position(p.span.start)
        end_line, end_col = index.position(max(p.span.start, p.span.end))
        findings.append(
            Finding(
                code=p.rule.code,
                name=p.rule.name,
                message=p.message,
                path=path,
                location=Location(line, col + 1, end_line, end_col + 1),
                target=target.name,
                severity=p.severity or p.rule.severity,
                fix=p.fix,
                source_line=index.line_text(line),
            )
        )
    return findings


def _unused_defaults(views: Sequence[ConfigView], pending, scanned: ScannedView) -> list[tuple[int, int]]:
    """The text ranges of class-body field defaults (`python-field` settings) that a pending finding falls in and
    that no run of the tree gets: every subclass sets the field itself (rlcompat/analysis/class_overrides.py)."""
    fields = [s for v in views if v.kind == "python" for s in v.settings if s.origin == "python-field" and s.call]
    if not fields:
        return []
    out = []
    for s in fields:
        end = max(s.key_span.end, s.value_span.end if s.value_span else 0)
        if any(s.key_span.start <= p.span.start < end for p in pending) and \
                scanned.overridden_default(s.call.rsplit(".", 1)[-1], s.key):
            out.append((s.key_span.start, end))
    return out
