"""The data model shared by every front end, rule and report: edits, fixes, findings, a file's result."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


# A finding's severity, lowest first. "error": breaks at run time on the target (`matrix` counts it as a blocker or
# a fix to make); "warning": slow, fragile or stale, not stopping the run (`matrix` counts it as a note).
# `--fail-on SEVERITY` makes `scan` and `fix` exit 1 only for findings of that severity or above.
SEVERITIES = ("warning", "error")


def at_least(severity: str, threshold: str) -> bool:
    """Whether `severity` is `threshold` or above (an unknown severity counts as the lowest)."""
    rank = SEVERITIES.index(severity) if severity in SEVERITIES else 0
    return rank >= SEVERITIES.index(threshold)


class FixSafety(str, Enum):
    SAFE = "safe"  # keeps the program's meaning on the target (e.g. bf16 -> fp32: same math, more precision)
    UNSAFE = "unsafe"  # may change numerics or behaviour (e.g. bf16 -> fp16: smaller range); needs --unsafe-fixes


# Edits, fixes, locations and findings have slots, not a dict each: a file can have 100,000 findings, and each
# one's objects cost about a third less so (docs/performance.md, issue 15).
@dataclass(frozen=True, order=True, slots=True)
class Edit:
    """Replace text[start:end] (character offsets into the decoded file) with `content`."""

    start: int
    end: int
    content: str


@dataclass(frozen=True, slots=True)
class Fix:
    edits: tuple[Edit, ...]
    safety: FixSafety
    description: str  # "use torch.float32"

    def applies(self, unsafe_fixes: bool) -> bool:
        return self.safety is FixSafety.SAFE or unsafe_fixes


@dataclass(frozen=True, slots=True)
class Location:
    line: int  # 1-based
    column: int  # 1-based, in characters
    end_line: int
    end_column: int


@dataclass(frozen=True, slots=True)
class Finding:
    code: str  # "RLC101"
    name: str  # "bf16-dtype"
    message: str
    path: str  # as given or discovered, with forward slashes
    location: Location
    target: str  # "sm61"
    severity: str = "error"  # one of SEVERITIES
    fix: Fix | None = None
    source_line: str = field(default="", compare=False)  # the first line of the finding, for reports

    def sort_key(self) -> tuple:
        return (self.path, self.location.line, self.location.column, self.code)


@dataclass(frozen=True)
class FileError:
    """A file that could not be read or parsed: reported, never fatal for the rest of the run."""

    path: str
    message: str
    line: int | None = None
    column: int | None = None

    def one_line(self) -> str:
        where = f"{self.path}:{self.line}:{self.column}" if self.line else self.path
        return f"{where}: {self.message}"


@dataclass
class FileResult:
    """What checking one file gave: its findings or its error (pipeline/runner.py makes them; the cache stores them)."""

    path: str
    language: str
    findings: list[Finding] = field(default_factory=list)
    error: FileError | None = None
    suppressed: int = 0
    parsed: bool = False  # parsed in this run (False when answered from the cache)
    from_cache: bool = False
    content_sha: str | None = None  # SHA-256 of the bytes checked, for the cache
    reads_other_files: bool = False  # a rule read another file (a model's config.json): never cached
