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


def why_unread(path: str) -> str:
    """"not read by verl X: why" for a file the tree's verl version never reads, else ""."""
    if os.path.basename(path) not in _unread_names():
        return ""
    from rlcompat.verl_knowledge import knowledge_for, package_root, version_in_tree

    full = os.path.abspath(path)
    root = package_root(os.path.dirname(full))
    if root is None:
        return ""
    if version_in_tree(root) is None:
        return ""  # no claim about which files an unknown version reads
    knowledge = knowledge_for(full)  # the tree's own version (found above), never the installed one
    why = knowledge.unread.get(os.path.relpath(full, root).replace(os.sep, "/"))
    return f"not read by {knowledge.label}: {why}" if why else ""
