"""Applying fixes: non-overlapping edits, repeated until nothing more applies, re-parsed before any write."""

from __future__ import annotations

import bisect
import difflib
from dataclasses import dataclass, field

from rlcompat.pipeline.discovery import language_from_content
from rlcompat.pipeline.runner import Checker, FileResult, ParseFailure, validate
from rlcompat.findings import Edit, Finding, FileError
from rlcompat.pipeline.source import SourceError, SourceFile, encode, read, read_bytes, write_atomic

MAX_PASSES = 10


class FixBroke(Exception):
    """A fix produced text that does not parse: a bug in a rule. The file is left untouched."""

    def __init__(self, path: str, codes: set[str], problem: str) -> None:
        self.reason = f"fixing {', '.join(sorted(codes))} would make the file {problem}; nothing was written, please report this"
        super().__init__(f"{path}: {self.reason}")


@dataclass
class FileFix:
    path: str
    applied: list[Finding] = field(default_factory=list)  # findings whose fix was applied
    remaining: FileResult | None = None  # the check of the fixed text
    # The text before and after, kept only where they differ (for --diff): a fix of a big tree would otherwise hold,
    # and send back from every worker, two copies of every file it did not change.
    original: str = ""
    fixed: str = ""
    error: FileError | None = None
    broken: bool = False  # a rule's fix would have made this file unparsable: a bug in rlcompat (exit 2)
    load_check: str = ""  # what the load check of a fixed launch script found, in words (rlcompat/schema/loadcheck.py)

    @property
    def changed(self) -> bool:
        return self.fixed != self.original


def apply_edits(text: str, edits: list[Edit]) -> tuple[str, list[Edit]]:
    """Apply edits that do not overlap an earlier one; returns the text and the edits applied."""
    chosen: list[Edit] = []
    last_end = -1
    for e in sorted(edits):
        if e.start < last_end or (chosen and e.start == chosen[-1].start and e.end == chosen[-1].start):
            continue
        chosen.append(e)
        last_end = e.end
    out, pos = [], 0
    for e in chosen:
        out.append(text[pos:e.start])
        out.append(e.content)
        pos = e.end
    out.append(text[pos:])
    return "".join(out), chosen


def fix_source(checker: Checker, source: SourceFile, language: str, unsafe: bool,
               withheld: frozenset[tuple[str, str]] = frozenset(),
               skip: frozenset[tuple[int, int, str]] = frozenset()) -> FileFix:
    """The fixed text of `source`. `withheld`: (code, message) of findings whose fix is not applied (the load check
    refused it). A fix is applied once: an insertion whose text already stands right where it would go (the same
    override appended by an earlier pass, which the parser did not read as set) is not made again. `skip`: (line,
    column, code) of findings left as they are (`fix --run --minimal`: those the run does not reach)."""
    language = language_from_content(language, source.text)  # a YAML job spec is fixed (and re-parsed) as one
    result = FileFix(source.path, original=source.text, fixed=source.text)
    text = source.text
    current = checker.check_source(source, language)
    compiles: bool | None = None  # whether CPython compiles the original (asked once, only if a fix applies)
    for _ in range(MAX_PASSES):
        if current.error:
            break
        fixable = [f for f in current.findings if f.fix is not None and f.fix.applies(unsafe)
                   and (f.code, f.message) not in withheld
                   and (f.location.line, f.location.column, f.code) not in skip
                   and not any(_repeats(text, e) for e in f.fix.edits)]
        if not fixable:
            break
        # A fix's edits go in together or not at all, so one finding never ends half-fixed.
        taken_edits = _TakenEdits()
        taken: list[Finding] = []
        for f in fixable:
            if all(taken_edits.has(e) for e in f.fix.edits):  # the same change another finding's fix makes
                taken.append(f)
            elif not any(taken_edits.overlaps(e) for e in f.fix.edits):
                taken_edits.add(f.fix.edits)
                taken.append(f)
        new_text, _ = apply_edits(text, taken_edits.edits)
        if language == "python" and compiles is None:
            compiles = _compile_error(source.text) is None
        if language == "python" and compiles:
            # A file that compiled must still compile. CPython's compiler rejects more than LibCST's grammar
            # (`f(fp16=True, fp16=False)`, a repeated keyword), so it is the re-parse, and it is much cheaper than
            # LibCST's whole-file parse of a big file (docs/performance.md, item 17).
            error = _compile_error(new_text)
            if error is not None:
                raise FixBroke(source.path, {f.code for f in taken}, f"uncompilable ({error})")
        else:
            try:
                validate(language, new_text)
            except ParseFailure as exc:
                raise FixBroke(source.path, {f.code for f in taken}, f"unparsable ({exc})") from exc
        text = new_text
        result.applied.extend(taken)
        current = checker.check_source(_with_text(source, text), language)
    result.fixed = text
    result.remaining = current
    return result


