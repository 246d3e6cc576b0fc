"""The framework versions a scanned tree declares: the requirements of its requirement files, pyproject.toml,
setup.py (`install_requires` and `_deps`-style lists: every requirement string of the file), setup.cfg
(`[options] install_requires`, `[options.extras_require]`), conda environment files
Dockerfile `pip install` commands and install scripts (`setup.sh`, `install.sh`: rlcompat/knowledge/install_steps.py),
read with the declared-environment front ends (rlcompat/lang/declared.py), each with the file:line that says it.

What the environment runs with is what was installed last: an install script or Dockerfile that installs the project
(or its requirements file) and then the framework at another version overrides the project's own pin (`pin_of`).
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from functools import lru_cache

from rlcompat.lang.declared import Declared, Requirement, normalise, pip_arguments, requirement_at
from rlcompat.lang.languages import declared_language
from rlcompat.lang.settings import Span

# Where a tree keeps what it declares: its root, and these folders of it (one level down).
DECLARATION_FOLDERS = ("requirements", "docker", "docker_files", "dockerfiles", "envs", "environments", "scripts",
                       "setup", "ci", ".devcontainer")
# Which kind of declaration wins when two disagree: what pip installs for the project first.
ORDER = ("requirements", "pyproject", "setup.py", "setupcfg", "conda", "dockerfile", "script")
# What `pip install -e .` / `pip install -r` reads: the project's own declarations (not another way to install it).
PROJECT_KINDS = ("requirements", "pyproject", "setup.py", "setupcfg")
EXACT = re.compile(r"^(?:===?|=)\s*(?P<version>\d[\w.!+-]*)$")  # `==0.18.0`, conda `=0.18.0`


@dataclass(frozen=True)
class Pin:
    """One requirement of a framework as a tree declares it."""

    name: str  # the distribution, normalised (PEP 503)
    spec: str  # as written: "==0.18.0", ">=0.14", "" (any version)
    file: str  # relative to the tree's root, "/"-separated
    line: int
    # where an install step replaced the project's own pin: "installed after `pip install` of the project at
    # setup.sh:10, overriding setup.py:66 (vllm==0.6.6.post1)"; "" for a pin as the project declares it
    after: str = ""

    @property
    def version(self) -> str | None:
        """The one version an exact pin allows (`==0.18.0` -> 0.18.0), else None."""
        m = EXACT.match(self.spec.split(",")[0].strip()) if "," not in self.spec else None
        return m.group("version").split("+")[0] if m and "*" not in m.group("version") else None

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def evidence(self) -> str:
        """file:line, and the install order that made it the version where it replaced the project's pin."""
        return f"{self.where}, {self.after}" if self.after else self.where


def clear_caches() -> None:
    """Forget the declarations read so far (identity.clear_caches: a tree rebuilt or edited at the same path)."""
    for cached in (_declaration_files, install_sequences, tree_pins, installed_last):
        cached.cache_clear()


def declaration_files(root: str) -> list[str]:
    """The files under `root` that declare its environment, in the order of `ORDER`, shallower first."""
    return list(_declaration_files(root))


# Each tree's identity asks for every framework's pin (`pin_of`): its folders are listed once a run, not once a
# framework (a tree without markers, such as torch's package, is a tree per folder: 340 of them).
@lru_cache(maxsize=1024)
def _declaration_files(root: str) -> tuple[str, ...]:
    found: list[tuple[int, int, str]] = []
    folders = [root] + [os.path.join(root, f) for f in DECLARATION_FOLDERS]
    for depth, folder in enumerate(folders):
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            path = os.path.join(folder, name)
            kind = _kind(path)
            if kind in ORDER and os.path.isfile(path):
                found.append((ORDER.index(kind), min(depth, 1), path))
    return tuple(p for _, _, p in sorted(found))


def declares_environment(path: str) -> bool:
    """Whether the file at `path` is one that `tree_pins` reads: a requirements file, pyproject.toml, setup.py,
    setup.cfg, a conda file, a Dockerfile or an install script."""
    return _kind(path) in ORDER


def _kind(path: str) -> str | None:
    from rlcompat.knowledge.install_steps import is_install_script

    name = os.path.basename(path)
    if name == "setup.py":
        return "setup.py"
    return "script" if is_install_script(name) else declared_language(path)


@lru_cache(maxsize=1024)
def install_sequences(root: str) -> tuple[tuple[str, str, bool], ...]:
    """(file, the directory it runs from, whether a Dockerfile) of every install script and Dockerfile that may
    install the tree at `root`: the tree's own, then those of the repository enclosing it."""
    from rlcompat.knowledge.install_steps import enclosing_checkout

    out = []
    for base in (root, enclosing_checkout(root)):
        if base is None:
            continue
        for path in declaration_files(base):
            kind = _kind(path)
            if kind in ("script", "dockerfile"):
                out.append((path, base, kind == "dockerfile"))
    return tuple(out)


@lru_cache(maxsize=64)
def tree_pins(root: str) -> tuple[Pin, ...]:
    """Every requirement `root` declares, in the order of `declaration_files`."""
    out: list[Pin] = []
    for path in declaration_files(root):
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            continue
        rel = os.path.relpath(path, root).replace(os.sep, "/")
        if _kind(path) == "script":
            from rlcompat.knowledge.install_steps import steps_of

            out.extend(Pin(s.target, s.spec, rel, s.line) for s in steps_of(path, root) if s.kind == "package")
            continue
        for req, line in _requirements(path, text):
            out.append(Pin(req.name, req.spec, rel, line))
    return tuple(out)


