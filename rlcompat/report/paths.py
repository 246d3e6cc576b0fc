"""File names in machine output. A name that is not UTF-8 reaches Python as text with lone surrogates
(surrogateescape); JSON and SARIF documents must be UTF-8, so such a name is written as a URI reference
percent-encoded from its bytes (lossless), and as display text with U+FFFD where a byte is not UTF-8."""

from __future__ import annotations

import os
from pathlib import PurePath
from urllib.parse import quote


def uri_reference(path: str) -> str:
    """Absolute paths as `file:` URIs, others relative (GitHub code scanning reads them against the repository
    root), percent-encoded from the file name's bytes, so spaces, `#` and names that are not UTF-8 survive."""
    pure = PurePath(path)  # drops a leading `./`
    if pure.is_absolute():
        return pure.as_uri()
    return quote(os.fsencode(pure.as_posix()), safe="/")


def display_path(path: str) -> str:
    """The path as valid Unicode text: unchanged when the name is UTF-8, else each byte that is not as U+FFFD."""
    return os.fsencode(path).decode("utf-8", "replace")
