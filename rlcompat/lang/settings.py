"""What every configuration front end shares: a configuration *setting* and rules written once over settings.

A `Setting` is one key with its value, wherever it was written: `dtype: bfloat16` under `rollout:` in a YAML
file, `actor_rollout_ref.rollout.dtype=bfloat16` in a launch script, an argparse flag
(`--attn_implementation flash_attention_2`), an environment variable, a JSON value, a Python keyword argument.
It knows the exact character range of its value, so a fix rewrites that value and leaves every other byte of
the file alone.

Keys, by `origin` (the field says which front end construct produced the setting):

| origin | key | example -> key |
|---|---|---|
| `yaml` | dotted path of mapping keys | `rollout:` / `dtype:` -> `rollout.dtype` |
| `hydra-override` | the override's key, without `+`/`++`/`~` (kept in `prefix`) | `+a.b=1` -> `a.b` |
| `flag` (`flag=True`) | argparse's *dest*: leading dashes dropped, `-` -> `_`, dots kept | `--ds.param_dtype` -> `ds.param_dtype`, `--flash-attn` -> `flash_attn` |
| `env` | the variable's name, as written (`export X=...`, `X=... cmd`, `os.environ[...]`) | `VLLM_ATTENTION_BACKEND` |
| `json` | dotted path of object keys (array items by index) | `{"bf16": {"enabled": true}}` -> `bf16.enabled` |
| `toml` | dotted path of tables and keys (array items and `[[tables]]` by index) | `[compile]` / `enable = true` -> `compile.enable` |
| `argparse-default` (`flag=True`) | the flag's dest, as for `flag`; the value span is the `default=` literal | `add_argument("--dtype", default="bf16")` -> `dtype` |
| `python-keyword` | the keyword; `call` holds the called name as written | `GRPOConfig(bf16=True)` -> `bf16`, call `GRPOConfig` |
| `python-field` | a class-body field default (dataclass, pydantic, config class) | `bf16: bool = True` -> `bf16` |
| `python-dict` | dotted path of a dict literal's string keys | `{"bf16": {"enabled": True}}` -> `bf16.enabled` |
| `python-assign` | the attribute or string subscript assigned; `call` is the object's name | `args.bf16 = True` -> `bf16` |

(`origin == ""` only from callers that predate the field.) `written` keeps a flag as the user wrote it
(`--flash-attn`), for messages: `label` is `written or key`. A bare switch (`--bf16` with no value) has
`value == ""` and `switch=True`. `flag_key("--x-y")` is the normalisation, and `ConfigView.flags()` accepts names
either way. Values are strings as written (unquoted): a Python `True` is "True", a JSON `true` is "true",
`None`/`null` stay words; a value rlcompat cannot know is None (then `value_span` is None too). `via` says where
a value from a shell variable was set; `value_span` then points there (the assignment, a `${X:-default}`, a heredoc
line), which is where a fix edits.

A `ConfigView` is the set of settings that configure one run: a YAML document, one command in a script (with the
environment variables in force for it), a script's exports (`kind == "env"`), a JSON file, a Python file's
settings. Rules (`ConfigRule.check_config`) ask a view for keys: `get(key)` and `by_name(*names)` for keys (never
flags or env vars), `flags(*names)`, `env(*names)`; a shell view of a verl command can also *add* an override for
a key that the script leaves at a hazardous code default. A config rule reads Python files only if it declares
python in its `languages` (its `python_triggers` mark the statements read).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import cached_property
from typing import ClassVar, Sequence

from rlcompat.lang.languages import names_with, spelling_of
from rlcompat.lang.scanned import ScannedView
from rlcompat.findings import Edit, Fix, FixSafety
from rlcompat.rule import Rule, spelled_words

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
    origin: str = ""  # which construct wrote it (module docstring); "" for YAML and Hydra overrides of old callers
    written: str = ""  # a flag as written (`--flash-attn`); "" where the key is what was written
    switch: bool = False  # a flag given with no value (`--bf16`)
    call: str = ""  # Python: the called name of a keyword argument (`GRPOConfig`), the class of a field
    guards: frozenset = frozenset()  # Python: the names the enclosing `if` tests read (`elif self.bf16:` -> bf16, self)

    @property
    def label(self) -> str:
        """How a message names the setting: as the user wrote it."""
        return self.written or self.key

    @property
    def env(self) -> bool:
        return self.origin == "env"

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
        if isinstance(new, bool) and self.origin in ("json", "toml") and self.word_span is not None:
            # A JSON or TOML string ("auto") becomes the boolean literal, quotes and all: the string "false" is truthy to
            # the Python that reads the config (DeepSpeed's `if bf16_enabled`).
            spelling = spelling_of(self.origin)
            return Edit(self.word_span.start, self.word_span.end, spelling.true if new else spelling.false)
        text = new if isinstance(new, str) else _bool_like(new, self.value)
        return Edit(self.value_span.start, self.value_span.end, text)


    def rewrite_null(self, text: str) -> Edit | None:
        """An edit that sets the value to null (None in Python). A quoted YAML, JSON or shell value loses its
        quotes: `"null"` is the string null, which a framework reads as a name, not as "off"."""
        if self.value_span is None or self.value is None:
            return None
        start, end = self.value_span.start, self.value_span.end
        if 0 < start and end < len(text) and text[start - 1] == text[end] and text[end] in "'\"":
            start, end = start - 1, end + 1
        return Edit(start, end, spelling_of(self.origin).null)


def flag_key(flag: str) -> str:
    """The key of a command-line flag: argparse's dest (`--ds.param-dtype` -> `ds.param_dtype`)."""
    return flag.lstrip("-").replace("-", "_")


