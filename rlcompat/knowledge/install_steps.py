"""What a tree's install scripts and Dockerfiles install, step by step, in the order they run: the project itself
(`pip install -e .`, `pip install .`, `cd src/x && pip install -e ".[dev]"`), a requirements file (`pip install -r
requirements.txt`) or a package (`pip install vllm==0.7.2`). pip replaces what an earlier step installed, so a later
step decides the version the environment runs with: `pip install -e .` followed by `pip install vllm==0.7.2` leaves
vLLM 0.7.2, whatever the project's setup.py pins (rlcompat/knowledge/declared_pins.py `pin_of`).

Install scripts are shell files named for it (`setup.sh`, `install.sh`, `install_env.sh`, `scripts/setup_vllm.sh`) at
the tree's root or in its declaration folders, and those of the repository that encloses the tree (a project kept
in `src/<name>` of a checkout whose root `setup.sh` installs it). A script is read as run from its repository's root;
`cd DIR` moves that directory. Each RUN of a Dockerfile starts a new shell in the WORKDIR (taken as the tree's root),
so a `cd` holds only to the end of its RUN; what a `git clone` wrote stays. `python setup.py install` installs the
project of its directory, as `pip install .` does; in a clone of a repository whose source build the knowledge knows
(environment.toml `[[source_build]]`: flash-attention's root builds FlashAttention-2, its `hopper/` FlashAttention-3)
the step names that package (`source_build`). Nothing is run and no README is read (its code blocks are advice, not
a script).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache

from rlcompat.knowledge.paths import nearest
from rlcompat.knowledge.versions import release
from rlcompat.lang.declared import ALL_EXTRAS, PIP_GENERAL_SWITCHES, Requirement, normalise, requirement_at, uv_sync_extras

INSTALL_SCRIPT = re.compile(r"(?:^|[-_.])(?:setup|install)(?:[-_.]|$)", re.IGNORECASE)
_SEPARATORS = re.compile(r"&&|\|\||;|\|")
_WORD = re.compile(r"""(?:"[^"]*"|'[^']*'|[^\s"'])+""")
# pip options whose value is the next word (the requirement-file and editable options are read, not skipped)
_VALUED = {"-i", "--index-url", "--extra-index-url", "-f", "--find-links", "-c", "--constraint", "--target", "-t",
           "--prefix", "--root", "--python", "--cache-dir", "--trusted-host", "--upgrade-strategy", "--platform",
           "--python-version", "--only-binary", "--no-binary", "--config-settings", "-C", "--torch-backend"}


@dataclass(frozen=True)
class Step:
    """One thing an install command installs."""

    kind: str  # "project" (a directory's own requirements) | "requirements" (a -r file) | "package"
    target: str  # the project directory or requirements file (absolute), or the distribution (normalised)
    spec: str  # a package's version spec as written ("==0.7.2", "" for none)
    file: str  # the script or Dockerfile (absolute)
    line: int
    no_deps: bool = False  # `--no-deps`: a project installed without its requirements
    upgrade: bool = False  # `-U`: an unpinned package goes to the newest release even when one is installed
    extras: tuple[str, ...] = ()  # a project's extras it asks for (`.[vllm]`), normalised
    clone: str = ""  # the repository a project directory is a fresh clone of (`git clone URL DIR` before), normalised
    # the repository and folder inside it of a project directory in a fresh clone (`github.com/x/y/hopper`; the
    # repository alone at its root), for the source builds the knowledge knows
    built: str = ""
    sync: str = ""  # a `uv sync` step: "exact" (uv's default) or "inexact" (`--inexact`)


def is_install_script(path: str) -> bool:
    name = os.path.basename(path)
    return name.endswith(".sh") and INSTALL_SCRIPT.search(name[:-3]) is not None


def enclosing_checkout(root: str) -> str | None:
    """The repository a tree without its own `.git` sits in (the nearest parent holding `.git`), else None."""
    if os.path.exists(os.path.join(root, ".git")):
        return None
    return nearest(os.path.dirname(root), lambda directory: os.path.exists(os.path.join(directory, ".git")))


