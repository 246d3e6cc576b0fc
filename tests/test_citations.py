"""Every source a user is shown (`rlcompat rule CODE`, `rlcompat targets NAME`, the generated docs) can be followed
outside this project: a URL, a file:line of a named release, or words saying what the fact rests on. References
into a private search index ("stored copy, index id 154925696") cannot, and are refused here."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from rlcompat.cli.app import app
from rlcompat.rules import all_rules
from rlcompat.knowledge.targets import all_targets, sources

INTERNAL = re.compile(r"index ids?\b|stored (?:mirror )?cop(?:y|ies)|stored (?:third-party )?analysis|in the index\b",
                      re.IGNORECASE)


def test_the_pattern_catches_the_references_it_exists_for():
    for text in ("current main text (stored copy, index id 154925696)", "(stored copies, e.g. index id 132281381)",
                 "(index ids 10326514637, 6868575260)", "The same code is in the `pynvml.py` copies in the index."):
        assert INTERNAL.search(text), text
    assert not INTERNAL.search("torch 2.13.0 `torch/_inductor/exc.py:143` https://github.com/pytorch/pytorch")


def test_no_source_in_the_table_is_an_internal_reference():
    bad = {tag: INTERNAL.search(text).group(0) for tag, text in sources().items() if INTERNAL.search(text)}
    assert bad == {}


def _cli(*args: str) -> str:
    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("code", sorted({r.code for r in all_rules() if r.sources}))
def test_rule_explanations_cite_only_followable_sources(code):
    out = _cli("rule", code)
    assert "## Sources" in out
    assert not INTERNAL.search(out), INTERNAL.search(out).group(0)


@pytest.mark.parametrize("name", [t.name for t in all_targets()])
def test_target_profiles_cite_only_followable_sources(name):
    out = _cli("targets", name)
    assert "Sources:" in out
    assert not INTERNAL.search(out), INTERNAL.search(out).group(0)


def test_the_generated_pages_cite_only_followable_sources():
    from pathlib import Path

    docs = Path(__file__).resolve().parents[1] / "docs"
    pages = [*sorted((docs / "rules").glob("*.md")), docs / "precision.md", docs / "troubleshooting.md"]
    bad = {p.name: m.group(0) for p in pages if (m := INTERNAL.search(p.read_text("utf-8")))}
    assert bad == {}
