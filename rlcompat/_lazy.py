"""Deferred imports for heavy modules that most runs never touch.

Importing libcst costs a few hundred milliseconds (it defines hundreds of dataclasses). A warm, cached scan or
a pre-commit run on files without any trigger never parses Python, so it should not pay for that. The module
object is registered at once and executed on first attribute access (importlib.util.LazyLoader).
"""

from __future__ import annotations

import importlib.util
import sys


def lazy_import(name: str):
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ImportError(f"No module named {name!r}")
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module
