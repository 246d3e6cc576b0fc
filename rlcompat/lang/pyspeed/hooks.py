"""What the pipeline, the CLI and the rule catalog ask of the Python front end's speed machinery: the one door to it
from outside rlcompat/lang/ (besides the package's `plain` switch). Each hook loads its module on first call, so that
importing this one costs nothing; the gate, asked for every rule of every file, is bound once, on first use."""

from __future__ import annotations

from functools import lru_cache


def needs_to_see(rule, text: str) -> bool:
    """Whether `text` holds what `rule` needs to see besides a trigger (`gate`: derived from its declarations)."""
    return _gate().holds(rule, text)


@lru_cache(maxsize=1)
def _gate():
    # bound on first use, not on import: the CLI imports this module for the collector, and `doctor` or `--help`
    # never ask the gate (it brings the rule contract with it)
    from rlcompat.lang.pyspeed import gate

    return gate


def defer_libcst() -> None:
    """Put LibCST's stand-in in place (`lazy`): modules that import it at top level load nothing until first use."""
    from rlcompat.lang.pyspeed.lazy import lazy_import

    lazy_import("libcst")


def load_libcst() -> None:
    """Load LibCST now (a process about to fork workers that will all parse: they share it)."""
    from rlcompat.lang.pyspeed.lazy import load

    load("libcst")


def compile_error(text: str) -> str | None:
    """CPython's complaint about `text` as a module, or None; a big text compiled a chunk at a time (`chunks`)."""
    from rlcompat.lang.pyspeed import chunks

    return chunks.compile_error(text)


def collector_off():
    """The cyclic garbage collector off for a CLI run, what is alive frozen at its end (`collector`)."""
    from rlcompat.lang.pyspeed.collector import collector_off as off

    return off()
