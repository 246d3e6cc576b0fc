"""What a verl version says of its own files (`[[unread]]` and `[[unselected]]` of
rlcompat/knowledge/data/verl/<version>.toml), for a file inside a verl package whose version is found in the tree
itself: the installed verl says nothing about a copied tree, and an unknown version supports no claim about which
files it reads.

- **Unread**: files the version never reads. Such a file is not checked for hazards (a finding there would point
  at a line no run uses): discovery leaves it out and the report lists it as "not read by verl <version>: <why>".
- **Unselected**: settings that only an option no shipped entry config selects reads: the VeOmni engine
  (`model_engine=veomni`), the reward model (`reward_model.enable`, False in every entry config), the fsdp_turbo
  strategy. In verl's own config files such a setting is not reported: as shipped no run reads it
  (bench/coverage/README.md, "What is a hazard"). A user's launch command or config that selects the option is a
  different file and is checked as usual.
"""

from __future__ import annotations


def why_unread(path: str) -> str:
    """"not read by verl X: why" for a file the tree's verl version never reads, else ""."""
    from rlcompat.knowledge.verl_config import own_file_row  # loaded on the first file, not on import

    found = own_file_row(path, "unread")
    return f"not read by {found[0].label}: {found[1]}" if found else ""


def unselected_prefixes(path: str) -> tuple[str, ...] | None:
    """The key paths of `path` (a file of a verl package) that only an unselected option reads ("" = the whole
    file), or None when nothing of the file is such a setting."""
    from rlcompat.knowledge.verl_config import own_file_row  # loaded on the first file, not on import

    found = own_file_row(path, "unselected")
    return found[1][0] if found else None
