"""The config views a front end hands to its rules for a text, caught before any rule runs."""

from __future__ import annotations

from tests.verl_trees import verl_091_knowledge
from rlcompat.lang import shell


def config_views(module, text: str, path: str, target=None) -> list:
    """What `module` (a front end of rlcompat.lang) passes to `run_rules` for `text`."""
    captured = []
    original = module.run_rules
    module.run_rules = lambda views, *args: captured.extend(views) or []
    try:
        module.check(module.parse(text), text, path, [], target, scanned=verl_091_knowledge(path))
    finally:
        module.run_rules = original
    return captured


def shell_views(text: str, path: str = "run.sh") -> list:
    return config_views(shell, text, path)
