"""The engine: for each file, read once, skip if no rule can match, parse once, run every rule, apply suppressions.

Files run in parallel across processes; results come back in path order, whatever finished first.
"""

from __future__ import annotations

import contextlib
import os
from functools import cached_property
from typing import Iterable, Iterator, Sequence

from rlcompat import suppressions
from rlcompat.config import Options
from rlcompat.discovery import language_from_content
from rlcompat.scanned_file import ScannedFile
from rlcompat.identity import Identities, TreeIdentity, environment_only
from rlcompat.frontends import FRONTENDS, frontend
from rlcompat.findings import FileError, FileResult, Finding, Location
from rlcompat.lang.pyspeed import plain
from rlcompat.rule import can_match, triggers_in
from rlcompat.source import SourceError, SourceFile, decode, read_bytes
from rlcompat.knowledge.targets import Target, resolve_target
from rlcompat.wordscan import WordScan

META_UNUSED = "RLC001"
# Languages whose files can hold code of another (`python - <<EOF` in a script): that language's rules run there too.
EMBEDS = {"shell": ("python",), "markdown": ("python",), "notebook": ("python", "shell")}


class ParseFailure(Exception):
    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(message)
        self.line, self.column = line, column


def parse(language: str, text: str, file: ScannedFile | None = None):
    """Parse with the language's front end; ParseFailure with a location if the text is not valid. `file`: the file
    being checked, for a front end that narrows (it parses with what its narrowing learnt of the file)."""
    fe = frontend(language)
    with parse_errors_of(fe):
        return fe.parse(text, file) if file is not None and hasattr(fe, "narrow") else fe.parse(text)


def validate(language: str, text: str) -> None:
    """ParseFailure with a location if the text is not valid (to prove a fixed text valid): parsed all of it now,
    where the front end would parse a big text in parts as it walks it (the Python one: a part at a time here too)."""
    fe = frontend(language)
    with parse_errors_of(fe):
        if hasattr(fe, "validate"):
            fe.validate(text)
        else:
            fe.parse(text)


@contextlib.contextmanager
def parse_errors_of(fe) -> Iterator[None]:
    """The front end's syntax errors as ParseFailure, with their location: also around `check`, since a front end
    may parse as it walks (the Python one parses a big file in parts, lang/pyspeed/batches.py)."""
    try:
        yield
    except fe.PARSE_ERRORS as exc:
        line, column, message = fe.syntax_error_location(exc)
        raise ParseFailure(message, line, column) from exc


