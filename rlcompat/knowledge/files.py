"""The knowledge files (rlcompat/knowledge/data/, installed with the package): where one is, and reading it.

    load("targets.toml")                  -> the parsed table (a new dict on each call: loaders cache their own)
    load("verl", "0.9.1.toml")            -> a file of a per-framework folder
    names("verl")                         -> ("0.4.1", ..., "0.9.1"): a folder's files, without ".toml"

A malformed file raises `KnowledgeFileError`, one line naming the file.
"""

from __future__ import annotations

import functools
from importlib import resources

from rlcompat._toml import KNOWLEDGE_ERRORS, load_knowledge_text

DATA = "data"
LOCATION = "rlcompat/knowledge/data"  # how messages name the folder (the source tree's path, and the wheel's)


class KnowledgeFileError(ValueError):
    """A knowledge file that cannot be read; the message is one line naming the file."""


def path(*parts: str):
    """The Traversable of a knowledge file or folder, relative to data/."""
    return _package(resources.files).joinpath(DATA, *parts)


@functools.lru_cache(maxsize=4)
def _package(resolve):
    """The package's Traversable, asked of `resolve` (importlib.resources.files, or what a test puts in its place)
    once: a one-file scan reads about 45 knowledge paths, and each call of it is a package and reader look-up (4 ms
    of a 0.35 s run, measured)."""
    return resolve("rlcompat.knowledge")


def load(*parts: str) -> dict:
    where = "/".join((LOCATION, *parts))
    try:
        text = path(*parts).read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise KnowledgeFileError(f"{where}: cannot be read ({exc}); reinstall rlcompat") from exc
    try:
        return load_knowledge_text(text)
    except KNOWLEDGE_ERRORS as exc:
        raise KnowledgeFileError(f"{where}: not valid TOML ({exc}); fix the file or reinstall rlcompat") from exc


def names(*folder: str) -> tuple[str, ...]:
    """The knowledge files directly in a folder of data/, without their ".toml", in no particular order."""
    return tuple(entry.name[: -len(".toml")] for entry in path(*folder).iterdir() if entry.name.endswith(".toml"))


def folders(*folder: str) -> tuple[str, ...]:
    """The sub-folders of a folder of data/ (the per-framework folders of frameworks/)."""
    return tuple(entry.name for entry in path(*folder).iterdir() if entry.is_dir() and not entry.name.startswith(("_", ".")))


def all_files() -> list[tuple[str, object]]:
    """(path relative to data/ with forward slashes, Traversable) of every knowledge file, at any depth, sorted."""
    return walk(path(), ".toml", skip=(".", "_"))


def walk(folder, suffix: str, skip: tuple[str, ...], prefix: str = "") -> list[tuple[str, object]]:
    """(relative path with forward slashes, Traversable) of every file ending in `suffix` below a package folder,
    at any depth, sorted; names starting with one of `skip` are passed over."""
    found = []
    for entry in folder.iterdir():
        if entry.name.startswith(skip):
            continue
        if entry.is_dir():
            found.extend(walk(entry, suffix, skip, f"{prefix}{entry.name}/"))
        elif entry.name.endswith(suffix):
            found.append((f"{prefix}{entry.name}", entry))
    return sorted(found, key=lambda item: item[0])