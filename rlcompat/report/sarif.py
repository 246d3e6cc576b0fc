"""SARIF 2.1.0, for GitHub code scanning and other CI dashboards."""

from __future__ import annotations

from typing import Iterator

from rlcompat.release import __version__
from rlcompat.report import Summary
from rlcompat.report.json_format import Streamed, dumps_pieces
from rlcompat.report.paths import uri_reference as _uri

_LEVEL = {"error": "error", "warning": "warning"}


def render(summary: Summary) -> str:
    return "".join(render_pieces(summary))


def render_pieces(summary: Summary) -> Iterator[str]:
    from rlcompat.rules import all_rules

    rules = list(all_rules())
    index = {r.code: i for i, r in enumerate(rules)}

    def result(f) -> dict:
        loc = f.location
        return {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": _LEVEL.get(f.severity, "warning"),
            "message": {"text": f.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": _uri(f.path)},
                        "region": {
                            "startLine": loc.line,
                            "startColumn": loc.column,
                            "endLine": loc.end_line,
                            "endColumn": max(loc.end_column, 1),
                        },
                    }
                }
            ],
            "properties": {"target": f.target, "fixable": f.fix is not None},
        }

    notifications = [
        {
            "level": "error",
            "message": {"text": e.message},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(e.path)}}}],
        }
        for e in summary.errors
    ]
    doc = {
        "$schema": "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "rlcompat",
                        "version": __version__,
                        "informationUri": "https://github.com/rlcompat/rlcompat",
                        "rules": [
                            {
                                "id": r.code,
                                "name": r.name,
                                "shortDescription": {"text": r.title},
                                "fullDescription": {"text": r.what},
                                "help": {"text": f"{r.why}\n\nFix safety: {r.fix_safety}"},
                                "defaultConfiguration": {"level": _LEVEL.get(r.severity, "warning")},
                                "properties": {"targets": r.targets()},
                            }
                            for r in rules
                        ],
                    }
                },
                "invocations": [
                    {"executionSuccessful": not summary.errors, "toolExecutionNotifications": notifications}
                ],
                "properties": {"target": summary.target.name},
                "results": Streamed(lambda: (result(f) for f in summary.findings), len(summary.findings)),
            }
        ],
    }
    return dumps_pieces(doc)
