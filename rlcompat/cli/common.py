"""What every command shares: exit codes, output formats, settings from the command line, errors and output.

Commands (scan, fix, doctor, verify, ...) import from here, never each other's privates.
"""

from __future__ import annotations

import sys
from enum import Enum
from typing import Iterable, List, Optional

import typer

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report Ctrl-C


class OutputFormat(str, Enum):
    text = "text"
    json = "json"
    sarif = "sarif"
    github = "github"


def fail(message: str) -> typer.Exit:
    """Print a one-line error on stderr; the caller raises the returned Exit (exit code 2)."""
    typer.echo(f"rlcompat: error: {message}", err=True)
    return typer.Exit(EXIT_ERROR)


def split_codes(values: Optional[List[str]]) -> Optional[tuple[str, ...]]:
    if not values:
        return None
    return tuple(c.strip().upper() for v in values for c in v.split(",") if c.strip())


class FailOn(str, Enum):
    error = "error"
    warning = "warning"


def run_settings(paths, config, select, ignore, extend_exclude, force_exclude, unsafe_fixes=None, fail_on=None):
    """[tool.rlcompat] for `paths` (or `config`) with the command line's options laid over it."""
    from rlcompat.config import ConfigError, load_options

    try:
        settings = load_options(list(paths), config)
    except ConfigError as exc:
        raise fail(str(exc))
    ext = tuple(settings.extend_exclude) + tuple(extend_exclude or ())
    return settings.with_overrides(
        select=split_codes(select),
        ignore=split_codes(ignore),
        extend_exclude=ext or None,
        force_exclude=force_exclude or None,
        unsafe_fixes=unsafe_fixes or None,
        fail_on=fail_on.value if fail_on is not None else None,
    )


def failing(findings, errors, fail_on: str) -> bool:
    """Whether what is left makes `scan`/`fix` exit 1: a file that could not be checked, or a finding of severity
    `fail_on` or above (findings.SEVERITIES)."""
    from rlcompat.findings import at_least

    return bool(errors) or any(at_least(f.severity, fail_on) for f in findings)


def nothing_to_check(paths) -> typer.Exit:
    """The one-line error for a run that found no file to read under `paths` (a wrong path passes CI otherwise)."""
    from rlcompat.lang.languages import readable_nouns

    where = ", ".join(paths)
    return fail(f"no files to check in {where}: nothing there is a file rlcompat reads ({readable_nouns()}), or "
                "every file is excluded; check the path and the excludes, or pass --allow-empty to accept an empty run")


def emit(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def emit_pieces(pieces: Iterable[str]) -> None:
    """Write a report as it is built (`report.render_pieces`), a thousand pieces a write: the whole text of a big
    report, and the objects it is built from, never exist at once."""
    batch: list[str] = []
    for piece in pieces:
        batch.append(piece)
        if len(batch) == 1000:
            sys.stdout.write("".join(batch))
            batch.clear()
    sys.stdout.write("".join(batch))
    sys.stdout.flush()