@lru_cache(maxsize=256)
def steps_of(path: str, start_dir: str, dockerfile: bool = False) -> tuple[Step, ...]:
    """The install steps of the script (or Dockerfile RUN bodies) at `path`, in order, read as run from `start_dir`."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return ()
    if dockerfile:
        return dockerfile_steps(text, path, start_dir)
    return steps_in(text, path, start_dir)


@lru_cache(maxsize=64)
def dockerfile_steps(text: str, path: str, start_dir: str) -> tuple[Step, ...]:
    """The install steps of a Dockerfile's RUN bodies (its text `text`), each RUN read as run from `start_dir`."""
    from rlcompat.lang import dockerfile as dockerfile_lang

    try:
        parsed = dockerfile_lang.parse(text)
    except Exception:  # noqa: BLE001 - a Dockerfile that does not parse installs nothing here; `scan` reports it
        return ()
    return steps_in(parsed.shell_view, path, start_dir, parsed.run_starts)


@lru_cache(maxsize=64)
def steps_in(text: str, path: str, start_dir: str, new_shells: tuple[int, ...] = ()) -> tuple[Step, ...]:
    """The install steps of shell `text` (a script, or a shell block a file holds), read as run from `start_dir`;
    at each offset of `new_shells` (a Dockerfile's RUN bodies) a new shell starts there again."""
    from rlcompat.lang.requirements import logical_lines

    out: list[Step] = []
    cwd: str | None = start_dir
    clones: dict[str, str] = {}  # directory -> the repository a `git clone` of the script made there
    for start, line in logical_lines(text):
        if any(start <= at < start + len(line) + 1 for at in new_shells):
            cwd = start_dir  # a new RUN: a new shell in the WORKDIR
        body = re.sub(r"(^|\s)#.*$", "", line)
        pos = 0
        for part in _SEPARATORS.split(body):
            offset = start + body.index(part, pos) if part else start
            pos = offset - start + len(part)
            words = [(m.group(0).strip("'\""), offset + m.start()) for m in _WORD.finditer(part)]
            if not words:
                continue
            if words[0][0] == "cd":
                cwd = _moved(cwd, words[1][0] if len(words) > 1 else "~")
                continue
            if [w for w, _ in words[:2]] == ["git", "clone"]:
                _cloned([w for w, _ in words[2:]], cwd, clones)
                continue
            out.extend(_pip_install(words, cwd, path, text, clones))
            out.extend(_uv_sync(words, cwd, start_dir, path, text))
            out.extend(_setup_py_install(words, cwd, path, text, clones))
    return tuple(_after_exact_syncs(out))


def _after_exact_syncs(steps: list[Step]) -> list[Step]:
    """uv syncs exactly by default: a `uv sync` removes from the environment what it does not ask for, unless given
    `--inexact` (uv's CLI reference, `uv sync --inexact`). What an earlier sync of the same project installed is gone
    after a later exact one that does not ask for it too: NeMo-RL 0.4.0's Dockerfile:96-100 syncs each backend's extra
    to warm uv's cache, then the project without extras, which is what the image keeps; prime-rl's Dockerfile.cuda
    syncs the same extras in its builder stage and again in the runtime stage, and both install them."""
    last_exact = {s.target: i for i, s in enumerate(steps) if s.sync == "exact"}

    def removed(i: int, step: Step) -> bool:
        later = last_exact.get(step.target, -1)
        if not step.sync or i >= later:
            return False
        kept = steps[later].extras
        return ALL_EXTRAS not in kept and not set(step.extras) <= set(kept)
    return [s for i, s in enumerate(steps) if not removed(i, s)]


_PYTHON = re.compile(r"(?:.*/)?python(?:\d+(?:\.\d+)?)?")


