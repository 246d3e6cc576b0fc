"""The engine: for each file, read once, skip if no rule can match, parse once, run every rule, apply suppressions.

Files run in parallel across processes; results come back in path order, whatever finished first.
"""

from __future__ import annotations

import importlib
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from rlcompat import suppressions
from rlcompat.config import Settings
from rlcompat.model import FileError, Finding, Location
from rlcompat.source import SourceError, SourceFile, decode, read
from rlcompat.targets import Target, resolve_target

FRONTENDS = {"python": "rlcompat.lang.python"}
META_UNUSED = "RLC001"


class ParseFailure(Exception):
    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(message)
        self.line, self.column = line, column


@dataclass
class FileResult:
    path: str
    language: str
    findings: list[Finding] = field(default_factory=list)
    error: FileError | None = None
    suppressed: int = 0
    parsed: bool = False


def frontend(language: str):
    return importlib.import_module(FRONTENDS[language])


def parse(language: str, text: str):
    """Parse with the language's front end; ParseFailure with a location if the text is not valid."""
    fe = frontend(language)
    try:
        return fe.parse(text)
    except fe.PARSE_ERRORS as exc:
        line, column, message = fe.syntax_error_location(exc)
        raise ParseFailure(message, line, column) from exc


class Checker:
    """Every selected rule that applies to the target, instantiated once, grouped by language."""

    def __init__(self, target: Target, settings: Settings) -> None:
        from rlcompat.rules import all_rules

        self.target = target
        self.settings = settings
        self.rules_by_language: dict[str, list] = {}
        self.report_unused = settings.is_selected(META_UNUSED)
        for rule_cls in all_rules():
            if rule_cls.code == META_UNUSED or not rule_cls.applies_to(target) or not settings.is_selected(rule_cls.code):
                continue
            rule = rule_cls(target)
            for language in rule_cls.languages:
                self.rules_by_language.setdefault(language, []).append(rule)
        self.triggers = {
            lang: tuple({t for r in rules for t in r.triggers}) for lang, rules in self.rules_by_language.items()
        }
        self._active_codes = {r.code for rules in self.rules_by_language.values() for r in rules}

    def check_file(self, path: str, language: str) -> FileResult:
        try:
            source = read(path, language)
        except SourceError as exc:
            return FileResult(path, language, error=FileError(path, str(exc)))
        return self.check_source(source, language)

    def check_text(self, path: str, text: str, language: str) -> FileResult:
        return self.check_source(decode(path, text.encode("utf-8"), language), language)

    def check_source(self, source: SourceFile, language: str) -> FileResult:
        path, text = source.path, source.text
        result = FileResult(path, language)
        rules = [r for r in self.rules_by_language.get(language, ()) if self.settings.is_selected(r.code, path)]
        triggers = self.triggers.get(language, ())
        if rules and language in FRONTENDS and any(t in text for t in triggers):
            try:
                tree = parse(language, text)
            except ParseFailure as exc:
                result.error = FileError(path, f"cannot be parsed: {exc}; fix the syntax or exclude the file", exc.line, exc.column)
                return result
            except RecursionError:
                result.error = FileError(path, "is nested too deeply to parse; exclude the file")
                return result
            result.parsed = True
            runnable = [r for r in rules if any(t in text for t in r.triggers)]
            findings = frontend(language).check(tree, text, path, runnable, self.target)
        else:
            findings = []
        sups = suppressions.find(text, language)
        findings, result.suppressed = suppressions.apply(findings, sups)
        if self.report_unused and self.settings.is_selected(META_UNUSED, path):
            findings.extend(self._unused(sups, path))
        result.findings = sorted(findings, key=Finding.sort_key)
        return result

    def _unused(self, sups, path: str) -> list[Finding]:
        out = []
        for s in sups:
            if s.codes:
                stale = [c for c in s.codes if c not in s.used and any(a.startswith(c) for a in self._active_codes)
                         and not any(u.startswith(c) for u in s.used)]
            else:
                stale = [] if s.used else ["(all)"]
            if stale:
                what = ", ".join(stale)
                out.append(
                    Finding(
                        code=META_UNUSED,
                        name="unused-suppression",
                        message=f"suppression of {what} silences nothing here for {self.target.name}; remove it",
                        path=path,
                        location=Location(s.line, s.column, s.line, s.column),
                        target=self.target.name,
                        severity="warning",
                    )
                )
        return out


# --- parallel runs -------------------------------------------------------------------------------------------

_worker_checker: Checker | None = None


def _init_worker(target_name: str, settings: Settings) -> None:
    global _worker_checker
    _worker_checker = Checker(resolve_target(target_name), settings)


def _check_batch(batch: list[tuple[str, str]]) -> list[FileResult]:
    assert _worker_checker is not None
    return [_worker_checker.check_file(p, lang) for p, lang in batch]


def check_files(checker: Checker, files: Sequence[tuple[str, str]], jobs: int | None = None, progress=None) -> list[FileResult]:
    """Check files, in parallel when there are enough of them; results sorted by path."""
    jobs = jobs or os.cpu_count() or 1
    results: list[FileResult] = []
    if jobs <= 1 or len(files) < 16:
        for path, lang in files:
            results.append(checker.check_file(path, lang))
            if progress:
                progress(1)
    else:
        batches = _batches(files, jobs * 4)
        import multiprocessing

        ctx = multiprocessing.get_context("fork") if hasattr(os, "fork") else None
        with ProcessPoolExecutor(
            max_workers=jobs, mp_context=ctx, initializer=_init_worker, initargs=(checker.target.name, checker.settings)
        ) as pool:
            for batch_result in pool.map(_check_batch, batches):
                results.extend(batch_result)
                if progress:
                    progress(len(batch_result))
    return sorted(results, key=lambda r: r.path)


def _batches(items: Sequence, count: int) -> list[list]:
    count = max(1, min(count, len(items)))
    return [list(items[i::count]) for i in range(count)]


def all_findings(results: Iterable[FileResult]) -> list[Finding]:
    return [f for r in results for f in r.findings]