def _repeats(text: str, edit: Edit) -> bool:
    """An insertion of text that is already right before or after where it goes."""
    size = len(edit.content)
    return (edit.start == edit.end and size > 0
            and (text[edit.start - size:edit.start] == edit.content or text[edit.start:edit.start + size] == edit.content))


def _compile_error(text: str) -> str | None:
    """CPython's complaint about `text` as a module (syntax the grammar allows but the compiler does not), or None;
    a big text is compiled a few top-level statements at a time (a whole 3 MB file's compile takes 400 MB)."""
    from rlcompat.lang.pyspeed.hooks import compile_error

    return compile_error(text)


def _overlaps(a: Edit, b: Edit) -> bool:
    return a.start < b.end and b.start < a.end or (a.start == b.start)


class _TakenEdits:
    """The edits taken in one pass, kept sorted: none overlaps another, so an edit can only overlap the one that
    starts at or before it and those starting inside it (checking against every taken edit would be quadratic in a
    file's findings)."""

    def __init__(self) -> None:
        self.edits: list[Edit] = []
        self._starts: list[int] = []

    def overlaps(self, edit: Edit) -> bool:
        i = bisect.bisect_right(self._starts, edit.start)
        if i and _overlaps(edit, self.edits[i - 1]):
            return True
        return i < len(self.edits) and _overlaps(edit, self.edits[i])

    def has(self, edit: Edit) -> bool:
        i = bisect.bisect_left(self._starts, edit.start)
        while i < len(self.edits) and self._starts[i] == edit.start:
            if self.edits[i] == edit:
                return True
            i += 1
        return False

    def add(self, edits) -> None:
        for edit in edits:
            i = bisect.bisect_right(self._starts, edit.start)
            self._starts.insert(i, edit.start)
            self.edits.insert(i, edit)


def _with_text(source: SourceFile, text: str) -> SourceFile:
    return SourceFile(source.path, text, source.encoding, source.bom, source.raw)


def fix_file(checker: Checker, path: str, language: str, unsafe: bool, write: bool,
             skip: frozenset[tuple[int, int, str]] = frozenset()) -> FileFix:
    try:
        source = read(path, language)
    except SourceError as exc:
        return FileFix(path, error=FileError(path, str(exc)))
    language = language_from_content(language, source.text)
    if checker.cache is not None:
        # Unchanged since a scan that found nothing to fix: no need to parse it again.
        from rlcompat.pipeline.cache import content_hash

        hit = checker.cache.get(path, content_hash(source.raw))
        if hit is not None and not any(f.fix and f.fix.applies(unsafe) for f in hit.findings):
            return FileFix(path, remaining=hit)
    try:
        outcome = fix_source(checker, source, language, unsafe, skip=skip)
    except FixBroke as exc:
        # Only this file is left alone; the others are still fixed and the run ends with exit 2.
        broken = _not_written(FileFix(path), checker.check_source(source, language), exc.reason)
        broken.broken = True
        return broken
    if outcome.changed and language in ("shell", "notebook", "dockerfile", "jobspec"):
        outcome = _load_checked(checker, source, language, unsafe, outcome)
    if outcome.changed and write:
        try:
            current = read_bytes(path)
        except SourceError as exc:
            return _not_written(outcome, None, f"{exc}; nothing was written")
        if current != source.raw:
            # Edited (or checked out) while we worked: writing now would throw the new content away.
            return _not_written(outcome, None, "changed on disk while being fixed; nothing was written, run fix again")
        try:
            data = encode(source, outcome.fixed)
        except UnicodeEncodeError as exc:
            return _not_written(outcome, checker.check_source(source, language),
                                f"the fixed text cannot be saved as {source.encoding} ({exc.reason}); the file is "
                                "unchanged, please report this")
        try:
            write_atomic(path, data)
        except SourceError as exc:
            return _not_written(outcome, checker.check_source(source, language), str(exc))
    if not outcome.changed:
        outcome.original = outcome.fixed = ""
    return outcome


