"""What a rule is: metadata, the targets it applies to, and its own examples (which run as tests).

A rule lives in one file of its family under rules/, named after the rule (rules/dtype/torch_bfloat16_dtype.py),
and has its code assigned in rules/codes.py.
Whether a rule has an autofix is derived from its examples, so the docs cannot drift from the code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType
from typing import TYPE_CHECKING, ClassVar, Mapping


if TYPE_CHECKING:
    from rlcompat.knowledge.targets import Target


# `resolves_from = (ANY_MODULE,)`: the names a rule reports resolve through an import of any module.
ANY_MODULE = "*"

# The release most examples of verl's rules are written for: `Bad(..., frameworks=VERL_091)`.
VERL_091: Mapping[str, str] = MappingProxyType({"verl": "0.9.1"})


@dataclass(frozen=True)
class Bad:
    """Code the rule reports on `target`; `fixed` is what `fix` makes of it (None: no autofix)."""

    code: str
    target: str = "sm61"
    fixed: str | None = None
    unsafe: bool = False  # the fix needs --unsafe-fixes
    path: str = "example.py"
    # The framework releases the example's code runs with ({"verl": "0.9.1"}): its identity (rlcompat/knowledge/identity.py).
    # Every other framework is unknown, whatever the scanning environment has installed.
    frameworks: Mapping[str, str] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class Good:
    """Code the rule must not report on `target`."""

    code: str
    target: str = "sm61"
    path: str = "example.py"
    frameworks: Mapping[str, str] = field(default_factory=dict, hash=False)  # as Bad.frameworks


class Rule:
    code: ClassVar[str]  # "RLC101"
    name: ClassVar[str]  # "torch-bfloat16-dtype"
    title: ClassVar[str]  # one line, shown in listings
    what: ClassVar[str]  # what it does
    why: ClassVar[str]  # why it breaks which targets, with sources [Sxx] from rlcompat/knowledge/data/sources.toml
    fix_safety: ClassVar[str]  # when the fix is safe, when not
    languages: ClassVar[frozenset[str]] = frozenset({"python"})
    # What the code of every finding spells, declared once: from it the rule's `triggers` are derived (the words one
    # of which a file must hold for the rule to run, and for a Python rule the words that keep a statement when
    # narrowing: `derived_triggers`), never written by hand (a class that writes them is refused).
    # A name, attribute or key as the code writes it, a command word, or the piece of a construct that marks it
    # (`LLM(`, `dtype: str`).
    names: ClassVar[tuple[str, ...]] = ()
    # The text of a string literal every finding holds (RLC109: `"auto"` or `'auto'`).
    strings: ClassVar[tuple[str, ...]] = ()
    # Config rules: words of verl's config keys it reads that no Python setting spells (verl's Megatron YAML
    # `attention_backend`); they wake it in configs and commands, never mark a Python statement (`python_triggers`).
    config_names: ClassVar[tuple[str, ...]] = ()
    # Config rules: it reports at verl launch commands (a key they leave at a bad default, an override verl refuses):
    # the entry words of every known verl release wake it (rlcompat/knowledge/data/verl/<version>.toml
    # `[entry_points] triggers`).
    verl_commands: ClassVar[bool] = False
    # Config rules: verl setting ids whose key verl's own configs leave out of a mapping (`omitted_in`), which it
    # reports at the mapping: such a file spells the mapping's name, not the key.
    verl_omitted: ClassVar[tuple[str, ...]] = ()
    # Derived from the declarations above (`derived_triggers`); where a rule declares none of them, from `calls`, else
    # `keywords` (a call spells its name and its keywords). An instance may widen them (RLC002 watches other rules).
    triggers: ClassVar[tuple[str, ...]] = ()
    # What the rule needs to see, besides a trigger: the Python front end derives from it which files can hold a
    # finding (rlcompat/lang/pyspeed/gate.py); only whole files are gated by it (a statement is kept for its triggers
    # alone), with `RLCOMPAT_PLAIN_LIBCST=1` it gates nothing, and tests/test_trigger_gates.py and
    # tests/test_plain_libcst.py hold it to what the rule finds without it.
    # The top-level modules every name it reports resolves through an import of (`ctx.qualname`, a Triton kernel's
    # decorator): RLC101 reports `torch.bfloat16` however torch was imported. `ANY_MODULE`: an import of any module.
    resolves_from: ClassVar[tuple[str, ...]] = ()
    # The call keywords one of which every call it reports passes (RLC209: `attn_implementation=`).
    keywords: ClassVar[tuple[str, ...]] = ()
    # The called names, as the call spells them, one of which every call it reports has (RLC109: `from_pretrained`).
    calls: ClassVar[tuple[str, ...]] = ()
    # The kinds of role (rlcompat/analysis/pyhelpers.py `role_of`: keyword, positional, assign, ...) every node it
    # reports sits in; empty: any. Inside a big statement its triggers keep a part only where they sit in one
    # (rlcompat/lang/pyspeed/parts.py): RLC101 reports a dtype selected, never one listed in a table of dtypes.
    reports_roles: ClassVar[frozenset[str]] = frozenset()
    # A rule that visits only calls: the called names (as `calls` spells them) and the keywords, one of which every
    # call it reads has (those it reports and those it only reads, RLC108's AMP switches); empty: any call. Inside a
    # big statement its triggers keep a part only where it holds such a call (lang/pyspeed/parts.py).
    reads_calls: ClassVar[tuple[str, ...]] = ()
    reads_keywords: ClassVar[tuple[str, ...]] = ()
    # The shape of every construct it reports, as the text spells it, where words say too little (RLC109:
    # `dtype="auto"`, with any spacing or comment the grammar allows, or an escape that could spell it).
    spelled: ClassVar[re.Pattern | None] = None
    # Groups of words a file it can match holds, one word of each group, where none of the above says it: a rule
    # that keeps one says why.
    requires: ClassVar[tuple[tuple[str, ...], ...]] = ()
    # Python rules see a node, its ancestors and the imports before it, so statements without a trigger are
    # left out before parsing (rlcompat/lang/pyspeed/narrow.py). A rule that reads other statements says so here.
    whole_module: ClassVar[bool] = False
    # A whole-module rule that only reports decorated functions whose decorator or a parameter's annotation is
    # imported from these top-level modules (RLC301: `@triton.jit` kernels, `tl.constexpr` parameters) needs the
    # whole module only in a file that has such a function; elsewhere it cannot match anything, and its triggers
    # keep nothing.
    whole_module_for_decorators_from: ClassVar[tuple[str, ...]] = ()
    severity: ClassVar[str] = "error"
    # 0: a rule written for its hazard; 1: a rule driven by framework knowledge data; 2: the generic net. A finding
    # on the same characters as one from a rule of lower precedence is dropped (config rules), so data never
    # repeats what a written rule already says (rlcompat/pipeline/overlaps.py decides).
    precedence: ClassVar[int] = 0
    sources: ClassVar[tuple[str, ...]] = ()
    # Codes also selected when this rule's examples run (a meta rule needs the rules it watches).
    examples_select: ClassVar[tuple[str, ...]] = ()
    bad: ClassVar[tuple[Bad, ...]] = ()
    good: ClassVar[tuple[Good, ...]] = ()

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "triggers" in cls.__dict__:
            raise TypeError(f"{cls.__name__} writes its triggers: declare what its findings spell instead (names, "
                            "strings, calls, keywords, config_names, verl_commands, verl_omitted: rlcompat/rule.py)")
        cls.triggers = derived_triggers(cls)

    def __init__(self, target: Target) -> None:
        self.target = target

    @classmethod
    def applies_to(cls, target: Target) -> bool:
        raise NotImplementedError

    @classmethod
    def has_fix(cls) -> bool:
        return any(b.fixed is not None for b in cls.bad)

    @classmethod
    def targets(cls) -> list[str]:
        from rlcompat.knowledge.targets import all_targets

        return [t.name for t in all_targets() if cls.applies_to(t)]


def spelled_words(rule) -> tuple[str, ...]:
    """The words `rule` declares the code of its findings spells: its `names` and its `strings` quoted either way."""
    return (*rule.names, *(f"{quote}{text}{quote}" for text in rule.strings for quote in ('"', "'")))


def derived_triggers(rule) -> tuple[str, ...]:
    """The words one of which a file `rule` can match holds, from what it declares: what its findings spell, verl's
    config words, verl's entry words where it reports at verl commands, the mappings verl's configs leave its keys
    out of; where it declares none of these, the names of the calls it reports, else their keywords."""
    found = (*spelled_words(rule), *rule.config_names, *(_verl_entry_words() if rule.verl_commands else ()),
             *(w for setting in rule.verl_omitted for w in _verl_omitting(setting)))
    return tuple(dict.fromkeys(found or rule.calls or rule.keywords))


@lru_cache(maxsize=1)
def _verl_entry_words() -> tuple[str, ...]:
    from rlcompat.knowledge.verl_config import entry_triggers

    return entry_triggers()


@lru_cache(maxsize=None)
def _verl_omitting(setting_id: str) -> tuple[str, ...]:
    from rlcompat.knowledge.verl_config import omitted_mapping_names

    return omitted_mapping_names(setting_id)


def triggers_in(rule, language: str) -> tuple[str, ...]:
    """What makes `rule` run on a file of `language`: a config rule reads Python through its `python_triggers`."""
    if language == "python" and hasattr(rule, "python_triggers"):
        return rule.python_triggers
    return rule.triggers
