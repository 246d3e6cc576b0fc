"""The Hydra overrides a launch script passes to verl's trainer, read with rlcompat's shell front end (no execution)."""

from __future__ import annotations

from pathlib import Path


class LaunchScriptError(Exception):
    """The script cannot be read or runs no verl trainer; the message is one line for the user."""


def main_ppo_overrides(script: Path) -> list[str]:
    """`[+|++|~]key=value` for each override of the script's first verl entry-point command, variables resolved.

    An override whose value the reader cannot resolve (a `$(...)`, a variable set elsewhere) is left out: the
    tiny run cannot know it, and verify reports the overrides it used.
    """
    from rlcompat.lang import shell
    from rlcompat.pipeline.scanned_file import ScannedFile
    from rlcompat.knowledge.identity import Identities

    try:
        text = Path(script).read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LaunchScriptError(f"{script}: cannot read the launch script ({exc})") from None
    try:
        parsed = shell.parse(text)
    except shell.ShellSyntaxError as exc:
        line, col, why = shell.syntax_error_location(exc)
        raise LaunchScriptError(f"{script}:{line}:{col}: not a shell script rlcompat can read ({why})") from None
    # The script's tree decides which verl reads its overrides (rlcompat/knowledge/identity.py).
    overrides = shell.entry_point_overrides(parsed, ScannedFile(str(script), Identities().for_path(str(script)), text))
    if overrides is not None:
        return [f"{s.prefix}{s.key}={s.value}" for s in overrides if s.value is not None]
    raise LaunchScriptError(f"{script}: no `python -m verl.trainer.main_ppo` (or other verl trainer) command found")
