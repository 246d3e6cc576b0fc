"""Which files a rule can match, beyond its triggers: derived from what the rule declares it needs to see.

A rule says what it reads (`Rule.resolves_from`, `keywords`, `calls`, `spelled`, and words it `requires` where none of
those says it: rlcompat/rule.py); this module turns that into words and a pattern a file must hold, so that a file
which cannot hold a finding is never parsed for the rule. Only whole files are gated (narrowing keeps a statement for
its triggers alone); `RLCOMPAT_PLAIN_LIBCST=1` gates nothing (`catalog.can_match`), and tests/test_trigger_gates.py holds
the gate to what the rules find without it.

| declaration | what a file it can match spells |
|---|---|
| `resolves_from = ("torch",)` | `torch`: an import binding a name to torch names the module (`import torch as th`, `from torch import compile`) |
| `resolves_from = (ANY_MODULE,)` | `import`: a name resolved through any import |
| `keywords = ("attn_implementation",)` | the keyword: a call passing it spells it |
| `calls = ("from_pretrained", "LLM")` | one of the names: a call spells the name it calls |
| `spelled = re.compile(...)` | a match of the pattern (searched last, where the words are) |
| `requires = (("True",),)` | one word of each group |

A group every trigger holds a word of is implied by the trigger and not searched again. Within a group a word that
holds another is dropped (`AsyncEngineArgs` beside `EngineArgs`): the other is found
wherever it is.
"""

from __future__ import annotations

from functools import lru_cache

from rlcompat.rule import ANY_MODULE

_IMPORT = "import"  # what every import statement spells


def holds(rule, text: str) -> bool:
    """Whether `text` holds what `rule` needs to see besides a trigger."""
    pattern = rule.spelled
    return (all(any(w in text for w in group) for group in word_groups(rule))
            and (pattern is None or pattern.search(text) is not None))


def word_groups(rule) -> tuple[tuple[str, ...], ...]:
    """The groups of words, one of each of which a file `rule` can match spells, from its declarations."""
    return _groups(rule.resolves_from, rule.keywords, rule.calls, rule.requires, rule.triggers)


@lru_cache(maxsize=None)
def _groups(resolves_from, keywords, calls, requires, triggers) -> tuple[tuple[str, ...], ...]:
    # asked for every file holding a trigger of the rule: worked out once per declaration
    modules = tuple(_IMPORT if m == ANY_MODULE else m for m in resolves_from)
    derived = [_shortest(group) for group in (modules, keywords, calls) if group and not _implied(group, triggers)]
    return (*derived, *requires)


def _implied(words: tuple[str, ...], triggers: tuple[str, ...]) -> bool:
    """Whether every trigger holds one of `words`: a file holding a trigger (asked first) holds one of them too (the
    triggers of a rule that declares only `calls` are those calls)."""
    return bool(triggers) and all(any(w in t for w in words) for t in triggers)


def _shortest(words: tuple[str, ...]) -> tuple[str, ...]:
    """`words` without one that holds another of them (found wherever that one is), in their order."""
    return tuple(w for w in dict.fromkeys(words) if not any(o != w and o in w for o in words))
