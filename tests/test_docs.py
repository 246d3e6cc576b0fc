"""Generated docs must match the rule catalog: regenerate with `python -m rlcompat.docs docs/rules`."""

from __future__ import annotations

from pathlib import Path

from rlcompat.docs import index_markdown, rule_markdown
from rlcompat.rules import all_rules

DOCS = Path(__file__).resolve().parents[1] / "docs" / "rules"


def test_rule_pages_are_current():
    stale = []
    for rule in all_rules():
        page = DOCS / f"{rule.code}.md"
        if not page.exists() or page.read_text("utf-8") != rule_markdown(rule):
            stale.append(rule.code)
    assert not stale, f"docs/rules is stale for {stale}: run `python -m rlcompat.docs docs/rules`"


def test_rule_index_is_current():
    assert (DOCS / "README.md").read_text("utf-8") == index_markdown(all_rules())


def test_no_orphan_rule_pages():
    codes = {r.code for r in all_rules()}
    orphans = [p.name for p in DOCS.glob("RLC*.md") if p.stem not in codes]
    assert not orphans, f"pages for rules that no longer exist: {orphans}"
