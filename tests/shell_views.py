"""The config views the shell front end hands to its rules for a script, caught before any rule runs."""

from __future__ import annotations

from rlcompat.file_knowledge import FileKnowledge
from rlcompat.lang import shell


def shell_views(text: str, path: str = "run.sh") -> list:
    captured = []
    original = shell.run_rules
    shell.run_rules = lambda views, *args: captured.extend(views) or []
    try:
        shell.check(shell.parse(text), text, path, [], None, knowledge=FileKnowledge(path))
    finally:
        shell.run_rules = original
    return captured
