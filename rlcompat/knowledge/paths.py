"""Walking up from a directory: the one loop that finds the nearest enclosing directory with some property (a
project's root marker: `identity.tree_root`; a checkout's `.git`: `install_steps.enclosing_checkout`; a verl package:
`verl_config.package_root`), or the few directories above a file (a model path relative to one of them:
`analysis/model_config.find_config`).

It imports nothing of rlcompat, so that any module may use it without an import cycle (tests/test_import_graph.py).
"""

from __future__ import annotations

import os
from typing import Callable, Iterator


def upwards(directory: str) -> Iterator[str]:
    """`directory`, then each directory above it, up to the filesystem's root."""
    while True:
        yield directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return
        directory = parent


def nearest(directory: str, holds: Callable[[str], bool]) -> str | None:
    """The first of `upwards(directory)` that `holds`, else None."""
    return next((d for d in upwards(directory) if holds(d)), None)
