"""The runner, the one pipeline of scan, fix and matrix: for each file, read once, skip if no rule can match, parse
once, run the rules of every (rule set, target) group over that tree, apply suppressions per group.

`Checker` holds the groups (one for scan and fix, one per target for `rlcompat matrix`) and checks one file
(`check`: a FileResult per group); what it learns of the file travels in that file's `ScannedFile`
(rlcompat/pipeline/scanned_file.py), never in a module. `check_all` runs it over many files: what every group's cache knows
is answered without reading the file again, the rest run in parallel across processes and are stored; results come
back in input order, whatever finished first.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import replace
from functools import cached_property, lru_cache
from typing import Iterable, Iterator, Sequence

from rlcompat.pipeline import catalog, suppressions
from rlcompat.config import Options
from rlcompat.pipeline.discovery import language_from_content
from rlcompat.pipeline.scanned_file import ScannedFile
from rlcompat.knowledge.identity import Identities, TreeIdentity, environment_only
from rlcompat.lang.frontends import FRONTENDS, frontend
from rlcompat.lang.languages import LANGUAGES
from rlcompat.findings import FileError, FileResult, Finding
from rlcompat.lang.pyspeed import plain
from rlcompat.rule import triggers_in
from rlcompat.pipeline.source import SourceError, SourceFile, decode, read_bytes
from rlcompat.pipeline.suppressions import SuppressionRule
from rlcompat.knowledge.targets import Target, resolve_target
from rlcompat.pipeline.wordscan import WordScan
from rlcompat.knowledge import launch_helpers
from rlcompat.lang.settings import ConfigRule

# Languages whose files can hold code of another (`python - <<EOF` in a script): that language's rules run there too.
EMBEDS = {lang.name: lang.embeds for lang in LANGUAGES if lang.embeds}
# Languages whose files the Python front end may parse (LibCST): their own, or code embedded in them.
_READS_PYTHON = frozenset({"python", *(outer for outer, inner in EMBEDS.items() if "python" in inner)})
# A parallel run of this many such files (a tree; about one Python file in six of verl's is parsed) loads LibCST
# before its workers fork; a commit's few files may all be free of triggers and need none.
PRELOAD_MIN_FILES = 64


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


class RuleGroup:
    """One (rule set, target) of a run: every selected rule that applies to the target, instantiated once and grouped
    by the languages it declares (and those they embed in), and the rules over the suppressions. A file asks for the
    rules its words can wake (`rules_for`): only their modules are imported (rlcompat/pipeline/catalog.py)."""

    def __init__(self, target: Target, settings: Options) -> None:
        self.target = target
        self.settings = settings
        self._rules: dict[str, object | None] = {}

    def rule(self, code: str):
        """The instance of rule `code` for this group, None if it is not selected or does not apply to the target."""
        if code not in self._rules:
            from rlcompat.rules import rule_class

            cls = rule_class(code) if self.settings.is_selected(code) else None
            self._rules[code] = cls(self.target) if cls is not None and cls.applies_to(self.target) else None
        return self._rules[code]

    # Every rule is loaded only for what needs the whole set: a file's suppressions (RLC001 reads which codes ran).
    @cached_property
    def _instances(self) -> list:
        from rlcompat.rules import file_codes

        return [r for r in map(self.rule, file_codes()) if r is not None]

    @cached_property
    def rules_by_language(self) -> dict[str, list]:
        by_language: dict[str, list] = {}
        for rule in self._instances:
            if not isinstance(rule, SuppressionRule):
                for language in rule.languages:
                    by_language.setdefault(language, []).append(rule)
        return _with_embedded(by_language)

    def rules_for(self, language: str, present: set[str]) -> list:
        """The rules of `rules_by_language[language]` (in its order) whose triggers meet `present`, the trigger words
        of the file (any superset of theirs that it holds), and those whose triggers only an instance knows."""
        out = []
        for code in _codes_by_language().get(language, ()):
            words = _triggers_of(code, language)
            if words is not None and present.isdisjoint(words):
                continue
            rule = self.rule(code)
            if rule is not None and not isinstance(rule, SuppressionRule):
                out.append(rule)
        return out

    def trigger_words(self, language: str) -> set[str]:
        """Every word that can wake a rule of this group in a file of `language` (a superset: the index's words of
        every selected rule of the language, and the instance's own where only it knows them)."""
        words: set[str] = set()
        for code in _codes_by_language().get(language, ()):
            if not self.settings.is_selected(code):
                continue
            found = _triggers_of(code, language)
            if found is None:
                rule = self.rule(code)
                found = triggers_in(rule, language) if rule is not None else ()
            words.update(found)
        return words

    @cached_property
    def suppression_rules(self) -> list[SuppressionRule]:
        return [r for r in self._instances if isinstance(r, SuppressionRule)]

    @cached_property
    def active_codes(self) -> set[str]:
        return {r.code for rules in self.rules_by_language.values() for r in rules}


def _with_embedded(own: dict[str, list]) -> dict[str, list]:
    """Each language's rules followed by those of the languages its files embed (not repeated), in that order."""
    by_language = dict(own)
    for outer, inner in EMBEDS.items():
        merged = list(own.get(outer, []))
        for lang in inner:
            merged += [r for r in own.get(lang, ()) if r not in merged]
        if merged:
            by_language[outer] = merged
    return by_language


@lru_cache(maxsize=1)
def _codes_by_language() -> dict[str, list[str]]:
    """`RuleGroup.rules_by_language` as codes, for every rule of the catalog: from the index, importing no rule."""
    from rlcompat.rules import file_codes, rule_class

    own: dict[str, list[str]] = {}
    for code in file_codes():
        entry = catalog.index().get(code)
        for language in (entry[0] if entry is not None else rule_class(code).languages):  # not indexed: loaded
            own.setdefault(language, []).append(code)
    return _with_embedded(own)


def _triggers_of(code: str, language: str) -> tuple[str, ...] | None:
    entry = catalog.index().get(code)
    return catalog.triggers_of(entry, language) if entry is not None else None


class Checker:
    """The pipeline over N (rule set, target) groups: each file is read, decoded and parsed once, and the rules of
    every group run over that one tree. `scan` and `fix` run one group (their target); `rlcompat matrix` one per
    target. A file is parsed when a trigger of any group's rules is in it, and the Python front end keeps the
    statements that any of them can match (the union of their triggers), so each group's rules see what a run of that
    group alone would give them. Select/ignore, per-file ignores and inline suppressions apply per group, and each
    group's results go to (and come from) its target's cache entries, whichever command ran."""

    def __init__(self, targets: Target | Sequence[Target], settings: Options, use_cache: bool = False,
                 identities: Identities | None = None, identity: TreeIdentity | None = None) -> None:
        """`targets`: one target (scan, fix) or several (matrix), a group each. `identities`: the framework identity
        of each scanned tree, resolved once by the caller (a tree the caller did not resolve is resolved here, once,
        when its first file is checked); `identity`: one identity for every text this checker reads, whatever its
        path (a rule's example pins its frameworks so)."""
        self.targets = [targets] if isinstance(targets, Target) else list(targets)
        self.settings = settings
        self.groups = [RuleGroup(t, settings) for t in self.targets]
        self.use_cache = bool(use_cache and settings.cache_dir)
        self.identities = identities if identities is not None else Identities()
        self.identity = identity
        self._trigger_scans: dict[str, WordScan] = {}

    @property
    def target(self) -> Target:
        """The target of a checker of one (scan, fix)."""
        assert len(self.targets) == 1, "a checker of several targets has no one target"
        return self.targets[0]

    @property
    def suppression_rules(self) -> list[SuppressionRule]:
        """The rules over suppressions of a checker of one target (scan, fix)."""
        assert len(self.groups) == 1, "a checker of several targets has no one set of rules"
        return self.groups[0].suppression_rules

    # Each group's cache is read on first use: in the parent, which answers what the caches know; never in a worker
    # of a scan (a fix's worker reads its own, to leave a clean file unread).
    @cached_property
    def caches(self) -> list | None:
        if not self.use_cache:
            return None
        from rlcompat.pipeline.cache import ResultCache, run_key

        directory = os.path.join(self.settings.root, self.settings.cache_dir)
        fingerprint = self.identities.fingerprint()
        return [ResultCache(directory, run_key(t.name, self.settings, fingerprint)) for t in self.targets]

    @property
    def cache(self):
        """The cache of a checker of one target, None without one."""
        return self.caches[0] if self.caches is not None and len(self.caches) == 1 else None

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

    def trigger_scan(self, language: str) -> WordScan:
        """The search for the triggers of every group's rules of `language`, built once for the run, on first use."""
        scan = self._trigger_scans.get(language)
        if scan is None:
            words = {t for g in self.groups for t in g.trigger_words(language)}
            scan = self._trigger_scans[language] = WordScan(tuple(sorted(words)))
        return scan

    def runnable(self, rules: Sequence, language: str, text: str, present: set[str] | None = None) -> list:
        """The rules that can match `text`: a trigger of theirs is in it, and what they need to see
        (`catalog.can_match`).
        `present`: the triggers `text` holds, if already known (any superset of this checker's that it holds)."""
        if not rules or language not in FRONTENDS:
            return []
        if present is None:
            present = self.trigger_scan(language).present(text)
        if not present:
            return []
        plain_mode = plain()
        return [r for r in rules if catalog.can_match(r, language, present, text, plain_mode)]

    # --- one file ----------------------------------------------------------------------------------------------

    def check(self, source: SourceFile, language: str) -> list[FileResult]:
        """One FileResult per group, in group order."""
        path, text = source.path, source.text
        language = language_from_content(language, text)
        file = ScannedFile(path, self.tree_identity(path), text, language)
        present = set()
        if language in FRONTENDS:
            scan = self.trigger_scan(language)
            present = scan.present(text)
            file.searched = (scan.words, present)
        selected = [[r for r in g.rules_for(language, present) if self.settings.is_selected(r.code, path)]
                    for g in self.groups]
        runnable = [self.runnable(rules, language, text, present) for rules in selected]
        if language == "python" and any(n in text for n in launch_helpers.function_names()):
            runnable = [own + [r for r in self._launch_rules(group, path, text) if r not in own]
                        for own, group in zip(runnable, self.groups)]
        try:
            found = self._run_rules(file, runnable)
        except ParseFailure as exc:
            error = FileError(path, f"cannot be parsed: {exc}; fix the syntax or exclude the file", exc.line, exc.column)
            return [FileResult(path, language, error=error) for _ in self.groups]
        except RecursionError:
            error = FileError(path, "is nested too deeply to parse; exclude the file")
            return [FileResult(path, language, error=error) for _ in self.groups]
        parsed = any(runnable)
        sups = suppressions.find(text, language)
        results = []
        for group, findings in zip(self.groups, found):
            mine = [_fresh(s) for s in sups]  # each group uses every suppression afresh
            findings, suppressed = suppressions.apply(findings, mine)
            for rule in (group.suppression_rules if mine else ()):  # a file without suppressions loads no more rules
                if language in rule.languages and self.settings.is_selected(rule.code, path):
                    findings.extend(rule.check_suppressions(mine, group.active_codes, path))
            results.append(FileResult(path, language, sorted(findings, key=Finding.sort_key), suppressed=suppressed,
                                      parsed=parsed, reads_other_files=file.reads_other_files))
        return results

    def _launch_rules(self, group: RuleGroup, path: str, text: str) -> list:
        """The shell config rules that can match the command a Python launcher hands a framework's launch helper
        (rlcompat/lang/pylaunch.py): woken by the shell triggers the file spells, as the same command in a script."""
        present = self.trigger_scan("shell").present(text)
        rules = [r for r in group.rules_for("shell", present) if isinstance(r, ConfigRule) and "shell" in r.languages
                 and self.settings.is_selected(r.code, path)]
        return self.runnable(rules, "shell", text, present)

    def _run_rules(self, file: ScannedFile, runnable: list[list]) -> list[list[Finding]]:
        """Each group's findings in `file`: parsed once (narrowed to what any runnable rule can match), every group's
        rules over that one tree."""
        found: list[list[Finding]] = [[] for _ in self.groups]
        everything = [r for rules in runnable for r in rules]
        if not everything:
            return found
        language, text, path = file.language, file.text, file.path
        fe = frontend(language)
        # A front end may leave out what no runnable rule can match (the Python one: lang/pyspeed/narrow.py).
        file.narrowed = fe.narrow(text, everything, file) if hasattr(fe, "narrow") else None
        tree = self._parse(file)
        narrowing = {"narrowed": file.narrowed} if file.narrowed is not None else {}
        busy = [i for i, rules in enumerate(runnable) if rules]
        with parse_errors_of(fe):
            if len(busy) > 1 and hasattr(fe, "check_targets"):  # the tree read once for every group (Python: one walk)
                groups = [(runnable[i], self.groups[i].target) for i in busy]
                for i, findings in zip(busy, fe.check_targets(tree, text, path, groups, scanned=file, **narrowing)):
                    found[i] = findings
            else:
                for i in busy:
                    found[i] = fe.check(tree, text, path, runnable[i], self.groups[i].target, scanned=file, **narrowing)
        if language == "python" and any(n in text for n in launch_helpers.function_names()):
            # the commands its launch-helper calls run (most Python files call none: the reader stays unloaded)
            from rlcompat.lang import pylaunch

            launched = pylaunch.check_launches(text, path, [(runnable[i], self.groups[i].target) for i in busy], file)
            for i, findings in zip(busy, launched):
                found[i] = found[i] + findings
        return found

    @staticmethod
    def _parse(file: ScannedFile):
        """The tree of `file.narrowed` where there is one and it parses, else (`file.narrowed` then None) of the
        whole text."""
        if file.narrowed is not None:
            try:
                return parse(file.language, file.narrowed.text, file)
            except (ParseFailure, RecursionError):
                file.narrowed = None  # never report an error the narrowing made: the whole file decides
        return parse(file.language, file.text, file)

    def check_path(self, path: str, language: str) -> list[FileResult]:
        """The file at `path` read, decoded and checked: one FileResult per group. With the cache on, each carries
        the SHA-256 of the bytes checked, for the parent to store it under."""
        try:
            raw = read_bytes(path)
        except SourceError as exc:
            return [FileResult(path, language, error=FileError(path, str(exc))) for _ in self.groups]
        try:
            results = self.check(decode(path, raw, language), language)
        except SourceError as exc:  # not text in its encoding: an answer for these bytes, cached as findings are
            results = [FileResult(path, language, error=FileError(path, str(exc))) for _ in self.groups]
        if self.use_cache:
            from rlcompat.pipeline.cache import content_hash

            sha = content_hash(raw)
            for result in results:
                result.content_sha = sha
        return results

    # What a checker of one target (scan, fix, the API) asks.

    def check_source(self, source: SourceFile, language: str) -> FileResult:
        return self.check(source, language)[0]

    def check_file(self, path: str, language: str) -> FileResult:
        return self.check_path(path, language)[0]

    def check_text(self, path: str, text: str, language: str) -> FileResult:
        try:
            source = decode(path, text.encode("utf-8", "surrogatepass"), language)
        except SourceError as exc:
            return FileResult(path, language, error=FileError(path, str(exc)))
        return self.check_source(source, language)


def _fresh(s: suppressions.Suppression) -> suppressions.Suppression:
    """A copy whose record of what it silenced starts empty."""
    return replace(s, used=set())


# --- parallel runs -------------------------------------------------------------------------------------------

_worker_checker: Checker | None = None


def _init_worker(target_names: list[str], settings: Options, use_cache: bool, identities: Identities,
                 identity: TreeIdentity | None) -> None:
    global _worker_checker
    # Workers store nothing in the cache: the parent stores what they found. They get the parent's identities: each
    # tree is resolved once per run.
    _worker_checker = Checker([resolve_target(n) for n in target_names], settings, use_cache, identities, identity)


def _run_batch(func, batch: list) -> list:
    assert _worker_checker is not None
    return [func(_worker_checker, item) for item in batch]


def _check_one(checker: Checker, item: tuple[str, str]) -> list[FileResult]:
    return checker.check_path(*item)


def run_parallel(checker: Checker, func, items: Sequence, jobs: int | None = None, progress=None) -> list:
    """`func(checker, item)` for every item (a tuple whose second member is the file's language): in this process
    for few items, else in worker processes (each with its own Checker for the same targets and settings). Results
    come back in input order."""
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
    if ctx is not None and sum(item[1] in _READS_PYTHON for item in items) >= PRELOAD_MIN_FILES:
        # Forked workers share what this process loaded: LibCST is loaded once here, not once in every worker
        # (0.2-0.3 s of CPU each, before its first file can be parsed).
        from rlcompat.lang.pyspeed.hooks import load_libcst

        load_libcst()
    batches = task_batches(items, jobs)
    out_by_batch = []
    initargs = ([t.name for t in checker.targets], checker.settings, checker.use_cache, checker.identities, checker.identity)
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_init_worker, initargs=initargs) as pool:
        for batch_result in pool.map(functools.partial(_run_batch, func), [b for _, b in batches]):
            out_by_batch.append(batch_result)
            if progress:
                progress(len(batch_result))
    out: list = [None] * len(items)
    for (indices, _), batch_result in zip(batches, out_by_batch):
        for i, r in zip(indices, batch_result):
            out[i] = r
    return out


