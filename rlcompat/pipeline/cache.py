"""Per-file results cached by content, so an unchanged tree is re-scanned without parsing anything.

A cache file holds one run configuration: rlcompat's version, a fingerprint of its own code and rule catalog,
the target and the rule selection. Inside, each file's entry is keyed by its path and the SHA-256 of its bytes,
so an edited file, a new rlcompat, a changed rule or another target can never be answered from a stale entry.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from functools import lru_cache
from importlib import resources
from pathlib import Path

from rlcompat.release import __version__
from rlcompat.findings import Edit, FileError, FileResult, Finding, Fix, FixSafety, Location

FORMAT = 1


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A hash of every module and data file of rlcompat and its rule catalog (rules, knowledge, targets, sources),
    at any depth: a changed rule in a family folder or a new knowledge file must invalidate cached results."""
    digest = hashlib.sha256()
    for package in ("rlcompat", "rlcompat.rules"):
        for rel, entry in sorted(_code_files(resources.files(package), ""), key=lambda item: item[0]):
            digest.update(f"{package}/{rel}".encode())
            digest.update(_stamp(entry))
    return digest.hexdigest()[:20]


def _stamp(entry) -> bytes:
    """Size and modification time where the file is on disk (as CPython's .pyc check: reading 220 files on every
    warm run cost 14 ms), its bytes inside a zip."""
    if isinstance(entry, Path):
        st = entry.stat()
        return f"{st.st_size}:{st.st_mtime_ns}".encode()
    return entry.read_bytes()


def _code_files(folder, prefix: str):
    for entry in folder.iterdir():
        if entry.is_dir():
            if entry.name != "__pycache__" and not (prefix == "" and entry.name == "rules"):
                # rlcompat/rules/ of an installed wheel is walked as the package rlcompat.rules
                yield from _code_files(entry, f"{prefix}{entry.name}/")
        elif entry.name.endswith((".py", ".toml")):
            yield f"{prefix}{entry.name}", entry


def content_hash(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def installed_verl_version() -> str | None:
    from rlcompat.knowledge.identity import installed_version

    return installed_version("verl")


def run_key(target_name: str, settings, identities: str = "") -> str:
    """`identities`: the scanned trees' framework identities (rlcompat/knowledge/identity.py), which rules follow."""
    parts = [
        str(FORMAT), __version__, code_fingerprint(), target_name, ",".join(settings.select), ",".join(settings.ignore),
        json.dumps(sorted((k, list(v)) for k, v in settings.per_file_ignores.items())), settings.root,
        installed_verl_version() or "",  # the installed verl applies to files that use it where the tree says nothing
        identities,
    ]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]


class ResultCache:
    def __init__(self, directory: str, key: str) -> None:
        self.path = Path(directory) / f"results-{key}.json"
        self.entries: dict[str, list] = {}
        self.dirty = False
        try:
            data = json.loads(self.path.read_text("utf-8"))
            if data.get("format") == FORMAT and data.get("key") == key:
                self.entries = data["files"]
        except (OSError, ValueError, KeyError, TypeError):
            self.entries = {}  # missing or unreadable: start empty, never fail the run
        self.key = key

    def get(self, path: str, sha: str):
        entry = self.entries.get(os.path.abspath(path))
        if not entry or entry[0] != sha:
            return None
        try:
            return _result_from_dict(FileResult, path, entry[1])
        except (KeyError, TypeError, ValueError):
            return None

    def put(self, result, sha: str) -> None:
        self.entries[os.path.abspath(result.path)] = [sha, _result_to_dict(result)]
        self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            gitignore = self.path.parent / ".gitignore"
            if not gitignore.exists():
                gitignore.write_text("# created by rlcompat\n*\n")
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".results-", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"format": FORMAT, "key": self.key, "files": self.entries}, fh, separators=(",", ":"))
            os.replace(tmp, self.path)
        except OSError:
            pass  # a read-only checkout still scans; it just is not faster next time


def _finding_to_dict(f: Finding) -> dict:
    loc = f.location
    return {
        "code": f.code, "name": f.name, "message": f.message, "target": f.target, "severity": f.severity,
        "loc": [loc.line, loc.column, loc.end_line, loc.end_column], "src": f.source_line,
        "fix": None if f.fix is None else {
            "safety": f.fix.safety.value, "description": f.fix.description,
            "edits": [[e.start, e.end, e.content] for e in f.fix.edits],
        },
    }


def _finding_from_dict(path: str, d: dict) -> Finding:
    fix = d["fix"]
    return Finding(
        code=d["code"], name=d["name"], message=d["message"], path=path, location=Location(*d["loc"]),
        target=d["target"], severity=d["severity"], source_line=d["src"],
        fix=None if fix is None else Fix(tuple(Edit(*e) for e in fix["edits"]), FixSafety(fix["safety"]), fix["description"]),
    )


def _result_to_dict(r) -> dict:
    return {
        "language": r.language, "suppressed": r.suppressed,
        "findings": [_finding_to_dict(f) for f in r.findings],
        "error": None if r.error is None else [r.error.message, r.error.line, r.error.column],
    }


def _result_from_dict(cls, path: str, d: dict):
    err = d["error"]
    return cls(
        path=path, language=d["language"], findings=[_finding_from_dict(path, f) for f in d["findings"]],
        error=None if err is None else FileError(path, err[0], err[1], err[2]), suppressed=d["suppressed"],
        from_cache=True,
    )
