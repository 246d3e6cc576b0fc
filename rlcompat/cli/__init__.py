"""The command line. `app.py`: the typer app with scan, fix, rules, rule, targets and --version, and the line that
registers each other command; `common.py`: what every command shares (exit codes, output formats, fail/emit,
settings from the command line); `matrix.py`: `rlcompat matrix`. doctor, verify and server keep their commands in their
own packages (doctor/command.py, verify/command.py, server/command.py). Command modules import `common` only, so this package's import
pulls in no command: `main` loads the app when it runs.
"""

from __future__ import annotations


def main() -> None:
    """The `rlcompat` entry point."""
    from rlcompat.lang.pyspeed.hooks import collector_off

    with collector_off():  # from the first import on: typer's and the app's objects are not walked again and again
        from rlcompat.cli.app import main as run_app

        run_app()
