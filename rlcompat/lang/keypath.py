"""The dotted key path of a line of a block-style YAML file, read by indentation (no parse: the line may sit in a
file the YAML parser was not asked to read whole)."""

from __future__ import annotations

import re

_KEY = re.compile(r"\s*([A-Za-z_][\w@.-]*)\s*:")


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


def is_under_prefixes(prefixes: tuple[str, ...], lines: list[str], number: int) -> bool:
    """Whether line `number` sits under one of the key paths `prefixes` ("" = the whole file)."""
    if "" in prefixes:
        return True
    key = key_path_at(lines, number)
    return any(key == p or key.startswith(p + ".") for p in prefixes)
