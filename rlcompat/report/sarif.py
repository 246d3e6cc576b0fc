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

    def result(f, why=None) -> dict:
        loc = f.location
        reached = {} if not summary.run else {"reached": why is None} if why is None else {
            "reached": False, "notReached": {"reason": why.reason, "detail": why.detail}}
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
            "properties": {"target": f.target, "fixable": f.fix is not None, **reached},
            # a finding the run does not reach is listed for the record, not as a problem of this run
            **({"level": "note"} if why is not None else {}),
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
                "results": Streamed(lambda: _results(summary, result), len(summary.findings) + len(summary.not_reached)),
            }
        ],
    }
    return dumps_pieces(doc)


def _results(summary: Summary, result):
    yield from (result(f) for f in summary.findings)
    yield from (result(f, why) for f, why in summary.not_reached)