def check_all(checker: Checker, files: Sequence[tuple[str, str]], jobs: int | None = None,
              progress=None) -> list[list[FileResult]]:
    """Every file checked for every group: for each file (in `files` order), one FileResult per group. The parent
    answers a file every group's cache knows without reading it again; workers check the rest (in parallel when there
    are enough), and the parent stores what they found for each group."""
    caches = checker.caches
    by_file: list[list[FileResult] | None] = [None] * len(files)
    todo: list[int] = []
    if caches is not None:
        from rlcompat.pipeline.cache import content_hash

        for i, (path, _) in enumerate(files):
            try:
                sha = content_hash(read_bytes(path))
            except SourceError:
                todo.append(i)
                continue
            hits = [c.get(path, sha) for c in caches]
            if all(h is not None for h in hits):
                by_file[i] = hits
            else:
                todo.append(i)
        if progress and len(todo) < len(files):
            progress(len(files) - len(todo))
    else:
        todo = list(range(len(files)))
    for i, results in zip(todo, run_parallel(checker, _check_one, [files[i] for i in todo], jobs, progress)):
        by_file[i] = results
        if caches is not None:
            for cache, result in zip(caches, results):
                if result.content_sha is not None and not result.reads_other_files:
                    cache.put(result, result.content_sha)
    if caches is not None:
        for cache in caches:
            cache.save()
    return by_file  # type: ignore[return-value]


def check_files(checker: Checker, files: Sequence[tuple[str, str]], jobs: int | None = None, progress=None) -> list[FileResult]:
    """`check_all` for a checker of one target: its results sorted by path."""
    return sorted((results[0] for results in check_all(checker, files, jobs, progress)), key=lambda r: r.path)


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
