"""Baselines: adopt the gate on an existing tree and fail only on new hazards.

A finding is identified by its rule, its file (relative to the baseline file) and a fingerprint of the
source line's text with whitespace removed, plus how many identical ones come before it in that file. Moving
code up or down, re-indenting it or editing other lines keeps the identity; changing the line itself does not.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from pathlib import Path

from rlcompat.findings import Finding

FORMAT = 1


class BaselineError(Exception):
    """The baseline file is missing or unreadable; the message names it."""


def _fingerprint(f: Finding) -> str:
    text = "".join(f.source_line.split())
    return hashlib.sha256(f"{f.code}\0{text}".encode()).hexdigest()[:16]


def _relative(path: str, base: Path) -> str:
    return Path(os.path.relpath(os.path.abspath(path), base)).as_posix()


def _keys(findings: list[Finding], base: Path) -> list[tuple[str, str, str, int]]:
    seen: Counter = Counter()
    keys = []
    for f in sorted(findings, key=Finding.sort_key):
        k = (f.code, _relative(f.path, base), _fingerprint(f))
        keys.append((*k, seen[k]))
        seen[k] += 1
    return keys


def write(path: str, findings: list[Finding], target: str) -> int:
    base = Path(os.path.abspath(path)).parent
    entries = [
        {"code": code, "path": rel, "fingerprint": fp, "occurrence": n}
        for code, rel, fp, n in _keys(findings, base)
    ]
    doc = {"format": FORMAT, "tool": "rlcompat", "target": target, "findings": entries}
    Path(path).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return len(entries)


def load(path: str) -> set[tuple[str, str, str, int]]:
    try:
        doc = json.loads(Path(path).read_text("utf-8"))
        if doc.get("format") != FORMAT:
            raise ValueError(f"format {doc.get('format')!r}")
        return {(e["code"], e["path"], e["fingerprint"], e["occurrence"]) for e in doc["findings"]}
    except FileNotFoundError as exc:
        raise BaselineError(f"{path}: no such baseline; create it with --write-baseline {path}") from exc
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise BaselineError(f"{path}: not an rlcompat baseline ({exc}); recreate it with --write-baseline") from exc


def new_findings(findings: list[Finding], path: str) -> tuple[list[Finding], int]:
    """Findings not in the baseline, and how many were matched by it."""
    known = load(path)
    base = Path(os.path.abspath(path)).parent
    ordered = sorted(findings, key=Finding.sort_key)
    fresh = [f for f, k in zip(ordered, _keys(ordered, base)) if k not in known]
    return fresh, len(ordered) - len(fresh)
