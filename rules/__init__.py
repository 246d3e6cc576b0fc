"""rlcompat's knowledge: the GPU target table (targets.toml, sources.toml) and the rule catalog.

One rule per file, named after its code: `rlc101_torch_bfloat16_dtype.py` holds RLC101. This package is
installed as `rlcompat.rules`, from a wheel and an editable install alike.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache


@lru_cache(maxsize=1)
def all_rules() -> tuple[type, ...]:
    """Every rule class in the catalog, ordered by code."""
    from rlcompat._lazy import lazy_import
    from rlcompat.rule import Rule

    lazy_import("libcst")  # rule modules import it at top level; defer the cost to the first parse
    found = []
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("rlc"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        found.extend(
            obj
            for obj in vars(module).values()
            if isinstance(obj, type) and issubclass(obj, Rule) and obj.__module__ == module.__name__
            and getattr(obj, "code", None)
        )
    return tuple(sorted(found, key=lambda r: r.code))