class Checker:
    """Every selected rule that applies to the target, instantiated once, grouped by language."""

    def __init__(self, target: Target, settings: Options, use_cache: bool = False,
                 identities: Identities | None = None, identity: TreeIdentity | None = None) -> None:
        """`identities`: the framework identity of each scanned tree, resolved once by the caller (a tree the caller
        did not resolve is resolved here, once, when its first file is checked); `identity`: one identity for every
        text this checker reads, whatever its path (a rule's example pins its frameworks so)."""
        self.target = target
        self.settings = settings
        self.report_unused = settings.is_selected(META_UNUSED)
        self.cache = None
        self.identities = identities if identities is not None else Identities()
        self.identity = identity
        self._trigger_scans: dict[str, WordScan] = {}
        if use_cache and settings.cache_dir:
            from rlcompat.cache import ResultCache, run_key

            directory = os.path.join(settings.root, settings.cache_dir)
            self.cache = ResultCache(directory, run_key(target.name, settings, self.identities.fingerprint()))

    def tree_identity(self, path: str) -> TreeIdentity:
        """The identity of the tree `path` belongs to (a text given with a path in a directory that exists is judged
        as a file of that directory's tree); for a text of no tree (`scan_source` with a bare name), the scanning
        environment's installed frameworks only, which apply to the code that uses them."""
        if self.identity is not None:
            return self.identity
        directory = os.path.dirname(path)
        if not os.path.exists(path) and not (directory and os.path.isdir(directory)):
            return environment_only()
        return self.identities.for_path(path)

    # The rules are loaded on first use: a run answered wholly from the cache never imports them (nor LibCST).
    @cached_property
    def rules_by_language(self) -> dict[str, list]:
        from rlcompat.rules import file_rules

        by_language: dict[str, list] = {}
        for rule_cls in file_rules():
            if rule_cls.code == META_UNUSED or not rule_cls.applies_to(self.target) or not self.settings.is_selected(rule_cls.code):
                continue
            rule = rule_cls(self.target)
            for language in rule_cls.languages:
                by_language.setdefault(language, []).append(rule)
        own_rules = {lang: list(rules) for lang, rules in by_language.items()}
        for outer, inner in EMBEDS.items():
            merged = list(own_rules.get(outer, []))
            for lang in inner:
                merged += [r for r in own_rules.get(lang, ()) if r not in merged]
            if merged:
                by_language[outer] = merged
        return by_language

    @cached_property
    def triggers(self) -> dict[str, tuple[str, ...]]:
        return {lang: tuple({t for r in rules for t in triggers_in(r, lang)}) for lang, rules in self.rules_by_language.items()}

    def trigger_scan(self, language: str) -> WordScan:
        """The search for the triggers of every rule of `language`, built once for the run, on first use."""
        scan = self._trigger_scans.get(language)
        if scan is None:
            scan = self._trigger_scans[language] = WordScan(self.triggers.get(language, ()))
        return scan

    def runnable(self, rules: Sequence, language: str, text: str, present: set[str] | None = None) -> list:
        """The rules that can match `text`: a trigger of theirs is in it, and what they require (`Rule.requires`).
        `present`: the triggers `text` holds, if already known (any superset of this checker's that it holds)."""
        if not rules or language not in FRONTENDS:
            return []
        if present is None:
            present = self.trigger_scan(language).present(text)
        if not present:
            return []
        plain_mode = plain()
        return [r for r in rules if can_match(r, language, present, text, plain_mode)]

    @cached_property
    def _active_codes(self) -> set[str]:
        return {r.code for rules in self.rules_by_language.values() for r in rules}

    def check_file(self, path: str, language: str) -> FileResult:
        try:
            raw = read_bytes(path)
        except SourceError as exc:
            return FileResult(path, language, error=FileError(path, str(exc)))
        sha = None
        if self.cache is not None:
            from rlcompat.cache import content_hash

            sha = content_hash(raw)
            hit = self.cache.get(path, sha)
            if hit is not None:
                return hit
        try:
            result = self.check_source(decode(path, raw, language), language)
        except SourceError as exc:
            result = FileResult(path, language, error=FileError(path, str(exc)))
        result.content_sha = sha
        if self.cache is not None and not result.reads_other_files:
            self.cache.put(result, sha)
        return result

    def check_text(self, path: str, text: str, language: str) -> FileResult:
        try:
            source = decode(path, text.encode("utf-8", "surrogatepass"), language)
        except SourceError as exc:
            return FileResult(path, language, error=FileError(path, str(exc)))
        return self.check_source(source, language)

    def check_source(self, source: SourceFile, language: str) -> FileResult:
        path, text = source.path, source.text
        language = language_from_content(language, text)
        result = FileResult(path, language)
        rules = [r for r in self.rules_by_language.get(language, ()) if self.settings.is_selected(r.code, path)]
        runnable = self.runnable(rules, language, text)
        if runnable:
            fe = frontend(language)
            file = ScannedFile(path, self.tree_identity(path), text, language)
            # A front end may leave out what no runnable rule can match (the Python one: lang/pyspeed/narrow.py).
            narrowed = fe.narrow(text, runnable, file) if hasattr(fe, "narrow") else None
            try:
                tree, narrowed = self._parse(language, text, narrowed, file)
                narrowing = {"narrowed": narrowed} if narrowed is not None else {}
                with parse_errors_of(fe):
                    findings = fe.check(tree, text, path, runnable, self.target, knowledge=file, **narrowing)
            except ParseFailure as exc:
                result.error = FileError(path, f"cannot be parsed: {exc}; fix the syntax or exclude the file", exc.line, exc.column)
                return result
            except RecursionError:
                result.error = FileError(path, "is nested too deeply to parse; exclude the file")
                return result
            result.parsed = True
            result.reads_other_files = file.reads_other_files
        else:
            findings = []
        sups = suppressions.find(text, language)
        findings, result.suppressed = suppressions.apply(findings, sups)
        if self.report_unused and self.settings.is_selected(META_UNUSED, path):
            findings.extend(self._unused(sups, path))
        result.findings = sorted(findings, key=Finding.sort_key)
        return result

    @staticmethod
    def _parse(language: str, text: str, narrowed, file: ScannedFile):
        """(tree, `narrowed` if the tree is of the narrowed text, else None)."""
        if narrowed is not None:
            try:
                return parse(language, narrowed.text, file), narrowed
            except (ParseFailure, RecursionError):
                pass  # never report an error the narrowing made: the whole file decides
        return parse(language, text, file), None

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


