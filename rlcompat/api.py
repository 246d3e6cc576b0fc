"""The library API: what the CLI, the pre-commit hook and other tools call."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping

from rlcompat.config import Options
from rlcompat.pipeline.discovery import discover, why_not_checked
from rlcompat.pipeline.runner import Checker, FileResult, check_files, run_parallel
from rlcompat.findings import FileError, Finding
from rlcompat.pipeline.source import SourceFile
from rlcompat.knowledge.identity import Identities, pinned
from rlcompat.analysis.launch_path import add_reached
from rlcompat.knowledge.targets import Target

if TYPE_CHECKING:  # the fixer (and difflib) is imported by the fix functions: a scan never needs it
    from rlcompat.pipeline.fixer import FileFix


@dataclass
class ScanReport:
    target: Target
    results: list[FileResult]
    missing: list[str] = field(default_factory=list)
    not_read: list[tuple[str, str]] = field(default_factory=list)  # (path, why): discovery.discover
    identities: Identities | None = None  # each scanned tree's framework identity (rlcompat/knowledge/identity.py)

    @property
    def findings(self) -> list[Finding]:
        return [f for r in self.results for f in r.findings]

    @property
    def errors(self) -> list[FileError]:
        return [r.error for r in self.results if r.error] + [FileError(m, why_not_checked(m)) for m in self.missing]

    @property
    def files_checked(self) -> int:
        return len(self.results)

    @property
    def suppressed(self) -> int:
        return sum(r.suppressed for r in self.results)


@dataclass
class FixReport:
    target: Target
    fixes: list[FileFix]
    missing: list[str] = field(default_factory=list)
    not_read: list[tuple[str, str]] = field(default_factory=list)
    identities: Identities | None = None

    @property
    def applied(self) -> list[Finding]:
        return [f for x in self.fixes for f in x.applied]

    @property
    def remaining(self) -> list[Finding]:
        return [f for x in self.fixes if x.remaining for f in x.remaining.findings]

    @property
    def errors(self) -> list[FileError]:
        errs = [x.error for x in self.fixes if x.error]
        errs += [x.remaining.error for x in self.fixes if x.remaining and x.remaining.error]
        return errs + [FileError(m, why_not_checked(m)) for m in self.missing]

    @property
    def broken(self) -> list[FileFix]:
        return [x for x in self.fixes if x.broken]

    @property
    def load_checks(self) -> list[str]:
        """Per launch script whose fix was load-checked: "path: what it found" (rlcompat/schema/loadcheck.py)."""
        return [f"{x.path}: {x.load_check.removeprefix('load check: ')}" for x in self.fixes if x.load_check]

    @property
    def changed_files(self) -> list[FileFix]:
        return [x for x in self.fixes if x.changed]


def scan_paths(paths: list[str], target: Target, settings: Options | None = None, jobs: int | None = None,
               progress=None, use_cache: bool = False, scripts: Mapping[str, str] | None = None) -> ScanReport:
    """Check files and directories. `use_cache` reads and writes `.rlcompat_cache/` under the config root.
    `scripts`: launch commands given as text (`--run "python3 -m ..."`), by the path that labels each, checked as
    shell scripts of the directory that path is in."""
    settings = settings or Options()
    not_read: list[tuple[str, str]] = []
    files, missing = discover(paths, settings, not_read)
    identities = Identities.of_paths(paths)  # each scanned tree's framework identity, resolved once
    checker = Checker(target, settings, use_cache=use_cache, identities=identities)
    results = check_files(checker, files, jobs=jobs, progress=progress)
    results += [checker.check_source(_decoded(path, text), "shell") for path, text in (scripts or {}).items()]
    # what each launch script's run reaches in its framework (analysis/launch_path.py)
    add_reached(checker, results, dict(scripts) if scripts else None)
    return ScanReport(target, results, missing, not_read, identities)


def scan_source(text: str, target: Target, path: str = "<string>.py", language: str = "python", settings: Options | None = None,
                frameworks: Mapping[str, str] | None = None) -> list[Finding]:
    """Findings for one piece of source text (no file needed). `frameworks` pins the releases the text runs with
    ({"verl": "0.9.1"}); without it, only the scanning environment's installed frameworks apply, to code that
    uses them."""
    identity = pinned(frameworks, "the caller") if frameworks is not None else None
    result = Checker(target, settings or Options(), identity=identity).check_text(path, text, language)
    if result.error:
        raise ValueError(result.error.one_line())
    return result.findings


def check_text(text: str, target: Target, path: str, language: str, settings: Options | None = None) -> FileResult:
    """Findings, or the parse error, for text already decoded (an editor's buffer): no file is read, and the text is
    taken as it is (a coding cookie says nothing about text that was never bytes)."""
    return Checker(target, settings or Options()).check_source(_decoded(path, text), language)


def fix_text(text: str, target: Target, path: str, language: str, settings: Options | None = None,
             unsafe: bool | None = None) -> FileFix:
    """What `fix` would make of decoded text, without writing anything; `error` says why nothing could be fixed."""
    from rlcompat.pipeline.fixer import FileFix, FixBroke, fix_source

    settings = settings or Options()
    unsafe = settings.unsafe_fixes if unsafe is None else unsafe
    try:
        return fix_source(Checker(target, settings), _decoded(path, text), language, unsafe)
    except FixBroke as exc:
        return FileFix(path, original=text, fixed=text, error=FileError(path, exc.reason), broken=True)


def _decoded(path: str, text: str) -> SourceFile:
    return SourceFile(path, text, "utf-8", False, text.encode("utf-8", "surrogatepass"))


def fix_paths(paths: list[str], target: Target, settings: Options | None = None, unsafe: bool | None = None,
              write: bool = True, progress=None, jobs: int | None = None, use_cache: bool = False,
              skip: Mapping[str, frozenset] | None = None, scripts: Mapping[str, str] | None = None) -> FixReport:
    """Apply fixes (safe ones, plus unsafe ones if asked) file by file, in parallel; `write=False` only computes them.
    `skip`: per file (real path), (line, column, code) of findings whose fixes are left out (`fix --run --minimal`).
    `scripts`: launch commands given as text, as `scan_paths` takes them: fixed as text, never written."""
    from rlcompat.pipeline.fixer import fix_one, fix_source

    settings = settings or Options()
    unsafe = settings.unsafe_fixes if unsafe is None else unsafe
    not_read: list[tuple[str, str]] = []
    files, missing = discover(paths, settings, not_read)
    identities = Identities.of_paths(paths)
    checker = Checker(target, settings, use_cache=use_cache, identities=identities)
    import os

    skip = skip or {}
    out = run_parallel(checker, fix_one, [(p, lang, unsafe, write, skip.get(os.path.realpath(p), frozenset()))
                                          for p, lang in files], jobs, progress)
    out += [fix_source(checker, _decoded(path, text), "shell", unsafe) for path, text in (scripts or {}).items()]
    # What a fixed launch script's run still reaches in its framework stays remaining (launch_path.py): never
    # "nothing remaining" while the run cannot start. Without `write`, the script's fixed text is what is judged.
    add_reached(checker, [x.remaining for x in out if x.remaining is not None],
                {x.path: x.fixed for x in out if (x.changed and not write) or x.path in (scripts or {})})
    return FixReport(target, out, missing, not_read, identities)