def _bool_like(value: bool, original: str) -> str:
    word = "true" if value else "false"
    if original.isupper():
        return word.upper()
    if original[:1].isupper():
        return word.capitalize()
    if original.strip() in ("0", "1"):
        return "1" if value else "0"
    return word


def _first(entry: tuple) -> object:
    return entry[0]


@dataclass
class ConfigView:
    """The settings of one run: one YAML document or one command in a script."""

    kind: str  # "yaml" | "command" | "env" (a script's exports) | "json" | "toml" | "python" | "unread" (a command the
    # shell parser could not read: `anchor`, `unread`)
    settings: list[Setting] = field(default_factory=list)
    mounts: tuple[str, ...] = ("",)  # where the keys sit in verl's tree ("" for a whole config)
    is_verl: bool = False  # a verl config file or a verl training command
    anchor: Span | None = None  # what a finding about a missing key points at (the command's entry word; a TOML
    # file's first line)
    sections: dict[str, Span] = field(default_factory=dict)  # TOML: `[table]` headers by dotted path; YAML: the
    # keys whose values are mappings (and "": a block root mapping's first key): where a finding about a key the
    # table or mapping leaves out points
    command_words: tuple[str, ...] = ()  # the resolved words of a command (for engines and flags)
    word_spans: tuple[Span, ...] = ()  # where each of command_words is written (a wrapper's words share its span)
    _adder: object = None  # shell: callable(key_with_prefix, value) -> Edit; TOML, YAML: callable(dotted key, value)
    # A command: callable(command_words, key_with_prefix) -> (key as the run's config takes it | None, why not),
    # handed by whoever knows the scanned tree (ScannedView.spell_added_key; rlcompat/schema/gate.py)
    _gate: object = None
    unread: str = ""  # kind "unread": why the parser refused the command
    image: str = ""  # a command: the container image it runs in, where its file names it (a Kubernetes container's
    # `image:`, a compose service's, a Dockerfile stage's FROM): that image's software runs it, whatever the tree declares

    def get(self, key: str) -> Setting | None:
        """The last setting of `key` (Hydra: the last override wins), under any of the view's mount points."""
        return self._by_key.get(key)

    @cached_property
    def _by_key(self) -> dict[str, Setting]:
        index: dict[str, Setting] = {}
        for s in self.settings:
            if not s.flag and s.origin != "env":
                for path in self.paths_of(s):
                    index[path] = s  # a later setting of the same key replaces an earlier one
        return index

    def flags(self, *names: str) -> list[Setting]:
        """Flags by name, written either way (`--flash-attn`, `flash_attn`): see `flag_key`."""
        keys = {flag_key(n) for n in names}
        return [s for s in self.settings if s.flag and s.key in keys]

    def env(self, *names: str) -> list[Setting]:
        """Environment variables in force for this view (`export`ed before it, or set inline)."""
        return [s for s in self.settings if s.origin == "env" and s.key in names]

    def by_name(self, *names: str) -> list[Setting]:
        """Settings (not flags or env vars) whose last key segment is one of `names`, at any depth: for generic keys."""
        built_from, count, index = self._by_name
        if built_from is not self.settings or count != len(built_from):  # replaced, or settings added since it was
            del self.__dict__["_by_name"]  # built (a script's exports go first)
            _, _, index = self._by_name
        found = [entry for name in dict.fromkeys(names) for entry in index.get(name, ())]
        if len(names) > 1:
            found.sort(key=_first)  # in the settings' order, as they are written
        return [s for _, s in found]

    @cached_property
    def _by_name(self) -> tuple[list[Setting], int, dict[str, list[tuple[int, Setting]]]]:
        """(the list of settings it was built from, their number, the name -> (position, setting) of each setting
        `by_name` answers): rules ask several names of each view, and a Python file's view can hold thousands of
        settings (torch's `op_db` table: 8,665)."""
        index: dict[str, list[tuple[int, Setting]]] = {}
        for i, s in enumerate(self.settings):
            if not s.flag and s.origin != "env":
                index.setdefault(s.name, []).append((i, s))
        return self.settings, len(self.settings), index

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
        """An edit adding the override `key=value` to this command, in the script's style, the key to its TOML
        table, or (YAML) the key to the mapping the file writes for its parent; None where there is no such place."""
        if self._adder is None:
            return None
        if self.kind == "command" and self._gate is not None:
            spelled, why = self._gate(self.command_words, key)
            if spelled is None:
                return Refused(why)
            key = spelled
        return self._adder(key, value)


