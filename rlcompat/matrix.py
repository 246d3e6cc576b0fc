"""`rlcompat matrix`: every target from one pass over the files.

Each file is read, decoded and parsed once. The rules of every target run over that one tree; a file is parsed
when a trigger of any target's rules is in it, and the Python front end keeps the statements that any of them can
match (the union of their triggers), so each target's rules see what a scan for that target alone would give
them. Select/ignore, per-file ignores, excludes and inline suppressions apply per target exactly as in `scan`
(tests/test_matrix.py compares the two on the fixtures), and each target's results go to (and come from) the same
cache entries `scan --target` uses.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Sequence

from rlcompat import suppressions
from rlcompat.config import Options
from rlcompat.discovery import discover, why_not_checked
from rlcompat.engine import Checker, ParseFailure, parse_errors_of
from rlcompat.scanned_file import ScannedFile
from rlcompat.findings import FileError, FileResult, Finding
from rlcompat.identity import Identities
from rlcompat.frontends import FRONTENDS, frontend
from rlcompat.source import SourceError, decode, read_bytes
from rlcompat.knowledge.targets import Target, resolve_target
from rlcompat.wordscan import WordScan

class MatrixChecker:
    """One engine Checker per target (its rules, selection and cache), driven over a single parse per file."""

    def __init__(self, targets: Sequence[Target], settings: Options, use_cache: bool = False,
                 identities: Identities | None = None) -> None:
        self.targets = list(targets)
        self.settings = settings
        self.identities = identities if identities is not None else Identities()  # one per run, shared by targets
        self.checkers = [Checker(t, settings, use_cache=use_cache, identities=self.identities) for t in self.targets]
        self._trigger_scans: dict[str, WordScan] = {}

    def _trigger_scan(self, language: str) -> WordScan:
        """The triggers of every target's rules of `language`, searched once per file."""
        if language not in self._trigger_scans:
            self._trigger_scans[language] = WordScan({t for c in self.checkers for t in c.trigger_scan(language).words})
        return self._trigger_scans[language]

    def check_file(self, path: str, language: str) -> list[FileResult]:
        """One FileResult per target, in target order."""
        try:
            raw = read_bytes(path)
        except SourceError as exc:
            return [FileResult(path, language, error=FileError(path, str(exc))) for _ in self.checkers]
        try:
            source = decode(path, raw, language)
        except SourceError as exc:
            return [FileResult(path, language, error=FileError(path, str(exc))) for _ in self.checkers]
        return self.check_text(path, source.text, language)

    def check_text(self, path: str, text: str, language: str) -> list[FileResult]:
        per_target = [[r for r in c.rules_by_language.get(language, ()) if self.settings.is_selected(r.code, path)]
                      for c in self.checkers]
        present = self._trigger_scan(language).present(text) if language in FRONTENDS else set()
        runnable = [c.runnable(rules, language, text, present) for c, rules in zip(self.checkers, per_target)]
        everything = [r for rules in runnable for r in rules]
        results = [FileResult(path, language) for _ in self.checkers]
        found: list[list[Finding]] = [[] for _ in self.checkers]
        if everything:
            fe = frontend(language)
            knowledge = ScannedFile(path, self.checkers[0].tree_identity(path), text, language)
            narrowed = fe.narrow(text, everything, knowledge) if hasattr(fe, "narrow") else None
            try:
                tree, narrowed = Checker._parse(language, text, narrowed, knowledge)
                narrowing = {"narrowed": narrowed} if narrowed is not None else {}
                busy = [i for i, rules in enumerate(runnable) if rules]
                with parse_errors_of(fe):
                    if hasattr(fe, "check_targets"):  # the tree is read once for every target (Python: one walk)
                        groups = [(runnable[i], self.checkers[i].target) for i in busy]
                        for i, findings in zip(busy, fe.check_targets(tree, text, path, groups, knowledge=knowledge, **narrowing)):
                            found[i] = findings
                    else:
                        for i in busy:
                            found[i] = fe.check(tree, text, path, runnable[i], self.checkers[i].target, knowledge=knowledge,
                                                **narrowing)
            except ParseFailure as exc:
                error = FileError(path, f"cannot be parsed: {exc}; fix the syntax or exclude the file", exc.line, exc.column)
                return [FileResult(path, language, error=error) for _ in self.checkers]
            except RecursionError:
                error = FileError(path, "is nested too deeply to parse; exclude the file")
                return [FileResult(path, language, error=error) for _ in self.checkers]
            for result in results:
                result.parsed = True
                result.reads_other_files = knowledge.reads_other_files
        sups = suppressions.find(text, language)
        for checker, result, findings in zip(self.checkers, results, found):
            mine = [_fresh(s) for s in sups]
            findings, result.suppressed = suppressions.apply(findings, mine)
            if checker.report_unused and self.settings.is_selected("RLC001", path):
                findings.extend(checker._unused(mine, path))
            result.findings = sorted(findings, key=Finding.sort_key)
        return results


