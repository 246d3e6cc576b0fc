"""Machine output; the schema is documented in docs/output-formats.md and versioned by `schema_version`."""

from __future__ import annotations

import json
from typing import Iterator

from rlcompat.release import __version__
from rlcompat.discovery import UNKNOWN_TYPE
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
            "suppressed": summary.suppressed,
            "errors": len(summary.errors),
            "knowledge": summary.knowledge,
        },
        "findings": STREAMED,
        "errors": [error_dict(e) for e in summary.errors],
        # Files seen but not read, and why (discovery.discover); walked files of other types are only counted.
        "not_read": [{"path": p, "reason": why} for p, why in summary.not_read if why != UNKNOWN_TYPE],
        "not_read_other_types": sum(1 for _, why in summary.not_read if why == UNKNOWN_TYPE),
    }
    return dumps_pieces(doc, (finding_dict(f) for f in summary.findings))


# Stands for the one list of a document whose items are written one at a time (`dumps_pieces`).
_MARK = "\x00items written one at a time\x00"
STREAMED = [_MARK]


def dumps_pieces(doc: dict, items: Iterator) -> Iterator[str]:
    """`json.dumps(doc, indent=2, ensure_ascii=False) + "\\n"` in pieces, where `STREAMED` in `doc` is the list of
    `items`: each item is dumped alone, its lines indented as they are in the whole document (a string in JSON holds
    no line break), so that the items (a dict each finding: about 1 KB) never exist all at once."""
    text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    mark = json.dumps(_MARK)
    at = text.index(mark)
    indent = text[text.rindex("\n", 0, at) + 1 : at]  # of the list's items
    opened = text.rindex("[", 0, at)
    yield text[:opened]
    first = True
    for item in items:
        yield ("[\n" if first else ",\n") + indent + json.dumps(item, indent=2, ensure_ascii=False).replace("\n", "\n" + indent)
        first = False
    closed = text.index("]", at + len(mark))
    yield "[" + text[closed:] if first else text[at + len(mark):]