def _load_checked(checker: Checker, source: SourceFile, language: str, unsafe: bool, outcome: FileFix) -> FileFix:
    """The fix of a launch script whose commands run a Hydra entry point of the tree, kept only where the tree's
    config still loads with it (rlcompat/schema/loadcheck.py). The fixes of a command that loaded before and does not
    after are withheld; the findings stay, saying why. Where the check cannot run, the outcome says so."""
    import os

    from rlcompat.knowledge.identity import VERL
    from rlcompat.schema.loadcheck import check_fixed

    tree = checker.tree_identity(source.path)
    verl = tree.get(VERL)
    if not tree.root:
        return outcome
    # A verl package of the tree's own: its config decides. Without one, the tree's own entry points still do (a
    # recipe's HfArgumentParser over its dataclasses, a Hydra entry point of its own); installed programs' do not.
    own_verl = bool(verl.package) and verl.how in ("release", "fork")
    package = os.path.normpath(os.path.join(tree.root, verl.package)) if own_verl else None
    verdict = check_fixed(source.path, source.text, outcome.fixed, tree.root, package, language=language)
    if not own_verl and not verdict.ran:
        return outcome  # nothing of the tree's own was loaded: the knowledge of an installed release decided
    outcome.load_check = _load_words(verdict)
    if not verdict.broken:
        return outcome
    first = checker.check_source(source, language)
    inside = [f for f in first.findings if f.fix is not None and any(
        b.start <= e.start <= b.end for e in f.fix.edits for b in verdict.broken)]
    why = {(f.code, f.message): next(b for b in verdict.broken if any(b.start <= e.start <= b.end for e in f.fix.edits))
           for f in inside}
    retry = fix_source(checker, source, language, unsafe, withheld=frozenset(why))
    if retry.changed and check_fixed(source.path, source.text, retry.fixed, tree.root, package,
                                     language=language).broken:
        why = {(f.code, f.message): verdict.broken[0] for f in first.findings if f.fix is not None}
        retry = fix_source(checker, source, language, unsafe, withheld=frozenset(why))
    retry.load_check = outcome.load_check
    if retry.remaining is not None:
        retry.remaining.findings = [_withheld(f, why[(f.code, f.message)]) if (f.code, f.message) in why else f
                                    for f in retry.remaining.findings]
    return retry


def _withheld(finding: Finding, broken) -> Finding:
    from dataclasses import replace

    note = (f" (fix withheld: with it, {broken.config} does not load for the command at line {broken.line}: "
            f"{broken.error})")
    return replace(finding, message=finding.message + note, fix=None)


def _load_words(verdict) -> str:
    if verdict.not_run and not verdict.ran:
        return f"load check not run: {verdict.not_run}"
    composed = verdict.checked - verdict.parsed
    parts = ([f"{composed} command(s) composed with the tree's config"] if composed else []) + (
        [f"{verdict.parsed} command(s) parsed with the tree's dataclasses"] if verdict.parsed else [])
    words = "load check: " + ", ".join(parts)
    if verdict.broken:
        words += f", {len(verdict.broken)} would not load with the fix, which was withheld"
    if verdict.failed_before:
        words += f", {verdict.failed_before} did not load before the fix either"
    return words if verdict.checked else ""


def _not_written(outcome: FileFix, on_disk: FileResult | None, message: str) -> FileFix:
    """A fix computed but not written: report the file as it is on disk, not as the fix would have left it.

    `on_disk` is the check of the unchanged file (None when the file changed under us and what it holds now is
    unknown), so its findings still count as remaining and nothing is reported as fixed that was not written.
    """
    return FileFix(outcome.path, remaining=on_disk, error=FileError(outcome.path, message))


def unified_diff(outcome: FileFix) -> str:
    return "".join(
        difflib.unified_diff(
            outcome.original.splitlines(keepends=True),
            outcome.fixed.splitlines(keepends=True),
            fromfile=f"a/{outcome.path}",
            tofile=f"b/{outcome.path}",
        )
    )


def fix_one(checker: Checker, item: tuple) -> FileFix:
    """Worker entry for parallel fixing: (path, language, unsafe, write[, skip]) (`fix_source`'s `skip`)."""
    path, language, unsafe, write, *rest = item
    return fix_file(checker, path, language, unsafe=unsafe, write=write, skip=rest[0] if rest else frozenset())
