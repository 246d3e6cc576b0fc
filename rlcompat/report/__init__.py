"""Output formats. Each module has `render(summary) -> str`; FORMATS maps `--output-format` names to them."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

from rlcompat.model import FileError, Finding
from rlcompat.targets import Target

FORMATS = {
    "text": "rlcompat.report.text",
    "json": "rlcompat.report.json_format",
    "sarif": "rlcompat.report.sarif",
    "github": "rlcompat.report.github",
}


@dataclass
class Summary:
    """Everything a report shows, for scan and fix alike."""

    command: str  # "scan" | "fix"
    target: Target
    findings: list[Finding]
    errors: list[FileError]
    files: int
    suppressed: int = 0
    fixed: list[Finding] = field(default_factory=list)
    unsafe_fixes: bool = False
    statistics: bool = False
    color: bool = False
    knowledge: list[str] = field(default_factory=list)  # framework knowledge applied: "verl 0.9.1", "OpenRLHF 0.11.2"


def render(format_name: str, summary: Summary) -> str:
    return importlib.import_module(FORMATS[format_name]).render(summary)


def fixable_counts(findings: list[Finding], unsafe_fixes: bool) -> tuple[int, int]:
    """(fixable by `fix` as configured, fixable only with --unsafe-fixes)."""
    safe = sum(1 for f in findings if f.fix and f.fix.applies(unsafe_fixes))
    unsafe_only = sum(1 for f in findings if f.fix and not f.fix.applies(unsafe_fixes))
    return safe, unsafe_only
