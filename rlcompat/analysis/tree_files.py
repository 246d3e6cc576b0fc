"""The files of a scanned tree an analysis reads beside the file it checks (the launch files that run an entry point:
analysis/entry_switches.py; the Python that reads a config key: analysis/guarded_reads.py): one walk with one set of
folders left out, one cap on how many files, one size bound on what is read. Read as text, never run.
"""

from __future__ import annotations

import os
from typing import Callable, Iterator

MAX_FILES = 2000
MAX_BYTES = 1_000_000
SKIP_DIRS = frozenset({"__pycache__", "node_modules", "site-packages", "build", "dist", "venv"})


def tree_files(root: str, keep: Callable[[str], bool] | None = None) -> Iterator[str | None]:
    """Each file under `root` that `keep` accepts (every file where None), in a stable order, hidden and build or
    vendor folders left out; then a None where over MAX_FILES were accepted: what an unread tree means is the caller's
    to say."""
    seen = 0
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(files):
            path = os.path.join(directory, name)
            if keep is not None and not keep(path):
                continue
            seen += 1
            if seen > MAX_FILES:
                yield None
                return
            yield path


def bounded_text(path: str) -> str | None:
    """The file's text, or None where it is over MAX_BYTES or cannot be read."""
    try:
        if os.path.getsize(path) > MAX_BYTES:
            return None
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None
