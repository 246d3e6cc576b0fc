"""`rlcompat matrix`: every target from one pass over the files.

The runner's Checker runs one (rule set, target) group per target (rlcompat/pipeline/runner.py): each file is read, decoded
and parsed once, and every target's rules run over that one tree, as `scan --target` runs its one group.
Select/ignore, per-file ignores, excludes and inline suppressions apply per target exactly as in `scan`
(tests/test_matrix.py compares the two on the fixtures), and each target's results go to (and come from) the same
cache entries `scan --target` uses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from rlcompat.config import Options
from rlcompat.pipeline.discovery import discover, why_not_checked
from rlcompat.pipeline.runner import Checker, check_all
from rlcompat.pipeline.source import SourceFile
from rlcompat.findings import FileError, FileResult, Finding
from rlcompat.knowledge.identity import Identities
from rlcompat.knowledge.targets import Target
from rlcompat.analysis.launch_path import add_reached


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


def run_matrix(paths: list[str], targets: Sequence[Target], settings: Options | None = None, jobs: int | None = None,
               use_cache: bool = False, scripts: Mapping[str, str] | None = None) -> MatrixRun:
    """Check `paths` for every target in one pass. With `use_cache`, a file every target's cache knows is not read
    again, and what is checked is stored for each target (so a later `scan --target` is answered from it too).
    `scripts`: launch commands given as text, as `api.scan_paths` takes them."""
    settings = settings or Options()
    files, missing = discover(paths, settings)
    identities = Identities.of_paths(paths)  # each scanned tree's framework identity, resolved once
    checker = Checker(targets, settings, use_cache=use_cache, identities=identities)
    by_file = check_all(checker, files, jobs)
    for path, text in (scripts or {}).items():
        by_file.append(checker.check(SourceFile(path, text, "utf-8", False, text.encode("utf-8", "surrogatepass")),
                                     "shell"))
    per_target = [[results[t] for results in by_file] for t in range(len(checker.targets))]
    # What launch scripts' runs reach in their framework, as scan reports it: each framework file parsed once for
    # every target.
    reached: dict[tuple[str, str], list[FileResult]] = {}

    def check_once(path: str, language: str, t: int) -> FileResult:
        if (path, language) not in reached:
            reached[path, language] = checker.check_path(path, language)
        return reached[path, language][t]

    for t, results in enumerate(per_target):
        add_reached(_OneTarget(checker, t), results, dict(scripts) if scripts else None,
                    check=lambda path, language, t=t: check_once(path, language, t))
    return MatrixRun(list(checker.targets), [p for p, _ in files] + list(scripts or ()), per_target, missing,
                     identities)


class _OneTarget:
    """What rlcompat/analysis/launch_path.py asks of a checker of one target, for one of the matrix checker's targets."""

    cache = None  # the framework files it checks are answered by `check_once`, not stored

    def __init__(self, checker: Checker, index: int) -> None:
        self.target = checker.targets[index]
        self._group = checker.groups[index]
        self.settings = checker.settings
        self.tree_identity = checker.tree_identity

    @property
    def suppression_rules(self) -> list:
        return self._group.suppression_rules
