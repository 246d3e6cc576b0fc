"""Deferred imports for heavy modules that most runs never touch (`RLCOMPAT_PLAIN_LIBCST=1`: imported at once).

Importing libcst is a large part of a short run (it defines hundreds of dataclasses). A warm, cached scan, or a
pre-commit run on files without any trigger, never parses Python, so it should not pay for that. The rule
modules still say `import libcst as cst` at the top, as everyone reads and writes it.

`lazy_import(name)` puts a stand-in module under that name in `sys.modules`. It carries the real module's spec,
so a later `import libcst` finds it and binds it without loading anything (importlib's own LazyLoader does not
survive that: the import system reads the module's `__spec__`, which loads it). The first attribute looked up
on the stand-in imports the real module, copies its namespace into the stand-in and puts the real module back in
`sys.modules`; every reference to the stand-in then reads the real names at plain attribute speed.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types

from rlcompat.lang.pyspeed import plain


class _StandIn(types.ModuleType):
    def __getattr__(self, attr: str):  # only for names not (yet) in the namespace
        if attr.startswith("__") and attr.endswith("__") and attr != "__path__":
            raise AttributeError(attr)  # dunder probes (copy, pickle, inspect) must not load the module
        return getattr(_load(self), attr)


def _load(stand_in: _StandIn) -> types.ModuleType:
    name = stand_in.__name__
    if sys.modules.get(name) is stand_in:
        del sys.modules[name]
    module = importlib.import_module(name)
    stand_in.__dict__.update(module.__dict__)
    return module


def lazy_import(name: str) -> types.ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    if plain():
        return importlib.import_module(name)
    spec = importlib.util.find_spec(name)
    if spec is None:
        raise ImportError(f"No module named {name!r}")
    stand_in = _StandIn(name)
    stand_in.__spec__ = spec
    stand_in.__file__ = spec.origin
    sys.modules[name] = stand_in
    return stand_in


def is_loaded(name: str) -> bool:
    """Whether the module itself is loaded (not only a stand-in for it)."""
    module = sys.modules.get(name)
    return module is not None and not isinstance(module, _StandIn)


def load(name: str) -> None:
    """Load the module now, the real one behind its stand-in if there is one (a process about to fork workers that
    will all need it: they share what it loaded instead of each loading it again)."""
    module = sys.modules.get(name)
    if module is None:
        importlib.import_module(name)
    elif isinstance(module, _StandIn):
        _load(module)
