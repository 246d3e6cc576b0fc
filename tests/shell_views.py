"""The config views a front end hands to its rules for a text, caught before any rule runs."""

from __future__ import annotations

from tests.verl_trees import verl_091_knowledge
from rlcompat.lang import shell


def config_views(module, text: str, path: str, target=None) -> list:
    """What `module` (a front end of rlcompat.lang) hands the runner's config rules (`scanned.run_config_rules`)
    for `text`."""
    captured = []
    module.check(module.parse(text), text, path, [], target, scanned=CatchingViews(verl_091_knowledge(path), captured))
    return captured


class CatchingViews:
    """A scanned file that keeps the views handed to its config rules, and runs none."""

    def __init__(self, scanned, captured: list) -> None:
        self._scanned, self._captured = scanned, captured

    def run_config_rules(self, views, *args) -> list:
        self._captured.extend(views)
        return []

    def __getattr__(self, name: str):
        return getattr(self._scanned, name)


def shell_views(text: str, path: str = "run.sh") -> list:
    return config_views(shell, text, path)