def _init_worker(target_name: str, settings: Options, use_cache: bool, identities: Identities,
                 identity: TreeIdentity | None) -> None:
    global _worker_checker
    # Workers read the cache but never save it: the parent stores what they found. They get the parent's
    # identities: each tree is resolved once per run.
    _worker_checker = Checker(resolve_target(target_name), settings, use_cache, identities, identity)


def _run_batch(func, batch: list) -> list:
    assert _worker_checker is not None
    return [func(_worker_checker, item) for item in batch]


def _check_one(checker: Checker, item: tuple[str, str]) -> FileResult:
    return checker.check_file(*item)


def run_parallel(checker: Checker, func, items: Sequence, jobs: int | None = None, progress=None) -> list:
    """`func(checker, item)` for every item: in this process for few items, else in worker processes
    (each with its own Checker for the same target and settings). Results come back in input order."""
    jobs = jobs or os.cpu_count() or 1
    if jobs <= 1 or len(items) < 16:
        out = []
        for item in items:
            out.append(func(checker, item))
            if progress:
                progress(1)
        return out
    import functools
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    ctx = multiprocessing.get_context("fork") if hasattr(os, "fork") else None
    batches = task_batches(items, jobs)
    out_by_batch = []
    with ProcessPoolExecutor(
        max_workers=jobs, mp_context=ctx, initializer=_init_worker, initargs=(checker.target.name, checker.settings, checker.cache is not None, checker.identities,
                  checker.identity)
    ) as pool:
        for batch_result in pool.map(functools.partial(_run_batch, func), [b for _, b in batches]):
            out_by_batch.append(batch_result)
            if progress:
                progress(len(batch_result))
    out: list = [None] * len(items)
    for (indices, _), batch_result in zip(batches, out_by_batch):
        for i, r in zip(indices, batch_result):
            out[i] = r
    return out


def check_files(checker: Checker, files: Sequence[tuple[str, str]], jobs: int | None = None, progress=None) -> list[FileResult]:
    """Check files, in parallel when there are enough of them; results sorted by path.

    The parent answers what the cache knows; workers check the rest, and the parent stores their results.
    """
    results: list[FileResult] = []
    todo: list[tuple[str, str]] = []
    if checker.cache is not None:
        from rlcompat.cache import content_hash

        for path, lang in files:
            try:
                hit = checker.cache.get(path, content_hash(read_bytes(path)))
            except SourceError:
                hit = None
            if hit is not None:
                results.append(hit)
            else:
                todo.append((path, lang))
        if progress and results:
            progress(len(results))
    else:
        todo = list(files)
    fresh = run_parallel(checker, _check_one, todo, jobs, progress)
    if checker.cache is not None:
        for r in fresh:
            if r.content_sha is not None and not r.reads_other_files:
                checker.cache.put(r, r.content_sha)
    results.extend(fresh)
    if checker.cache is not None:
        checker.cache.save()
    return sorted(results, key=lambda r: r.path)


def task_batches(items: Sequence, jobs: int) -> list[tuple[list[int], list]]:
    """Tasks of (indices, items) for the pool: the biggest files first, each task about an eighth of a worker's
    share of the bytes. A file's cost follows its size (one LibCST parse can be a tenth of a run), and the pool
    hands tasks to whichever worker is free, so small tasks at the end let the workers finish together; eight
    fixed round-robin batches left one worker idle for up to a third of a cold scan of verl."""
    sizes = [_size(item[0]) for item in items]
    order = sorted(range(len(items)), key=lambda i: -sizes[i])
    share = max(1, sum(sizes) // (jobs * 8))
    tasks: list[list[int]] = []
    current: list[int] = []
    weight = 0
    for i in order:
        current.append(i)
        weight += sizes[i]
        if weight >= share:
            tasks.append(current)
            current, weight = [], 0
    if current:
        tasks.append(current)
    return [(task, [items[i] for i in task]) for task in tasks]


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0  # the worker reports it


def all_findings(results: Iterable[FileResult]) -> list[Finding]:
    return [f for r in results for f in r.findings]
