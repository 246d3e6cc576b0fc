"""An installed distribution's version, found as `importlib.metadata.version` finds it, without importing it.

`importlib.metadata` pulls in the `email` package, `zipfile`, `csv` and their kin: about 45 ms of CPU on the
project's machine, an eighth of a one-file scan, which asks only for the versions of the frameworks a tree neither
contains nor pins (rlcompat/knowledge/identity.py). For the layout every installer writes (directories on
`sys.path` holding `<name>-<version>.dist-info/` or `.egg-info/`), `version` does what `importlib.metadata` does,
step by step (CPython 3.10-3.13 `importlib/metadata/__init__.py`: `Prepared`, `Lookup`, `FastPath`,
`PathDistribution.metadata`): the first matching entry in `sys.path` order, listed as `os.listdir` lists it; the
`Version` header of its METADATA, else PKG-INFO, read as the `email` parser's compat32 policy reads a header.
Anything else (a zip or non-directory entry on `sys.path`, a meta path finder of its own that lists
distributions, an `.egg` directory, a header block this reader does not follow) is handed to `importlib.metadata`.
tests/test_distributions.py holds it to `importlib.metadata` for every distribution installed here and for made-up
layouts.
"""

from __future__ import annotations

import functools
import importlib.machinery
import os
import re
import sys

_SEPARATORS = re.compile(r"[-_.]+")
_INFO_SUFFIXES = (".dist-info", ".egg-info")
# A header line as the email feed parser recognises one (`email.feedparser.headerRE`), and a continuation line.
_HEADER = re.compile(r"[\041-\071\073-\176]*:")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")  # lines as the feed parser splits them


class _Unsure(Exception):
    """This reader does not follow the layout or the file: `importlib.metadata` answers."""


def version(distribution: str) -> str | None:
    """`importlib.metadata.version(distribution)`, or None where it raises PackageNotFoundError."""
    try:
        return _version(distribution)
    except _Unsure:
        from importlib import metadata

        try:
            return metadata.version(distribution)
        except metadata.PackageNotFoundError:
            return None


def _version(distribution: str) -> str | None:
    if not distribution or any(getattr(finder, "find_distributions", None) is not None
                               and finder is not importlib.machinery.PathFinder for finder in sys.meta_path):
        raise _Unsure
    wanted = _normalized(distribution)
    for entry in sys.path:
        if not isinstance(entry, str):
            raise _Unsure
        root = entry or "."
        try:
            mtime = os.stat(root).st_mtime
        except OSError:
            continue  # FastPath lists nothing where there is nothing
        info = _listed(root, mtime).get(wanted)
        if info is not None:
            return _header_version(info)
    return None


def _normalized(name: str) -> str:
    return _SEPARATORS.sub("-", name).lower().replace("-", "_")  # Prepared.normalize


@functools.lru_cache(maxsize=256)
def _listed(root: str, mtime: float) -> dict[str, str]:
    """The metadata directories in `root` by normalized name, the first `os.listdir` lists of each: `Lookup`, which
    importlib.metadata builds once per directory and modification time, as here."""
    if not os.path.isdir(root):
        raise _Unsure  # a zip: FastPath lists its members
    if os.path.basename(root).lower().endswith(".egg"):
        raise _Unsure
    try:
        children = os.listdir(root)
    except OSError:
        return {}  # FastPath.children lists nothing it cannot read
    found: dict[str, str] = {}
    for child in children:
        low = child.lower()
        if low.endswith(_INFO_SUFFIXES):
            found.setdefault(_normalized(low.rpartition(".")[0].partition("-")[0]), os.path.join(root, child))
    return found


def _header_version(info: str) -> str | None:
    """The `Version` header of the metadata in `info` (PathDistribution.metadata: METADATA, else PKG-INFO)."""
    for name in ("METADATA", "PKG-INFO"):
        try:
            with open(os.path.join(info, name), encoding="utf-8") as fh:
                text = fh.read()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
            continue
        if text:
            return _first_header(text, "version")
    raise _Unsure  # no metadata: importlib.metadata reads the directory itself


def _first_header(text: str, wanted: str) -> str | None:
    """The value of the first `wanted` header (any case) of an RFC 822 header block, as compat32 gives it: the text
    after the colon without leading blanks, the line end stripped."""
    lines = _LINE.findall(text)
    found: str | None = None
    for line in lines:
        if line[:1] in (" ", "\t"):
            if found is not None:
                raise _Unsure  # a folded value: importlib.metadata re-indents it (`_adapters.Message`)
            continue
        if found is not None:
            break
        if line in ("\n", "\r\n", "\r"):
            return None
        if line.startswith("From ") or not _HEADER.match(line):
            raise _Unsure  # the feed parser's own handling of a malformed block
        name, _, value = line.partition(":")
        if name.lower() == wanted:
            found = value.lstrip(" \t").rstrip("\r\n")
    return found
