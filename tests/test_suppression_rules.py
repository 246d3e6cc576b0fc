"""Rules over inline suppressions (RLC001) run where they declare, as every rule does: in the languages they list."""

from __future__ import annotations

import pytest

from rlcompat.api import check_text
from rlcompat.config import Options
from rlcompat.lang.frontends import FRONTENDS
from rlcompat.knowledge.targets import resolve_target
from rlcompat.rules.meta.unused_suppression import UnusedSuppression

SM61 = resolve_target("sm61")
STALE = {  # a file of each kind whose suppression silences nothing
    "python": ("a.py", "x = 1  # rlcompat: ignore[RLC101]\n"),
    "yaml": ("a.yaml", "a: 1  # rlcompat: ignore[RLC101]\n"),
    "requirements": ("requirements.txt", "numpy==1.26.4  # rlcompat: ignore[RLC101]\n"),
    "dockerfile": ("Dockerfile", "FROM python:3.11  # rlcompat: ignore[RLC101]\n"),
}


def _codes(language: str) -> list[str]:
    path, text = STALE[language]
    return [f.code for f in check_text(text, SM61, path, language, Options()).findings]


@pytest.mark.parametrize("language", sorted(STALE))
def test_a_stale_suppression_is_reported_in_a_file_of_each_language(language):
    assert _codes(language) == ["RLC001"]


def test_rlc001_declares_every_language_a_suppression_is_read_in():
    assert UnusedSuppression.languages == frozenset(FRONTENDS)


def test_a_suppression_rule_runs_only_in_the_languages_it_declares(monkeypatch):
    monkeypatch.setattr(UnusedSuppression, "languages", frozenset({"python"}))
    assert _codes("python") == ["RLC001"]
    assert _codes("yaml") == [] and _codes("dockerfile") == []


def test_rlc001_says_whether_its_finding_holds_once_its_suppression_silences_more():
    # A launch command's findings for what its run reaches are suppressed after the file's check (launch_path.py).
    from rlcompat.pipeline.suppressions import Suppression

    rule = UnusedSuppression(SM61)
    two = Suppression(1, 8, ("RLC101", "RLC2"))
    (finding,) = rule.check_suppressions([two], {"RLC101", "RLC201"}, "a.sh")
    assert "RLC101, RLC2" in finding.message
    two.used.add("RLC201")
    assert rule.still_holds(finding, two)  # RLC101 still silences nothing
    two.used.add("RLC101")
    assert not rule.still_holds(finding, two)
    every = Suppression(1, 8, ())
    (finding,) = rule.check_suppressions([every], {"RLC101"}, "a.sh")
    every.used.add("RLC201")
    assert not rule.still_holds(finding, every)
