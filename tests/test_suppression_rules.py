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
