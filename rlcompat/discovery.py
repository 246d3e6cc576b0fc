"""Which files to look at: walk directories (honouring .gitignore and excludes), keep explicit files."""

from __future__ import annotations

import errno
import os
import re
import subprocess
from rlcompat.config import Options

LANGUAGES = {".py": "python", ".pyi": "python", ".yaml": "yaml", ".yml": "yaml", ".sh": "shell", ".bash": "shell",
             ".json": "json", ".ipynb": "notebook", ".toml": "toml"}
# JSON: configs, not data. Files JSON tools and model checkpoints write are left out by name (a checkpoint's
# config.json records the dtype it was saved in, not what a run selects), and any JSON file over the size cap is
# data; named on the command line too (pre-commit names every staged file). Reports list what was left out.
JSON_SKIPPED_NAMES = {"package.json", "package-lock.json", "tsconfig.json", "jsconfig.json", "composer.json",
                      "config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json", "vocab.json",
                      "special_tokens_map.json", "added_tokens.json", "preprocessor_config.json", "adapter_config.json",
                      "trainer_state.json", "model.safetensors.index.json", "pytorch_model.bin.index.json",
                      "launch.json", "settings.json", "extensions.json", "devcontainer.json", ".eslintrc.json"}
JSON_MAX_BYTES = 256 * 1024
# TOML: trainer configs (torchtitan's train_configs). pyproject.toml is a declared environment (declared_language);
# the configuration files of build and lint tools are not a run's config and are left out by name, here too.
TOML_SKIPPED_NAMES = {"cargo.toml", "rust-toolchain.toml", "rustfmt.toml", ".rustfmt.toml", "clippy.toml",
                      "ruff.toml", ".ruff.toml", "taplo.toml", ".taplo.toml", "typos.toml", "_typos.toml",
                      ".typos.toml", "cliff.toml", "poetry.toml", "pdm.toml", "uv.toml", "pixi.toml", "hatch.toml",
                      "netlify.toml", "wrangler.toml", "fly.toml", "samconfig.toml", "book.toml", "bunfig.toml",
                      ".codespellrc.toml", "pyrefly.toml", "ty.toml", "mypy.toml"}
TOML_MAX_BYTES = 256 * 1024
# Checked only when named on the command line: the shell code blocks of a README are not part of every walk.
EXPLICIT_ONLY = {".md": "markdown", ".markdown": "markdown"}


def language_of(path: str) -> str | None:
    return declared_language(path) or LANGUAGES.get(os.path.splitext(path)[1].lower())


def declared_language(path: str) -> str | None:
    """Files that declare an environment, known by name: their extensions (.txt, .yml, none) say nothing."""
    name = os.path.basename(path).lower()
    if name == "pyproject.toml":
        return "pyproject"
    if name == "setup.cfg":
        return "setupcfg"
    if name.endswith(".txt") and (name.startswith(("requirements", "constraints"))
                                  or os.path.basename(os.path.dirname(path)).lower() == "requirements"):
        return "requirements"
    if (name == "dockerfile" or name.startswith(("dockerfile.", "dockerfile-", "dockerfile_")) or name.endswith(".dockerfile")) \
            and not name.endswith((".jinja", ".j2", ".tmpl", ".template", ".in")):  # templates are not Dockerfiles yet
        return "dockerfile"
    if name.endswith((".yml", ".yaml")) and name.startswith(("environment", "conda")):
        return "conda"
    return None


def language_from_content(language: str, text: str) -> str:
    """A YAML file named otherwise that is a conda environment (top-level `dependencies:` beside `channels:`, or
    with a `- pip:` list) is read as one."""
    if language != "yaml" or "dependencies:" not in text:
        return language
    top = set(re.findall(r"^(channels|dependencies):", text, re.MULTILINE))
    return "conda" if "dependencies" in top and ("channels" in top or re.search(r"^\s+- pip:", text, re.MULTILINE)) else language


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
            lang = language_of(given) or EXPLICIT_ONLY.get(os.path.splitext(given)[1].lower())
            # Named JSON is held to the same skip list: pre-commit names every staged file, checkpoints included.
            why = json_skip_reason(given) if lang == "json" else toml_skip_reason(given) if lang == "toml" else ""
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
    """Leave out files of a verl package that its version never reads (rlcompat/verl_unread.py), saying why."""
    from rlcompat.verl_unread import why_unread

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
    by_real: dict[str, str] = {}
    for path in sorted(found, key=lambda p: (os.path.islink(p), p)):
        by_real.setdefault(os.path.realpath(path), path)
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
            if language_of(full) is None:
                if not_read is not None:
                    not_read.append((full, UNKNOWN_TYPE))
                continue
            why = json_skip_reason(full) if f.endswith(".json") else toml_skip_reason(full) if f.endswith(".toml") else ""
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
    """Why a directory walk does not read this JSON file ("" when it does)."""
    name = os.path.basename(path).lower()
    if name in JSON_SKIPPED_NAMES or name.endswith((".index.json", ".lock.json")):
        return "a JSON file tools or checkpoints write, not a run's config"
    return _oversized(path, JSON_MAX_BYTES, "JSON")


def toml_skip_reason(path: str) -> str:
    """Why a directory walk (or a named file) is not read as a TOML config ("" when it is)."""
    name = os.path.basename(path).lower()
    if name == "pyproject.toml":
        return ""  # a declared environment, read whatever its size
    if name in TOML_SKIPPED_NAMES or name.endswith(".lock.toml"):
        return "a build or lint tool's TOML file, not a run's config"
    return _oversized(path, TOML_MAX_BYTES, "TOML")


def _oversized(path: str, limit: int, language: str) -> str:
    """Why a config file this large is data, not a config ("" when it is not, or its size cannot be read)."""
    try:
        if os.path.getsize(path) > limit:
            return f"{language} over {limit // 1024} KiB: data, not a config"
    except OSError:
        pass
    return ""


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
