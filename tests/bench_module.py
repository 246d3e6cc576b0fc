"""Loading a script of bench/ as a module, for the tests of the benchmarks' own logic (bench/ is no package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parent.parent / "bench"


def load_bench(script: str, name: str | None = None) -> ModuleType:
    """bench/<script> as module `name` (registered in sys.modules: dataclasses and worker processes look it up)."""
    name = name or Path(script).stem
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCH / script)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
