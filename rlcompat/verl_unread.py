"""Files inside a verl package that its version never reads (`[[unread]]` of rlcompat/knowledge/data/verl/<version>.toml).

Such a file is not checked for hazards: a finding there would point at a line no run uses. Discovery leaves it out
and the report lists it as "not read by verl <version>: <why>". Only a file inside a verl package whose version is
found in the tree itself is left out: the installed verl says nothing about a copied tree, and an unknown version
supports no claim about which files it reads.
"""

from __future__ import annotations


def why_unread(path: str) -> str:
    """"not read by verl X: why" for a file the tree's verl version never reads, else ""."""
    from rlcompat.verl_knowledge import own_file_row  # loaded on the first file, not on import

    found = own_file_row(path, "unread")
    return f"not read by {found[0].label}: {found[1]}" if found else ""
