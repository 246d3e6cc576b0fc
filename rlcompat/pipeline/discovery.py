"""Which files to look at: walk directories (honouring .gitignore and excludes), keep explicit files."""

from __future__ import annotations

import errno
import os
import subprocess
from rlcompat.config import Options
from rlcompat.lang.languages import by_content, by_file_name, language, refined, skip_reason

# Which file is of which language, and which files of a language are left out, is each language's record in
# rlcompat/lang/languages.py. JSON and TOML: configs, not data. Files JSON tools and model checkpoints write (a
# checkpoint's config.json records the dtype it was saved in, not what a run selects), and the configuration files
# of build and lint tools, are left out by name, and any file over the size cap is data; named on the command line
# too (pre-commit names every staged file). Reports list what was left out.
JSON_MAX_BYTES = language("json").max_bytes
TOML_MAX_BYTES = language("toml").max_bytes


def language_of(path: str, *, explicit: bool = False) -> str | None:
    """The language of the file at `path`: by its name, or for a name without an extension by its first bytes.
    `explicit`: named on the command line, so languages read only then (Markdown) count too."""
    lang = by_file_name(path, explicit=explicit) or by_content(path)
    return lang.name if lang else None


def language_from_content(language: str, text: str) -> str:
    """The language a file read as `language` is, by its text (a YAML conda environment named otherwise)."""
    return refined(language, text)


UNKNOWN_TYPE = "no front end reads this file type"


def discover(paths: list[str], settings: Options, not_read: list | None = None) -> tuple[list[tuple[str, str]], list[str]]:
    """Files to check as (path, language), sorted and unique; and named paths that are neither files nor
    directories (`why_not_checked` says what they are). `not_read`, if given, receives (path, why) for files
    seen but not read: a named file of a type no front end reads, JSON a walk leaves out (`json_skip_reason`),
    and (reason UNKNOWN_TYPE) every walked file of another type."""
    found: dict[str, str] = {}
    missing: list[str] = []
    for given in paths:
        if os.path.isfile(given):
            lang = language_of(given, explicit=True)
            # Named JSON is held to the same skip list: pre-commit names every staged file, checkpoints included.
            why = skip_reason(given, lang) if lang else ""
            if why:
                if not_read is not None:
                    not_read.append((os.path.normpath(given), why))
            elif lang and not (settings.force_exclude and settings.is_excluded(given)):
                found.setdefault(os.path.normpath(given), lang)
            elif not lang and not_read is not None:
                ext = os.path.splitext(given)[1].lower()
                not_read.append((os.path.normpath(given), f"named, but no front end reads {ext or 'files without an extension'} files"))
        elif os.path.isdir(given):
            for path in _walk(given, settings, not_read):
                lang = language_of(path)
                if lang:
                    found.setdefault(path, lang)
        else:
            missing.append(given)
    _drop_unread_by_verl(found, not_read)
    return sorted(_one_path_per_file(found).items()), missing


def _drop_unread_by_verl(found: dict[str, str], not_read: list | None) -> None:
    """Leave out files of a verl package that its version never reads (rlcompat/knowledge/verl_own_files.py), saying why."""
    from rlcompat.knowledge.verl_own_files import why_unread

    for path in list(found):
        why = why_unread(path)
        if why:
            del found[path]
            if not_read is not None:
                not_read.append((path, why))


def why_not_checked(path: str) -> str:
    """For a path named on the command line that is neither a file nor a directory: what it is and what to do."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "is a symbolic link loop; fix or remove the link"
        if os.path.islink(path):
            return "is a symbolic link to nothing; fix the link or its target"
        if exc.errno == errno.EACCES:
            return "cannot be read (permission denied); check its permissions"
        return "no such file or directory; check the path"
    return "is neither a regular file nor a directory (a FIFO, socket or device); name files or directories"


def _one_path_per_file(found: dict[str, str]) -> dict[str, str]:
    """Drop symbolic links to a file that is already on the list under another name.

    A link inside the tree to another file of the tree would otherwise be checked twice (every finding reported
    twice) and, when fixing in parallel, rewritten twice at once. The real path is kept over a link to it.
    """
    links = {p for p in found if os.path.islink(p)}
    real_dirs: dict[str, str] = {}  # a file that is no link is its folder's real path and its name: one
    # realpath per folder, not per file (the folder's, resolved component by component, is what realpath starts with)

    def real(path: str) -> str:
        if path in links:
            return os.path.realpath(path)
        folder, name = os.path.split(os.path.abspath(path))
        if folder not in real_dirs:
            real_dirs[folder] = os.path.realpath(folder)
        return os.path.join(real_dirs[folder], name)

    by_real: dict[str, str] = {}
    for path in sorted(found, key=lambda p: (p in links, p)):
        by_real.setdefault(real(path), path)
    if len(by_real) == len(found):
        return found
    kept = set(by_real.values())
    return {p: lang for p, lang in found.items() if p in kept}


def _walk(root: str, settings: Options, not_read: list | None = None):
    ignored = _git_ignored(root) if settings.respect_gitignore else None
    root_real = os.path.realpath(root)
    for directory, dirnames, filenames in os.walk(root):  # os.walk does not follow directory links: no loops
        # Every parent directory was checked on the way down, so only each entry's own name is new here.
        keep = []
        for d in sorted(dirnames):
            full = os.path.join(directory, d)
            if settings.is_name_excluded(d) or settings.is_path_excluded(full):
                continue
            if ignored and os.path.normpath(os.path.abspath(full)) in ignored:
                continue
            keep.append(d)
        dirnames[:] = keep
        for f in sorted(filenames):
            full = os.path.normpath(os.path.join(directory, f))
            if settings.is_name_excluded(f):
                continue
            lang = language_of(full)
            if lang is None:
                if not_read is not None:
                    not_read.append((full, UNKNOWN_TYPE))
                continue
            why = skip_reason(full, lang)
            if why:
                if not_read is not None:
                    not_read.append((full, why))
                continue
            if settings.is_path_excluded(full):
                continue
            if ignored and os.path.normpath(os.path.abspath(full)) in ignored:
                continue
            if os.path.islink(full) and not _inside(os.path.realpath(full), root_real):
                continue  # a link out of the tree: not this tree's file to rewrite
            if not os.path.isfile(full):
                continue  # dangling link, socket, ...
            yield full


def json_skip_reason(path: str) -> str:
    """Why a JSON file is not read ("" when it is)."""
    return skip_reason(path, "json")


def toml_skip_reason(path: str) -> str:
    """Why a TOML file is not read as a config ("" when it is; pyproject.toml is a declared environment)."""
    return "" if by_file_name(path) is not language("toml") else skip_reason(path, "toml")


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _git_ignored(root: str) -> set[str] | None:
    """Absolute paths git ignores under `root` (files and whole directories), or None outside a git work tree."""
    try:
        out = subprocess.run(
            ["git", "-C", root, "ls-files", "--others", "--ignored", "--exclude-standard", "--directory", "-z"],
            capture_output=True,
            timeout=30,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    base = os.path.abspath(root)  # git prints paths relative to the directory given with -C
    return {os.path.normpath(os.path.join(base, p.decode("utf-8", "surrogateescape"))) for p in out.split(b"\0") if p}
