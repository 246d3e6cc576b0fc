"""The tree's own shell script a command runs (`bash generation/register_server.sh $MODEL`, `sh x.sh`, `./x.sh`,
`source x.sh`), and the first of its commands that a rule asks about.

An iterative recipe's loop script starts its generation servers through a helper script of the tree (RLHFlow's
run_loop.sh runs `bash generation/register_server.sh`, which starts eight vLLM servers); the loop is what the user
starts, so a rule that reports the server command may report the call too, naming the line it reaches. The script is
found beside the calling script or at the tree's root (loops are run from there); only its text is read, never run.
Its lines are split as the shell splits words (continuations joined, comments dropped, `NAME=value` prefixes left
out); a line whose quoting does not close is skipped.
"""

from __future__ import annotations

import os
import re
import shlex
from typing import Callable

from rlcompat.pipeline.source import text_of

SHELLS = frozenset({"bash", "sh", "zsh", "dash"})
SOURCING = frozenset({"source", "."})
_ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")


def called_script(words: tuple[str, ...], path: str) -> str | None:
    """The tree's shell script the command `words` of the script at `path` runs, or None: `bash|sh [options]
    FILE`, `source|. FILE`, or FILE itself when it ends in `.sh`."""
    from rlcompat.knowledge.identity import tree_root

    if not words or not path:
        return None
    head = words[0].rsplit("/", 1)[-1]
    if head in SHELLS:
        if "-c" in words[1:]:
            return None  # `bash -c CODE`: code written here (lang/shell.py reads it), no file
        named = next((w for w in words[1:] if not w.startswith("-")), None)
    elif head in SOURCING:
        named = words[1] if len(words) > 1 else None
    else:
        named = words[0] if words[0].endswith(".sh") else None
    if not named or not named.endswith(".sh") or "$" in named:
        return None
    here = os.path.dirname(os.path.abspath(path))
    for base in (here, tree_root(path)):
        full = os.path.normpath(os.path.join(base, named))
        if os.path.isfile(full) and full != os.path.abspath(path):
            return full
    return None


def first_command(script: str, wanted: Callable[[tuple[str, ...]], bool]) -> int | None:
    """The 1-based line of the first command of `script` whose words `wanted` accepts, or None."""
    text = text_of(script, "shell")
    if text is None:
        return None
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        first, logical = i, lines[i]
        while logical.endswith("\\") and i + 1 < len(lines):
            i += 1
            logical = logical[:-1] + " " + lines[i]
        i += 1
        try:
            words = shlex.split(logical, comments=True)
        except ValueError:
            continue
        while words and _ASSIGNMENT.match(words[0]):
            words = words[1:]
        if words and wanted(tuple(words)):
            return first + 1
    return None