def _setup_py_install(words: list[tuple[str, int]], cwd: str | None, path: str, text: str,
                      clones: dict[str, str]) -> list[Step]:
    """`[VAR=value ...] python setup.py install` (or `develop`): the project of the working directory, as `pip
    install .` installs it."""
    names = [w for w, _ in words]
    at = next((i for i in range(len(names) - 2) if _PYTHON.fullmatch(names[i]) and names[i + 1] == "setup.py"), None)
    if at is None or cwd is None or not {"install", "develop"} & set(names[at + 2:]):
        return []
    offset = words[at + 1][1]
    return [Step("project", cwd, "", path, text.count("\n", 0, offset) + 1, clone=clones.get(cwd, ""),
                 built=_built(cwd, clones))]


def _built(directory: str, clones: dict[str, str]) -> str:
    """`github.com/x/y/sub` for a directory `sub` inside a fresh clone of github.com/x/y (the repository alone at the
    clone's root); "" outside every clone."""
    for root, repo in clones.items():
        if directory == root or directory.startswith(root.rstrip(os.sep) + os.sep):
            inside = os.path.relpath(directory, root).replace(os.sep, "/")
            return repo if inside == "." else f"{repo}/{inside}"
    return ""


def source_build(step: Step) -> tuple[str, str] | None:
    """(package, proof) a project step installs where its directory is one whose source build the knowledge knows
    (environment.toml `[[source_build]]`): flash-attention's `hopper/` builds FlashAttention-3."""
    if step.kind != "project" or not step.built:
        return None
    from rlcompat.knowledge.environment import environment_facts

    for row in environment_facts().get("source_build", ()):
        wanted = row["repository"] if row["directory"] == "." else f"{row['repository']}/{row['directory']}"
        if step.built == wanted:
            return row["package"], row["proof"]
    return None


def _uv_sync(words: list[tuple[str, int]], cwd: str | None, start_dir: str, path: str, text: str) -> list[Step]:
    """`uv sync [--extra X]... [--all-extras]` run in a project's directory: that project's requirements with those
    extras. uv finds the project from the working directory up; one outside the tree (a Dockerfile's earlier `RUN cd
    /tmp/x`, a new shell for each RUN, which starts at the WORKDIR the tree was copied to) is taken as the tree's root.
    `--no-install-project` leaves out the project's own package but still installs every requirement (uv's CLI
    reference, `uv sync --no-install-project`; astral-sh/uv#6538): the same step here, which installs requirements."""
    names = [w for w, _ in words]
    extras = uv_sync_extras(names)
    if extras is None:
        return []
    root = os.path.abspath(start_dir)
    inside = cwd is not None and os.path.commonpath([root, os.path.abspath(cwd)]) == root
    offset = words[names.index("uv")][1]
    return [Step("project", cwd if inside else root, "", path, text.count("\n", 0, offset) + 1, extras=extras,
                 sync="inexact" if "--inexact" in names else "exact")]


# `git clone` options whose value is the next word (git-clone(1))
_CLONE_VALUED = {"-b", "--branch", "-o", "--origin", "-c", "--config", "--depth", "--reference", "-j", "--jobs",
                 "--filter", "--separate-git-dir", "-u", "--upload-pack", "--template", "--shallow-since",
                 "--shallow-exclude", "--bundle-uri", "--server-option"}


def _cloned(args: list[str], cwd: str | None, clones: dict[str, str]) -> None:
    """Record the directory `git clone URL [DIR]` makes (DIR, else the URL's last part without `.git`)."""
    positional, i = [], 0
    while i < len(args):
        word = args[i]
        if word.startswith("-"):
            i += 2 if word in _CLONE_VALUED else 1
            continue
        positional.append(word)
        i += 1
    if not positional or cwd is None:
        return
    url = positional[0]
    dest = positional[1] if len(positional) > 1 else re.sub(r"\.git$", "", url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1])
    if dest and "$" not in dest and "$" not in url:
        clones[os.path.normpath(os.path.join(cwd, dest))] = repository(url)


