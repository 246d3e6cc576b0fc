"""Wheels a Dockerfile builds into a folder in one stage and unpacks into site-packages in another.

XTuner's image (Dockerfile at v1.0.0rc0 :60-66/:159-160 and v1.0.1 :62-71/:200-201) builds flash-attention from a
clone, `RUN FLASH_ATTENTION_FORCE_BUILD=TRUE pip wheel -w ${FLASH_ATTN_DIR} -v --no-deps .` in `WORKDIR
${CODESPACE}/flash-attention` (and `cd hopper && pip wheel -w ${FLASH_ATTN3_DIR} ...` for FlashAttention-3), copies
the folder into the final stage (`COPY --from=flash_attn ...`) and installs it with `RUN unzip ${FLASH_ATTN_DIR}/*.whl
-d ${PYTHON_SITE_PACKAGE_PATH}`: a wheel is a zip archive of the package and its `.dist-info` laid out as
site-packages holds them, so unzipping it there installs it (without pip's bookkeeping).

The package a folder holds is the one the knowledge's `[[source_build]]` rows name for the directory the `pip wheel`
ran in: the folder a `git clone` of that repository makes by default is named for the repository (`flash-attention`,
and its `hopper/`), matched by that tail of the path as written (the clone's URL may come from a build argument).
The folder is matched as written in both commands (`${FLASH_ATTN_DIR}`), as the stages each declare the same ARG.
"""

from __future__ import annotations

import posixpath
import re
from functools import lru_cache

_WORKDIR = re.compile(r"^\s*WORKDIR\s+(\S+)", re.IGNORECASE)
_RUN = re.compile(r"^\s*RUN\s+(?:--\S+\s+)*", re.IGNORECASE)
_FROM = re.compile(r"^\s*FROM\s+(?:--\S+\s+)*", re.IGNORECASE)
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*")
_SEPARATORS = re.compile(r"&&|\|\||;")
_PIP = re.compile(r"(?:.*/)?pip3?(?:\.\d+)?")
# `pip wheel` options whose value is the next word (pip's wheel command and general options)
_VALUED = {"-w", "--wheel-dir", "-i", "--index-url", "--extra-index-url", "-f", "--find-links", "-c", "--constraint",
           "-r", "--requirement", "--config-settings", "-C", "--global-option", "--build-option", "--cache-dir",
           "--src", "--progress-bar", "--python"}


def _logical_lines(text: str) -> list[str]:
    out, pending = [], ""
    for raw in text.splitlines():
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip()[:-1] + " "
            continue
        out.append(pending + raw)
        pending = ""
    if pending:
        out.append(pending)
    return out


@lru_cache(maxsize=32)
def built_folders(dockerfile_text: str) -> dict[str, tuple[str, str]]:
    """folder as written (`${FLASH_ATTN3_DIR}`) -> (package, proof) for each `pip wheel -w FOLDER [SOURCE]` of the
    Dockerfile whose source directory (the stage's WORKDIR, the RUN's `cd`, then SOURCE) ends in a folder a
    `[[source_build]]` row names by its repository's name (`flash-attention/hopper`)."""
    from rlcompat.knowledge.environment import environment_facts

    rows = environment_facts().get("source_build", ())
    out: dict[str, tuple[str, str]] = {}
    workdir, stages, stage = "/", {}, None  # a stage built FROM an earlier one starts in that one's WORKDIR
    for line in _logical_lines(dockerfile_text):
        if (m := _FROM.match(line)) is not None:
            words = line[m.end():].split()
            workdir = stages.get(words[0], "/") if words else "/"
            if len(words) >= 3 and words[1].lower() == "as":
                stages[words[2]] = workdir
            stage = words[2] if len(words) >= 3 and words[1].lower() == "as" else None
        elif (m := _WORKDIR.match(line)) is not None:
            workdir = posixpath.join(workdir, m.group(1).strip("'\""))
            if stage is not None:
                stages[stage] = workdir
        elif (m := _RUN.match(line)) is not None:
            cwd = workdir
            for part in _SEPARATORS.split(line[m.end():]):
                words = [w.strip("'\"") for w in part.split()]
                while words and _ASSIGNMENT.fullmatch(words[0]):  # `FLASH_ATTENTION_FORCE_BUILD=TRUE pip wheel ...`
                    words.pop(0)
                if words[:1] == ["cd"] and len(words) > 1:
                    cwd = posixpath.join(cwd, words[1])
                elif len(words) > 1 and _PIP.fullmatch(words[0]) and words[1] == "wheel":
                    found = _wheel_build(words[2:], cwd, rows)
                    if found is not None:
                        out[found[0]] = found[1]
    return out


def _wheel_build(args: list[str], cwd: str, rows) -> tuple[str, tuple[str, str]] | None:
    folder, sources, skip = None, [], False
    for i, word in enumerate(args):
        if skip:
            skip = False
            continue
        name, eq, value = word.partition("=")
        if name in ("-w", "--wheel-dir"):
            folder = value if eq else (args[i + 1] if i + 1 < len(args) else None)
            skip = not eq
        elif name in _VALUED:
            skip = not eq
        elif not word.startswith("-"):
            sources.append(word)
    if folder is None or len(sources) != 1:
        return None
    directory = posixpath.normpath(posixpath.join(cwd, sources[0]))
    for row in rows:
        named = row["repository"].rstrip("/").rsplit("/", 1)[-1]
        tail = named if row["directory"] == "." else f"{named}/{row['directory']}"
        if directory == tail or directory.endswith("/" + tail):
            return folder.rstrip("/"), (row["package"], row["proof"])
    return None