def pin_of(root: str, distribution: str) -> Pin | None:
    """What `root` declares of `distribution`: its first requirement in `ORDER` (what pip installs for the project
    first) where that one bounds the version (`==0.6.3`, `<=0.6.3`); where it names no version at all, the first
    exact pin elsewhere (a Dockerfile's) is the better evidence; None where nothing names it. A range in the
    requirements is not overruled by an exact pin in a Dockerfile, another way to install the project; but an
    install script or Dockerfile that installs the project and then `distribution` again decides (`installed_last`)."""
    name = normalise(distribution)
    mine = [p for p in tree_pins(root) if p.name == name]
    declared = None
    if mine:
        declared = mine[0] if mine[0].version or mine[0].spec.strip() else next((p for p in mine if p.version), mine[0])
    return installed_last(root, name) or declared


@lru_cache(maxsize=256)
def installed_last(root: str, name: str) -> Pin | None:
    """The requirement of `name` an install script or Dockerfile leaves in force where it installs the project at
    `root` (or its requirements file) and after that `name` itself: pip replaces the project's pin with the later
    install (`pip install -e .` then `pip install vllm==0.7.2`: 0.7.2), unless the project is installed again after
    it with a pin the later version does not meet. None where no sequence installs both in that order."""
    from rlcompat.knowledge.install_steps import steps_of
    from rlcompat.knowledge.versions import satisfies

    own = [p for p in tree_pins(root) if p.name == name and _kind(os.path.join(root, p.file)) in PROJECT_KINDS]
    project_pin = next((p for p in own if p.version or p.spec.strip()), own[0] if own else None)
    for path, base, is_docker in install_sequences(root):
        state: Pin | None = None
        project_step = None
        for step in steps_of(path, base, is_docker):
            if step.kind in ("project", "requirements") and not step.no_deps:
                pin = project_pin if step.kind == "project" and step.target == root else _file_pin(step.target, root, name)
                if pin is None and not (step.kind == "project" and step.target == root):
                    continue
                project_step = step
                if pin is not None and (state is None or state.version is None or not satisfies(state.version, pin.spec)):
                    state = pin
            elif step.kind == "package" and step.target == name and project_step is not None:
                if not step.spec and state is not None and not step.upgrade:
                    continue  # already installed: pip keeps it
                shown = os.path.relpath(step.file, root).replace(os.sep, "/")
                after = (f"installed after the project ({_shown(project_step, root)})"
                         + (f", overriding {project_pin.where} ({name}{project_pin.spec})"
                            if project_pin is not None and project_pin.spec != step.spec else ""))
                state = Pin(name, step.spec, shown, step.line, after)
        if state is not None and state.after:
            return state
    return None


def _shown(step, root: str) -> str:
    return f"{os.path.relpath(step.file, root).replace(os.sep, '/')}:{step.line}"


def _file_pin(path: str, root: str, name: str) -> Pin | None:
    """`name`'s requirement in a requirements file an install step names, where the file is the tree's."""
    if not path.startswith(root.rstrip(os.sep) + os.sep):
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return None
    rel = os.path.relpath(path, root).replace(os.sep, "/")
    from rlcompat.lang import requirements

    for req in requirements.parse(text).requirements:
        if req.name == name:
            return Pin(name, req.spec, rel, text.count("\n", 0, req.span.start) + 1)
    return None


def _requirements(path: str, text: str) -> list[tuple[Requirement, int]]:
    name = os.path.basename(path)
    try:
        if name == "setup.py":
            return _setup_py(text)
        kind = _kind(path)
        if kind == "requirements":
            from rlcompat.lang import requirements

            group = requirements.parse(text)
        elif kind == "pyproject":
            from rlcompat.lang import pyproject_deps

            group = pyproject_deps.parse(text)
        elif kind == "setupcfg":
            from rlcompat.lang import setup_deps

            group = setup_deps.parse(text)
        elif kind == "conda":
            from rlcompat.lang import condaenv

            group = condaenv.parse(text)
        elif kind == "dockerfile":
            group = _dockerfile(text)
        else:
            return []
    except Exception:  # noqa: BLE001 - a declaration that does not parse declares nothing here; `scan` reports it
        return []
    return [(r, text.count("\n", 0, r.span.start) + 1) for r in group.requirements]


def _setup_py(text: str) -> list[tuple[Requirement, int]]:
    """Every string of setup.py that reads as a requirement with a version (`"trl==0.18.0"` in `install_requires`,
    in a `_deps` list or an `extras` dict): setup.py builds its lists in code, so no one list is the truth."""
    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and re.search(r"[=<>~]", node.value):
            req = requirement_at(node.value.strip(), 0)
            if req is not None and req.spec:
                out.append((req, node.lineno))
    return out


_PIP_INSTALL = re.compile(r"(?:^|[\s;&|(])(?:python3?\s+-m\s+)?(?:uv\s+)?pip3?\s+install\s+(?P<args>[^;&|]*)")


def _dockerfile(text: str) -> Declared:
    """The requirements of the Dockerfile's `pip install` commands (its RUN bodies, offsets kept)."""
    from rlcompat.lang import dockerfile
    from rlcompat.lang.requirements import logical_lines

    group = Declared("dockerfile")
    for start, line in logical_lines(dockerfile.parse(text).shell_view):
        for m in _PIP_INSTALL.finditer(line):
            at = start + m.start("args")
            words = [(w.group(0).strip("'\""), Span(at + w.start(), at + w.end()))
                     for w in re.finditer(r"\S+", m.group("args"))]
            pip_arguments(words, group)
    return group
