"""Files inside a verl package that its version never reads (`[[unread]]` of rules/verl/<version>.toml).

Such a file is not checked for hazards: a finding there would point at a line no run uses. Discovery leaves it out
and the report lists it as "not read by verl <version>: <why>". Only a file inside a verl package whose version is
found in the tree itself is left out: the installed verl says nothing about a copied tree, and an unknown version
supports no claim about which files it reads.
"""

from __future__ import annotations

import os
from functools import lru_cache


@lru_cache(maxsize=1)
def _unread_names() -> frozenset[str]:
    """Base names of every unread file of every rule set: a cheap first test for each discovered file."""
    from rlcompat.verl_knowledge import available_versions, load_version

    return frozenset(os.path.basename(f) for v in available_versions() for f in load_version(v).unread)


@lru_cache(maxsize=256)
def _package_root(directory: str) -> str | None:
    """The verl package directory (`.../verl`, holding `trainer/`) that contains `directory`, if any."""
    if os.path.basename(directory) == "verl" and os.path.isdir(os.path.join(directory, "trainer")):
        return directory
    parent = os.path.dirname(directory)
    return None if parent == directory else _package_root(parent)


def why_unread(path: str) -> str:
    """"not read by verl X: why" for a file the tree's verl version never reads, else ""."""
    if os.path.basename(path) not in _unread_names():
        return ""
    from rlcompat.verl_knowledge import _load, choose_version, version_in_tree

    full = os.path.abspath(path)
    root = _package_root(os.path.dirname(full))
    if root is None:
        return ""
    detected = version_in_tree(root)
    if detected is None:
        return ""
    knowledge = _load(choose_version(detected), detected)
    why = knowledge.unread.get(os.path.relpath(full, root).replace(os.sep, "/"))
    return f"not read by {knowledge.label}: {why}" if why else ""
