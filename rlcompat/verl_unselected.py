"""Settings inside a verl package that only an option no shipped entry config selects reads (`[[unselected]]` of
rlcompat/knowledge/data/verl/<version>.toml): the VeOmni engine (`model_engine=veomni`), the reward model (`reward_model.enable`,
False in every entry config), the fsdp_turbo strategy.

In verl's own config files such a setting is not reported: as shipped no run reads it (bench/coverage/README.md,
"What is a hazard"). A user's launch command or config that selects the option is a different file and is checked
as usual. Only a file inside a verl package whose version is found in the tree itself is filtered, as for
`[[unread]]` files (rlcompat/verl_unread.py).
"""

from __future__ import annotations

import re

_KEY = re.compile(r"\s*([A-Za-z_][\w@.-]*)\s*:")


def unselected_prefixes(path: str) -> tuple[str, ...] | None:
    """The key paths of `path` (a file of a verl package) that only an unselected option reads ("" = the whole
    file), or None when nothing of the file is such a setting."""
    from rlcompat.verl_knowledge import own_file_row  # loaded on the first file, not on import

    found = own_file_row(path, "unselected")
    return found[1][0] if found else None


def key_path_at(lines: list[str], number: int) -> str:
    """The dotted YAML key path of line `number` (1-based) in a block-style file, by indentation."""
    text = lines[number - 1]
    indent = len(text) - len(text.lstrip())
    match = _KEY.match(text)
    path = [match.group(1)] if match and not text.lstrip().startswith("#") else []
    for above in reversed(lines[: number - 1]):
        stripped = above.lstrip()
        if not stripped or stripped.startswith("#"):
            continue
        depth = len(above) - len(stripped)
        if depth < indent:
            match = _KEY.match(above)
            if match:
                path.insert(0, match.group(1))
            indent = depth
            if depth == 0:
                break
    return ".".join(path)


def is_unselected_line(prefixes: tuple[str, ...], lines: list[str], number: int) -> bool:
    if "" in prefixes:
        return True
    key = key_path_at(lines, number)
    return any(key == p or key.startswith(p + ".") for p in prefixes)
