"""rlcompat's knowledge: the GPU target table (targets.toml, sources.toml) and the rule catalog.

One rule per file, named after its code: `rlc101_torch_bfloat16_dtype.py` holds RLC101. This package is
installed as `rlcompat.rules`, from a wheel and an editable install alike.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache


# RLC5xx rules check the machine (`rlcompat doctor`), never files; tests/test_environment_rules.py holds every
# rule to that. Knowing it from the file name lets scan and fix skip importing them (about 14 ms a start).
_ENVIRONMENT_PREFIX = "rlc5"


def all_rules() -> tuple[type, ...]:
    """Every rule class in the catalog, ordered by code."""
    return tuple(sorted(file_rules() + environment_rules(), key=lambda r: r.code))


@lru_cache(maxsize=1)
def file_rules() -> tuple[type, ...]:
    """The rules that check files (what scan and fix run), ordered by code."""
    return _load(lambda name: not name.startswith(_ENVIRONMENT_PREFIX))


@lru_cache(maxsize=1)
def environment_rules() -> tuple[type, ...]:
    """The rules that check the machine (what doctor runs), ordered by code."""
    return _load(lambda name: name.startswith(_ENVIRONMENT_PREFIX))


def _load(wanted) -> tuple[type, ...]:
    from rlcompat._lazy import lazy_import
    from rlcompat.rule import Rule

    lazy_import("libcst")  # rule modules import it at top level; defer the cost to the first parse
    found = []
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("rlc") or not wanted(info.name):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        found.extend(
            obj
            for obj in vars(module).values()
            if isinstance(obj, type) and issubclass(obj, Rule) and obj.__module__ == module.__name__
            and getattr(obj, "code", None)
        )
    return tuple(sorted(found, key=lambda r: r.code))