def _fresh(s: suppressions.Suppression) -> suppressions.Suppression:
    """A copy whose record of what it silenced starts empty: each target uses every suppression afresh."""
    from dataclasses import replace

    return replace(s, used=set())


@dataclass
class MatrixRun:
    targets: list[Target]
    files: list[str]
    results: list[list[FileResult]]  # per target, per file (in `files` order)
    missing: list[str] = field(default_factory=list)
    identities: Identities | None = None  # each scanned tree's framework identity

    def findings(self, index: int) -> list[Finding]:
        return [f for r in self.results[index] for f in r.findings]

    @property
    def errors(self) -> list[FileError]:
        """Files that could not be read or parsed (the same for every target), then paths that do not exist."""
        first = self.results[0] if self.results else []
        return [r.error for r in first if r.error] + [FileError(m, why_not_checked(m)) for m in self.missing]

    @property
    def suppressed(self) -> list[int]:
        return [sum(r.suppressed for r in per_file) for per_file in self.results]


# --- parallel runs (as engine.run_parallel, with a MatrixChecker in each worker) ---------------------------------

_worker: MatrixChecker | None = None


def _init_worker(target_names: list[str], settings: Options, identities: Identities) -> None:
    global _worker
    _worker = MatrixChecker([resolve_target(n) for n in target_names], settings, identities=identities)


def _run_batch(batch: list) -> list:
    assert _worker is not None
    return [_worker.check_file(*item) for item in batch]


def _check_all(checker: MatrixChecker, items: list[tuple[str, str]], jobs: int | None) -> list[list[FileResult]]:
    jobs = jobs or os.cpu_count() or 1
    if jobs <= 1 or len(items) < 16:
        return [checker.check_file(*item) for item in items]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from rlcompat.engine import task_batches

    ctx = multiprocessing.get_context("fork") if hasattr(os, "fork") else None
    batches = task_batches(items, jobs)
    out: list = [None] * len(items)
    names = [t.name for t in checker.targets]
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_init_worker, initargs=(names, checker.settings, checker.identities)) as pool:
        for (indices, _), batch_result in zip(batches, pool.map(_run_batch, [b for _, b in batches])):
            for i, r in zip(indices, batch_result):
                out[i] = r
    return out


def run_matrix(paths: list[str], targets: Sequence[Target], settings: Options | None = None, jobs: int | None = None,
               use_cache: bool = False) -> MatrixRun:
    """Check `paths` for every target in one pass. With `use_cache`, a file every target's cache knows is not read
    again, and what is checked is stored for each target (so a later `scan --target` is answered from it too)."""
    settings = settings or Options()
    files, missing = discover(paths, settings)
    identities = Identities.of_paths(paths)  # each scanned tree's framework identity, resolved once
    checker = MatrixChecker(targets, settings, use_cache=use_cache, identities=identities)
    caches = [c.cache for c in checker.checkers]
    by_file: list[list[FileResult] | None] = [None] * len(files)
    todo: list[int] = []
    shas: dict[int, str] = {}
    for i, (path, _) in enumerate(files):
        if use_cache and all(c is not None for c in caches):
            from rlcompat.cache import content_hash

            try:
                shas[i] = content_hash(read_bytes(path))
            except SourceError:
                todo.append(i)
                continue
            hits = [c.get(path, shas[i]) for c in caches]
            if all(h is not None for h in hits):
                by_file[i] = hits
                continue
        todo.append(i)
    for i, results in zip(todo, _check_all(checker, [files[i] for i in todo], jobs)):
        by_file[i] = results
        if i in shas:
            for cache, result in zip(caches, results):
                if not result.reads_other_files:
                    cache.put(result, shas[i])
    for cache in caches:
        if cache is not None:
            cache.save()
    per_target = [[results[t] for results in by_file] for t in range(len(checker.targets))]  # type: ignore[index]
    return MatrixRun(list(checker.targets), [p for p, _ in files], per_target, missing, identities)