def repository(url: str) -> str:
    """`https://github.com/volcengine/verl.git`, `git@github.com:volcengine/verl` -> `github.com/volcengine/verl`."""
    url = re.sub(r"^(?:git\+)?(?:https?|ssh|git)://(?:[^@/]+@)?", "", url.strip())
    url = re.sub(r"^[^@/]+@([^:/]+):", r"\1/", url)
    return re.sub(r"\.git$", "", url.rstrip("/")).lower()


def cloned_extras(repo: str, extras: tuple[str, ...]) -> list[tuple[Requirement, str]]:
    """(requirement, where it is known from) for each package the `extras` of a cloned repository install that the
    declared-environment rules judge (rlcompat/knowledge/data/environment.toml `[[package_extras]]`), without a
    version: a clone takes the default branch at run time (or the ref it names), and the rows hold what every release
    says."""
    return [(req, f"{row['distribution']} cloned from {repo} ({row['proof_short']})")
            for row in _extras_rows() if row["repository"] == repo for req in _extra_requirements(row, extras)]


def distribution_extras(name: str, extras: tuple[str, ...]) -> list[tuple[Requirement, str]]:
    """The same for a distribution installed by name with extras (`pip install "verl[vllm]"`, `openrlhf[vllm]` in a
    requirements file): what those extras install in every release the row read, its release not used."""
    return [(req, f"{row['distribution']} ({row['proof_short']})")
            for row in _extras_rows() if normalise(row["distribution"]) == name for req in _extra_requirements(row, extras)]


def _extras_rows() -> tuple:
    from rlcompat.knowledge.environment import environment_facts

    return tuple(environment_facts().get("package_extras", ()))


def _extra_requirements(row: dict, extras: tuple[str, ...]) -> list[Requirement]:
    by_extra = {normalise(k): v for k, v in row["extras"].items()}
    out = []
    for extra in extras:
        for name in by_extra.get(normalise(extra), ()):
            req = Requirement(normalise(name), "", requirement_at(name, 0).span, None, editable=False,
                              version_known=False)
            req.extra = extra
            out.append(req)
    return out


def _moved(cwd: str | None, dest: str) -> str | None:
    if cwd is None or "$" in dest or dest.startswith("~") or dest == "-":
        return None  # somewhere rlcompat cannot follow: later relative paths are nobody's
    return os.path.normpath(os.path.join(cwd, dest))


def _pip_install(words: list[tuple[str, int]], cwd: str | None, path: str, text: str,
                 clones: dict[str, str]) -> list[Step]:
    names = [w for w, _ in words]
    at = _install_index(names)
    if at is None:
        return []
    args = words[at + 1:]
    flags = {w for w, _ in args}
    no_deps, upgrade = "--no-deps" in flags, bool(flags & {"-U", "--upgrade"})
    out: list[Step] = []
    i = 0
    while i < len(args):
        word, offset = args[i]
        line = text.count("\n", 0, offset) + 1
        if word in ("-e", "--editable", "-r", "--requirement") and i + 1 < len(args):
            value, value_offset = args[i + 1]
            where = _path(cwd, value)
            if where is not None:
                kind = "requirements" if word in ("-r", "--requirement") else "project"
                out.append(Step(kind, where, "", path, text.count("\n", 0, value_offset) + 1, no_deps, upgrade,
                                extras_of(value) if kind == "project" else (),
                                clones.get(where, "") if kind == "project" else "",
                                _built(where, clones) if kind == "project" else ""))
            i += 2
            continue
        if word.startswith("-"):
            i += 2 if word in _VALUED else 1
            continue
        if _looks_like_path(word):
            where = _path(cwd, word)
            if where is not None:
                out.append(Step("project", where, "", path, line, no_deps, upgrade, extras_of(word),
                                clones.get(where, ""), _built(where, clones)))
        else:
            req = requirement_at(word, 0)
            if req is not None:
                out.append(Step("package", req.name, req.spec, path, line, no_deps, upgrade))
        i += 1
    return out


