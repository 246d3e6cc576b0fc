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
    from rlcompat.file_knowledge import FileKnowledge

    try:
        text = Path(script).read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LaunchScriptError(f"{script}: cannot read the launch script ({exc})") from None
    try:
        parsed = shell.parse(text)
    except shell.ShellSyntaxError as exc:
        line, col, why = shell.syntax_error_location(exc)
        raise LaunchScriptError(f"{script}:{line}:{col}: not a shell script rlcompat can read ({why})") from None
    knowledge = FileKnowledge(str(script))
    variables = shell.Variables()
    for command in shell._commands(parsed):
        if not command.words:
            for a in command.assignments:
                variables.record(a)
            continue
        if command.words[0].text in ("export", "declare", "local", "readonly"):
            for w in command.words[1:]:
                variables.record(w)
            continue
        expanded = shell._expanded_words(command, variables)
        entry = shell._entry_index(expanded, knowledge)
        if entry is None:
            continue
        entry_word = expanded[entry][1]
        words = command.words[command.words.index(entry_word) + 1:]
        out = []
        for w in words:
            setting = shell._override(w, variables, None)
            if setting is not None and setting.value is not None:
                out.append(f"{setting.prefix}{setting.key}={setting.value}")
        return out
    raise LaunchScriptError(f"{script}: no `python -m verl.trainer.main_ppo` (or other verl trainer) command found")
