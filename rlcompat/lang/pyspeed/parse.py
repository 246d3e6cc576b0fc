"""LibCST's parse without node validation.

LibCST validates every node it constructs (`CSTNode.__post_init__`); for nodes its own parser built from valid
source that is redundant (LibCST's comment there says as much) and a large part of the parse. The check is
switched off for the parse only and restored at once, so nodes a rule or a fix builds are validated as usual.
"""

from __future__ import annotations

from rlcompat.lang.pyspeed import plain
from rlcompat.lang.pyspeed.lazy import lazy_import

cst = lazy_import("libcst")


def _no_validation(self) -> None:
    pass


def parse_module(text: str):
    """`libcst.parse_module(text)`; raises what it raises."""
    if plain():
        return cst.parse_module(text)
    validate = cst.CSTNode.__post_init__
    cst.CSTNode.__post_init__ = _no_validation
    try:
        return cst.parse_module(text)
    finally:
        cst.CSTNode.__post_init__ = validate