@dataclass(frozen=True)
class Refused:
    """What `ConfigView.add` gives back where the run's own config does not take the key: no edit, and why. A finding
    reported with it keeps no fix, and its message says why (`ConfigContext.report`)."""

    why: str


class ConfigRule(Rule):
    """Base for rules over configuration settings (YAML files and launch scripts)."""

    # The languages whose front ends give configuration views (`settings` in rlcompat/lang/languages.py). Not Python
    # by default: most config rules ask for verl's full Hydra keys, which Python code does not write, and reading
    # settings costs an `ast` parse of every file holding a trigger. A rule whose settings Python writes too
    # (argparse defaults, config fields, call keywords: lang/pysettings.py) adds "python"; its triggers then mark the
    # statements whose settings are read.
    languages = names_with("settings")
    # Python files: the words that mark those statements. Derived for a rule that only adds "python" to its
    # languages: what its findings spell (`names`, `strings`; not verl's config and entry words, which no Python
    # setting spells). A rule names them only where they are fewer or narrower than that (the statements are read
    # once for every config rule, so a common word such as `dtype` would have every statement of a model file read),
    # saying why; it declares python too (one that does not is refused when its class is made).
    python_triggers: ClassVar[tuple[str, ...]] = ()
    # Rules that look at commands the shell parser could not read (views of kind "unread"); the others never see them.
    reads_unread: ClassVar[bool] = False
    # The kinds of framework keys it judges (`kind` of a key in rlcompat/knowledge/data/frameworks/): a Python file
    # is read for it only where it spells one of their keys (`reads_python`).
    kinds: ClassVar[frozenset[str]] = frozenset()

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if cls.python_triggers and "python" not in cls.languages:
            # `languages` alone says where a rule runs (tests/test_rule_languages.py holds the front ends to it)
            raise TypeError(f"{cls.__name__} names python_triggers but does not declare python in its languages")
        if "python" in cls.languages and not cls.python_triggers:
            cls.python_triggers = spelled_words(cls)

    def reads_python(self, text: str, scanned: ScannedView | None) -> bool:
        """Whether this rule can report a setting of the Python `text` (which holds one of its `python_triggers`):
        a rule of framework keys (`kinds`) only where the text spells one of them (the words `scanned`, the file
        being checked, hands over; without it, always)."""
        if not self.kinds or scanned is None:
            return True
        return spells_one_of(text, scanned.python_key_words(self.kinds))

    def reads_parameters(self, text: str, scanned: ScannedView | None) -> bool:
        """Whether this rule judges the parameter defaults of the Python `text`'s functions (framework keys of form
        `param`): then the file is checked even where it holds no setting."""
        if not self.kinds or scanned is None:
            return False
        words = scanned.parameter_key_words(self.kinds)
        return bool(words) and spells_one_of(text, words)

    def check_config(self, view: ConfigView, ctx: "ConfigContext") -> None:
        raise NotImplementedError


