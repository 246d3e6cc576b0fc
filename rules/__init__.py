"""rlcompat's knowledge: the GPU target table (targets.toml, sources.toml) and the rule catalog.

Rules live in family packages (meta/, dtype/, attention/, triton_compile/, rollout/, environment/,
declared_environment/), one rule per
file named after the rule (`dtype/torch_bfloat16_dtype.py` holds RLC101 torch-bfloat16-dtype); what a family's
rules share is in its `helpers.py`. `codes.py` assigns every code to its module. This package is installed as
`rlcompat.rules`, from a wheel and an editable install alike.
"""

from __future__ import annotations

import importlib
from functools import lru_cache

from rlcompat.rules.codes import CODES, ENVIRONMENT_FAMILY


def all_rules() -> tuple[type, ...]:
    """Every rule class in the catalog, ordered by code."""
    return tuple(sorted(file_rules() + environment_rules(), key=lambda r: r.code))


def file_codes() -> tuple[str, ...]:
    """The codes of the rules that check files, in code order, importing none of them."""
    return tuple(code for code, location in CODES.items() if location.partition(".")[0] != ENVIRONMENT_FAMILY)


@lru_cache(maxsize=1)
def file_rules() -> tuple[type, ...]:
    """The rules that check files (what scan and fix run), ordered by code: every family but `environment`,
    whose modules scan and fix never import (about 14 ms a start)."""
    return _load(lambda family: family != ENVIRONMENT_FAMILY)


@lru_cache(maxsize=1)
def environment_rules() -> tuple[type, ...]:
    """The rules that check the machine (what doctor runs): the `environment` family, ordered by code."""
    return _load(lambda family: family == ENVIRONMENT_FAMILY)


def _load(wanted_family) -> tuple[type, ...]:
    found = [rule_class(code) for code, location in CODES.items() if wanted_family(location.partition(".")[0])]
    return tuple(sorted(found, key=lambda r: r.code))


@lru_cache(maxsize=None)
def rule_class(code: str) -> type:
    """The rule class of `code`, its module imported now (and only it: a run that needs a few rules loads those)."""
    from rlcompat.lang.pyspeed.hooks import defer_libcst
    from rlcompat.rule import Rule

    defer_libcst()  # rule modules import it at top level; defer the cost to the first parse
    location = CODES[code]
    module = importlib.import_module(f"{__name__}.{location}")
    rules = [
        obj
        for obj in vars(module).values()
        if isinstance(obj, type) and issubclass(obj, Rule) and obj.__module__ == module.__name__
        and getattr(obj, "code", None)
    ]
    if [r.code for r in rules] != [code]:
        raise ImportError(f"rules/codes.py maps {code} to {location}, which defines {[r.code for r in rules]}")
    return rules[0]
