"""What the YAML and shell front ends share: a configuration *setting* and rules written once over settings.

A `Setting` is one dotted Hydra key with its value, wherever it was written: `dtype: bfloat16` under
`rollout:` in a YAML file, `actor_rollout_ref.rollout.dtype=bfloat16` in a launch script, or an argparse flag
(`--attn_implementation flash_attention_2`). It knows the exact character range of its value, so a fix
rewrites that value and leaves every other byte of the file alone.

A `ConfigView` is the set of settings that configure one run: a YAML document, or one training command in
a script. Rules (`ConfigRule.check_config`) ask a view for keys; a shell view can also *add* an override
for a key that the script leaves at a hazardous code default.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import ClassVar, Sequence

from rlcompat.model import Edit, Finding, Fix, FixSafety, Location
from rlcompat.rule import Rule
from rlcompat.textpos import LineIndex

TRUE_WORDS = {"true", "yes", "on", "1"}
FALSE_WORDS = {"false", "no", "off", "0"}


@dataclass(frozen=True)
class Span:
    start: int
    end: int


@dataclass
class Setting:
    key: str  # full dotted key, without Hydra's +/++/~ prefix; a flag's name (`--bf16`) for argparse flags
    value: str | None  # the literal value, unquoted; None when it is computed (`$(...)`, a mapping, ...)
    key_span: Span  # what a finding points at
    value_span: Span | None  # the characters to replace to change the value (inside any quotes)
    via: str = ""  # where a value from a variable was set: "MODEL=... on line 4"
    prefix: str = ""  # Hydra's "+", "++" or "~"
    flag: bool = False  # an argparse flag rather than a Hydra key
    word_span: Span | None = None  # the whole shell word (or words, for `--flag value`), for removal

    def as_bool(self) -> bool | None:
        if self.value is None:
            return None
        low = self.value.strip().lower()
        return True if low in TRUE_WORDS else False if low in FALSE_WORDS else None

    @property
    def name(self) -> str:
        return self.key.rsplit(".", 1)[-1]

    def rewrite(self, new: str | bool) -> Edit | None:
        """An edit that sets the value to `new`, keeping the spelling style of booleans (False/false/FALSE)."""
        if self.value_span is None or self.value is None:
            return None
        text = new if isinstance(new, str) else _bool_like(new, self.value)
        return Edit(self.value_span.start, self.value_span.end, text)


def _bool_like(value: bool, original: str) -> str:
    word = "true" if value else "false"
    if original.isupper():
        return word.upper()
    if original[:1].isupper():
        return word.capitalize()
    if original.strip() in ("0", "1"):
        return "1" if value else "0"
    return word


@dataclass
class ConfigView:
    """The settings of one run: one YAML document or one command in a script."""

    kind: str  # "yaml" | "command" | "unread" (a command the shell parser could not read: `anchor`, `unread`)
    settings: list[Setting] = field(default_factory=list)
    mounts: tuple[str, ...] = ("",)  # where the keys sit in verl's tree ("" for a whole config)
    is_verl: bool = False  # a verl config file or a verl training command
    anchor: Span | None = None  # what a finding about a missing key points at (the command's entry word)
    command_words: tuple[str, ...] = ()  # the resolved words of a command (for engines and flags)
    word_spans: tuple[Span, ...] = ()  # where each of command_words is written (a wrapper's words share its span)
    _adder: object = None  # shell: callable(key_with_prefix, value) -> Edit
    unread: str = ""  # kind "unread": why the parser refused the command

    def get(self, key: str) -> Setting | None:
        """The last setting of `key` (Hydra: the last override wins), under any of the view's mount points."""
        return self._by_key.get(key)

    @cached_property
    def _by_key(self) -> dict[str, Setting]:
        index: dict[str, Setting] = {}
        for s in self.settings:
            if not s.flag:
                for path in self.paths_of(s):
                    index[path] = s  # a later setting of the same key replaces an earlier one
        return index

    def flags(self, *names: str) -> list[Setting]:
        return [s for s in self.settings if s.flag and s.key in names]

    def by_name(self, *names: str) -> list[Setting]:
        """Settings (not flags) whose last key segment is one of `names`, at any depth: for generic keys."""
        return [s for s in self.settings if not s.flag and s.name in names]

    def paths_of(self, setting: Setting) -> list[str]:
        """Every full key the setting stands for (one per mount point)."""
        return [f"{m}.{setting.key}" if m else setting.key for m in self.mounts]

    def full_key(self, setting: Setting) -> str:
        """How a finding names the key: its full path (a config-group file mounted twice says so)."""
        if not self.mounts[0]:
            return setting.key
        also = f" (this file is also mounted at {', '.join(self.mounts[1:])})" if len(self.mounts) > 1 else ""
        return f"{self.mounts[0]}.{setting.key}{also}"

    @property
    def can_add(self) -> bool:
        return self._adder is not None

    def add(self, key: str, value: str) -> Edit | None:
        """An edit adding the override `key=value` to this command, in the script's style; None for YAML."""
        return self._adder(key, value) if self._adder is not None else None


class ConfigRule(Rule):
    """Base for rules over configuration settings (YAML files and launch scripts)."""

    languages = frozenset({"yaml", "shell", "markdown"})  # markdown: its shell code blocks
    # Rules that look at commands the shell parser could not read (views of kind "unread"); the others never see them.
    reads_unread: ClassVar[bool] = False

    def check_config(self, view: ConfigView, ctx: "ConfigContext") -> None:
        raise NotImplementedError


@dataclass
class _Pending:
    rule: ConfigRule
    span: Span
    message: str
    fix: Fix | None
    severity: str = ""  # overrides the rule's severity for this finding


class ConfigContext:
    """What a rule sees: the target, verl's knowledge for the scanned version, and `report`."""

    def __init__(self, target, path: str, knowledge, source_text: str = "") -> None:
        self.target = target
        self.source_text = source_text
        self.path = path
        self.verl = knowledge
        self.pending: list[_Pending] = []
        self._rule: ConfigRule | None = None

    def report(self, span: Span, message: str, edits: Sequence[Edit | None] = (), safety: FixSafety = FixSafety.SAFE,
               description: str = "", severity: str = "") -> None:
        assert self._rule is not None
        real = tuple(sorted(e for e in edits if e is not None))
        fix = Fix(real, safety, description) if real and len(real) == len(edits) else None
        self.pending.append(_Pending(self._rule, span, message, fix, severity))


def run_rules(views: Sequence[ConfigView], text: str, path: str, rules: Sequence[ConfigRule], target) -> list[Finding]:
    from rlcompat.verl_knowledge import knowledge_for

    ctx = ConfigContext(target, path, knowledge_for(path), text)
    for view in views:
        for rule in rules:
            ctx._rule = rule
            rule.check_config(view, ctx)
    index = LineIndex(text)
    findings, seen = [], set()
    for p in ctx.pending:
        # One YAML file can be mounted at several places (engine/fsdp.yaml: actor, ref, critic): one finding per
        # line, not one per mount. Findings about different keys at one anchor (a script's missing overrides) stay.
        if (p.rule.code, p.span.start, p.message) in seen:
            continue
        seen.add((p.rule.code, p.span.start, p.message))
        line, col = index.position(p.span.start)
        end_line, end_col = index.position(max(p.span.start, p.span.end))
        findings.append(
            Finding(
                code=p.rule.code,
                name=p.rule.name,
                message=p.message,
                path=path,
                location=Location(line, col + 1, end_line, end_col + 1),
                target=target.name,
                severity=p.severity or p.rule.severity,
                fix=p.fix,
                source_line=index.line_text(line),
            )
        )
    return findings
