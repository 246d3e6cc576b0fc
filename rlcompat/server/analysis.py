"""One open document checked the way `rlcompat scan` checks a file named on its command line: the language from
the file's name, `[tool.rlcompat]` from the nearest pyproject.toml, the same rules through `rlcompat.api`. The
text is the editor's buffer, never the file on disk. No pygls here (`lsp.py` turns this into LSP messages).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

from rlcompat.api import check_text, fix_text
from rlcompat.config import ConfigError, Options, load_options
from rlcompat.pipeline.discovery import json_skip_reason, language_of, toml_skip_reason
from rlcompat.lang.languages import LANGUAGES
from rlcompat.findings import Edit, Finding
from rlcompat.server.positions import UTF16, PositionMap
from rlcompat.knowledge.targets import Target, TargetError, resolve_target

# For a buffer with no file name yet (an "untitled:" URI): the editor's language identifier, as LSP lists them
# (https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#textDocumentItem).
LANGUAGE_IDS = {lang.editor_id: lang.name for lang in LANGUAGES if lang.editor_id}


@dataclass(frozen=True)
class EditorSettings:
    """What the editor's client configuration says (`initializationOptions`, or `rlcompat` in the settings a
    `workspace/didChangeConfiguration` sends). Given, each wins over `[tool.rlcompat]`, as a command-line option does."""

    target: str | None = None
    unsafe_fixes: bool | None = None

    @classmethod
    def from_client(cls, value) -> "EditorSettings":
        if not isinstance(value, dict):
            return cls()
        value = value.get("rlcompat", value) if isinstance(value.get("rlcompat"), dict) else value
        spec = value.get("target")
        unsafe = value.get("unsafeFixes", value.get("unsafe-fixes"))
        return cls(spec if isinstance(spec, str) and spec.strip() else None, unsafe if isinstance(unsafe, bool) else None)


@dataclass
class Analysis:
    path: str
    text: str
    language: str | None
    settings: Options | None = None
    target: Target | None = None
    findings: list[Finding] = field(default_factory=list)
    problem: str = ""  # why nothing was checked (bad config, unknown target): one line for the user
    parse_error: str = ""
    parse_error_line: int = 0  # 1-based; 0 when the front end did not say
    bom: int = 0  # 1 when the buffer starts with U+FEFF, which the front ends never see

    @property
    def unsafe_fixes(self) -> bool:
        return bool(self.settings and self.settings.unsafe_fixes)

    def offered(self, finding: Finding) -> bool:
        """Whether a finding's fix is offered: safe ones always, unsafe ones only when configured."""
        return finding.fix is not None and finding.fix.applies(self.unsafe_fixes)

    def span(self, finding: Finding) -> tuple[int, int]:
        """The finding's start and end as offsets into the buffer."""
        body = self._body_map
        loc = finding.location
        start = body.location_offset(loc.line, loc.column)
        end = max(start, body.location_offset(loc.end_line, loc.end_column))
        return start + self.bom, end + self.bom

    def edits(self, finding: Finding) -> list[Edit]:
        """The finding's fix as edits of the buffer."""
        return [Edit(e.start + self.bom, e.end + self.bom, e.content) for e in finding.fix.edits] if finding.fix else []

    def fix_all(self) -> Edit | None:
        """Every offered fix at once, as `rlcompat fix` applies them (passes until none is left, each re-parsed), as
        one edit of the part of the buffer that changes; None when nothing changes or a fix would break the file."""
        if self.settings is None or self.target is None or not self.language:
            return None
        body = self.text[self.bom:]
        outcome = fix_text(body, self.target, self.path, self.language, self.settings, self.unsafe_fixes)
        if outcome.error or not outcome.changed:
            return None
        return _changed_span(body, outcome.fixed, self.bom)

    @cached_property
    def _body_map(self) -> PositionMap:
        return PositionMap(self.text[self.bom:], UTF16)  # only its line index is used: columns are characters here


def language_for(path: str, language_id: str | None = None) -> str | None:
    """The front end `scan` uses for a file named so; for a name that says nothing, the editor's language id."""
    by_name = language_of(path, explicit=True)
    return by_name or LANGUAGE_IDS.get(language_id or "")


def analyse(path: str, text: str, language: str | None, editor: EditorSettings) -> Analysis:
    bom = 1 if text.startswith("\ufeff") else 0
    found = Analysis(path, text, language, bom=bom)
    if not language:
        return found
    try:
        settings = load_options([path])
    except ConfigError as exc:
        found.problem = str(exc)
        return found
    found.settings = settings = settings.with_overrides(unsafe_fixes=editor.unsafe_fixes)
    if _left_out(path, language, settings):
        return found
    spec = editor.target or settings.target or "auto"
    try:
        found.target = _target(spec)
    except TargetError as exc:
        found.problem = f"{exc}; or set target in the editor's rlcompat settings"
        return found
    result = check_text(text[bom:], found.target, path, language, settings)
    if result.error:
        found.parse_error = result.error.message
        found.parse_error_line = result.error.line or 0
    found.findings = result.findings
    return found


def _left_out(path: str, language: str, settings: Options) -> bool:
    """What `scan` leaves out of the files named to it, plus the excludes: an editor opens any file, the vendored
    ones under .venv/ too, as pre-commit names any staged file (`force-exclude`)."""
    if language == "json" and json_skip_reason(path) or language == "toml" and toml_skip_reason(path):
        return True
    return os.path.isabs(path) and settings.is_excluded(path)


@lru_cache(maxsize=8)
def _target(spec: str) -> Target:
    return resolve_target(spec)  # `auto` asks NVML once per server, not at every keystroke


def _changed_span(old: str, new: str, shift: int) -> Edit:
    """One edit turning `old` into `new`: the part between their common start and common end."""
    start = 0
    limit = min(len(old), len(new))
    while start < limit and old[start] == new[start]:
        start += 1
    end = 0
    while end < limit - start and old[len(old) - 1 - end] == new[len(new) - 1 - end]:
        end += 1
    return Edit(start + shift, len(old) - end + shift, new[start:len(new) - end])