# A key built by an escape (`"use_\\x76llm"`) or a backslash-newline inside a string is not spelled in the text: such a
# file is read whatever it spells.
_UNSPELLED = re.compile(r"\\(?:[xuUN0-7]|\r?\n|\r)")


def spells_one_of(text: str, words: frozenset[str] | None) -> bool:
    """Whether the Python `text` can hold a setting whose key's last name part is one of `words` (lower case, `-` as
    `_`; None: any text can): it spells one (any case, `-` or `_`; identifiers compared as CPython reads them, NFKC),
    or builds a string from escapes. Like a trigger, the key is a word the file spells: one split over adjacent
    string literals (`"use_" "vllm"`) counts only where the file spells one of the words elsewhere."""
    if words is None or _UNSPELLED.search(text):
        return True
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    text = text.lower().replace("-", "_")
    return any(w in text for w in words)


@dataclass
class _Pending:
    rule: ConfigRule
    span: Span
    message: str
    fix: Fix | None
    severity: str = ""  # overrides the rule's severity for this finding


class ConfigContext:
    """What a rule sees: the target, verl's knowledge for the scanned version, and `report`."""

    def __init__(self, target, path: str, verl, source_text: str = "", framework=None, model_shape=None,
                 record_reads=None, scanned=None) -> None:
        self.target = target
        self.source_text = source_text
        self.path = path
        self.verl = verl  # verl's knowledge for the file's verl identity (rlcompat/knowledge/verl_config.py)
        # name -> the scanned tree's identity of that framework (rlcompat/knowledge/identity.py), resolved by the caller
        self.framework = framework
        # a local model's path -> its shape, looked for beside the file; the file's knowledge records the look-up
        self.model_shape = model_shape
        # other files a rule read to decide (a requirements file's `-r` file, uv.lock): the result depends on them
        self.record_reads = record_reads or (lambda paths: None)
        # the scanned file as the runner hands it (rlcompat/pipeline/scanned_file.py: its tree's identity and root, its
        # text), for rules that ask what the tree declares beyond its frameworks (a Triton pin); None outside a scan
        self.scanned = scanned
        self.pending: list[_Pending] = []
        self._rule: ConfigRule | None = None
        # what rules of this file learn once and share (analysis/command_framework.py: the frameworks a command runs)
        self.memo: dict = {}

    def report(self, span: Span, message: str, edits: Sequence[Edit | None] = (), safety: FixSafety = FixSafety.SAFE,
               description: str = "", severity: str = "") -> None:
        assert self._rule is not None
        refused = [e.why for e in edits if isinstance(e, Refused)]
        real = tuple(sorted(e for e in edits if isinstance(e, Edit)))
        fix = Fix(real, safety, description) if real and len(real) == len(edits) else None
        if refused:
            message = f"{message} (no fix: {'; '.join(dict.fromkeys(refused))})"
        self.pending.append(_Pending(self._rule, span, message, fix, severity))
