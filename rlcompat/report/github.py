"""GitHub Actions workflow commands: each finding becomes an annotation on the pull request's diff."""

from __future__ import annotations

from typing import Iterator

from rlcompat.report import Summary


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(summary: Summary) -> str:
    return "".join(render_pieces(summary))


def render_pieces(summary: Summary) -> Iterator[str]:
    """One workflow command a line."""
    for e in summary.errors:
        where = f"file={_escape_property(e.path)}" + (f",line={e.line}" if e.line else "")
        yield f"::error {where},title=rlcompat::{_escape_data(e.message)}\n"
    for f in summary.findings:
        loc = f.location
        level = "error" if f.severity == "error" else "warning"
        props = (
            f"file={_escape_property(f.path)},line={loc.line},col={loc.column},"
            f"endLine={loc.end_line},endColumn={loc.end_column},title={_escape_property(f'{f.code} {f.name}')}"
        )
        yield f"::{level} {props}::{_escape_data(f'{f.code} {f.message}')}\n"
