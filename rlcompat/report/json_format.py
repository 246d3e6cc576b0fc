"""Machine output; the schema is documented in docs/output-formats.md and versioned by `schema_version`."""

from __future__ import annotations

import json
from typing import Callable, Iterator

from rlcompat.release import __version__
from rlcompat.pipeline.discovery import UNKNOWN_TYPE
from rlcompat.findings import SEVERITIES
from rlcompat.report import Summary, fixable_counts
from rlcompat.report.paths import display_path, uri_reference

SCHEMA_VERSION = 1


def finding_dict(f) -> dict:
    loc = f.location
    return {
        "code": f.code,
        "name": f.name,
        "message": f.message,
        "severity": f.severity,
        "path": display_path(f.path),
        "uri": uri_reference(f.path),
        "line": loc.line,
        "column": loc.column,
        "end_line": loc.end_line,
        "end_column": loc.end_column,
        "target": f.target,
        "fix": None
        if f.fix is None
        else {
            "safety": f.fix.safety.value,
            "description": f.fix.description,
            "edits": [{"start": e.start, "end": e.end, "content": e.content} for e in f.fix.edits],
        },
    }


def _findings(summary: Summary):
    """The findings; under `--run`, those the run reaches (`reached`: true) then the rest, each with why not."""
    if not summary.run:
        yield from (finding_dict(f) for f in summary.findings)
        return
    yield from ({**finding_dict(f), "reached": True} for f in summary.findings)
    yield from ({**finding_dict(f), "reached": False, "not_reached": {"reason": why.reason, "detail": why.detail}}
                for f, why in summary.not_reached)


def error_dict(e) -> dict:
    return {"path": display_path(e.path), "uri": uri_reference(e.path), "line": e.line, "column": e.column, "message": e.message}


def render(summary: Summary) -> str:
    return "".join(render_pieces(summary))


def render_pieces(summary: Summary) -> Iterator[str]:
    t = summary.target
    safe, unsafe_only = fixable_counts(summary.findings, summary.unsafe_fixes)
    doc = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "rlcompat", "version": __version__},
        "command": summary.command,
        "target": {"name": t.name, "capability": t.capability_text, "architecture": t.architecture},
        "summary": {
            "files": summary.files,
            "findings": len(summary.findings),
            "fixable": safe,
            "fixable_with_unsafe_fixes": unsafe_only,
            "fixed": len(summary.fixed),
            "severities": {s: sum(1 for f in summary.findings if f.severity == s) for s in reversed(SEVERITIES)},
            "fail_on": summary.fail_on,
            "suppressed": summary.suppressed,
            "errors": len(summary.errors),
            "knowledge": summary.knowledge,
            **({"not_reached": len(summary.not_reached)} if summary.run else {}),
        },
        **({"run": summary.run} if summary.run else {}),
        # Per scanned tree, the framework releases its code was judged with and the evidence (rlcompat/knowledge/identity.py).
        "identity": summary.identity_json,
        "load_checks": summary.load_checks,
        "findings": Streamed(lambda: _findings(summary), len(summary.findings) + len(summary.not_reached)),
        "errors": [error_dict(e) for e in summary.errors],
        # Files seen but not read, and why (discovery.discover); walked files of other types are only counted.
        "not_read": [{"path": p, "reason": why} for p, why in summary.not_read if why != UNKNOWN_TYPE],
        "not_read_other_types": sum(1 for _, why in summary.not_read if why == UNKNOWN_TYPE),
    }
    return dumps_pieces(doc)


class Streamed(list):
    """A list in a document for `dumps_pieces` whose items are built as the encoder reaches each one and dropped once
    it is written (a dict a finding: about 1 KB each), never all held at once: `JSONEncoder.iterencode` encodes in
    Python (the C encoder, which reads a list's items directly, serves only `encode`) and iterates a list with `for`."""

    def __init__(self, items: Callable[[], Iterator], count: int) -> None:
        super().__init__()
        self._items, self._count = items, count

    def __iter__(self) -> Iterator:
        return self._items()

    def __len__(self) -> int:
        return self._count


def dumps_pieces(doc: dict) -> Iterator[str]:
    """`json.dumps(doc, indent=2, ensure_ascii=False) + "\\n"` in pieces, as the encoder makes them: its lists may be
    `Streamed`. One encoder for the whole document: `json.dumps` of each item alone makes the encoder's functions
    anew each time, in reference cycles that a CLI run, with the cyclic collector off, never frees (250 MB for
    100,000 findings)."""
    yield from json.JSONEncoder(indent=2, ensure_ascii=False).iterencode(doc)
    yield "\n"