def _install_index(names: list[str]) -> int | None:
    """The index of `install` in `pip install`, `pip3 install`, `python -m pip install`, `uv pip install`."""
    for i, word in enumerate(names[:-1]):
        if re.fullmatch(r"(?:.*/)?pip3?(?:\.\d+)?", word):
            j = i + 1
            while j < len(names) - 1 and PIP_GENERAL_SWITCHES.fullmatch(names[j]):
                j += 1  # `pip -v install`: general options before the command
            if names[j] == "install":
                return j
    return None


def _looks_like_path(word: str) -> bool:
    return word in (".", "..") or word.startswith(("./", "../", "/")) or (
        "/" in word and "://" not in word and not word.endswith(".whl")) or word.startswith(".[")


def extras_of(word: str) -> tuple[str, ...]:
    """The extras a project word asks for: `.[vllm, sglang]` -> ("vllm", "sglang")."""
    m = re.search(r"\[([^\]]*)\]$", word)
    return tuple(normalise(e) for e in m.group(1).split(",") if e.strip()) if m else ()


def extra_requirements(directory: str, extras: tuple[str, ...]) -> list[tuple[Requirement, str, int]]:
    """(requirement, declaring file, its line) of each requirement the project at `directory` declares for one of
    `extras` (every extra for ALL_EXTRAS) (setup.py `extras_require`, pyproject.toml `[project.optional-dependencies]`, setup.cfg
    `[options.extras_require]`); nothing for a file that does not parse."""
    from rlcompat.lang import pyproject_deps, setup_deps

    readers = (("setup.py", setup_deps.parse_setup_py), ("pyproject.toml", pyproject_deps.parse),
               ("setup.cfg", setup_deps.parse))
    out = []
    for name, parse in readers:
        path = os.path.join(directory, name)
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            group = parse(text)
        except Exception:  # noqa: BLE001 - a declaration that does not parse declares nothing here; `scan` reports it
            continue
        # (a `[tool.uv.sources]` git or index row is where uv takes the declared package from, and a torch route
        # sends torch, torchvision and torchaudio of its extras to an index: the declaration's own entry, judged with
        # its route, stands for the install, and pip never reads the row)
        routed = _torch_routed_extras(group)
        out += [(r, path, text.count("\n", 0, r.span.start) + 1) for r in group.requirements
                if r.extra and not r.uv_source and (normalise(r.extra) in extras or ALL_EXTRAS in extras)
                and not (r.name in _TORCH_FAMILY and (routed is None or normalise(r.extra) in routed))]
    return out


_TORCH_FAMILY = frozenset({"torch", "torchvision", "torchaudio"})  # the packages a torch route sends (pyproject_deps)


def _torch_routed_extras(group) -> frozenset[str] | None:
    """The extras whose torch `[tool.uv.sources]` routes to an index (None: every install's), from a parsed
    pyproject group's routed uv indexes; empty where nothing is routed."""
    found: set[str] = set()
    for index in group.indexes:
        if index.routed_at is None:
            continue
        if index.routed_extras is None:
            return None
        found.update(normalise(e) for e in index.routed_extras)
    return frozenset(found)


def file_requirements(path: str) -> list[tuple[Requirement, int]]:
    """(requirement, its line) of each requirement the pip requirements file at `path` lists (its own lines: a `-r`
    it names in turn is judged where that file is written); nothing for a file that cannot be read."""
    from rlcompat.lang import requirements

    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return []
    return [(r, text.count("\n", 0, r.span.start) + 1) for r in requirements.parse(text).requirements]


def _path(cwd: str | None, word: str) -> str | None:
    word = re.sub(r"\[[^\]]*\]$", "", word)  # `.[dev]`: the project, its extras aside
    if "$" in word or "://" in word or word.startswith("git+"):
        return None
    if os.path.isabs(word):
        return os.path.normpath(word)
    return None if cwd is None else os.path.normpath(os.path.join(cwd, word))
