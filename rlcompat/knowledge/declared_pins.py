"""The framework versions a scanned tree declares: the requirements of its requirement files, pyproject.toml,
setup.py (`install_requires` and `_deps`-style lists: every requirement string of the file), setup.cfg
(`[options] install_requires`, `[options.extras_require]`), conda environment files
and Dockerfile `pip install` commands, read with the declared-environment front ends (rlcompat/lang/declared.py),
each with the file:line that says it.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from functools import lru_cache

from rlcompat.lang.declared import Declared, Requirement, normalise, pip_arguments, requirement_at
from rlcompat.lang.settings import Span

# Where a tree keeps what it declares: its root, and these folders of it (one level down).
DECLARATION_FOLDERS = ("requirements", "docker", "docker_files", "dockerfiles", "envs", "environments", "scripts",
                       "setup", "ci", ".devcontainer")
# Which kind of declaration wins when two disagree: what pip installs for the project first.
ORDER = ("requirements", "pyproject", "setup.py", "setupcfg", "conda", "dockerfile")
EXACT = re.compile(r"^(?:===?|=)\s*(?P<version>\d[\w.!+-]*)$")  # `==0.18.0`, conda `=0.18.0`


@dataclass(frozen=True)
class Pin:
    """One requirement of a framework as a tree declares it."""

    name: str  # the distribution, normalised (PEP 503)
    spec: str  # as written: "==0.18.0", ">=0.14", "" (any version)
    file: str  # relative to the tree's root, "/"-separated
    line: int

    @property
    def version(self) -> str | None:
        """The one version an exact pin allows (`==0.18.0` -> 0.18.0), else None."""
        m = EXACT.match(self.spec.split(",")[0].strip()) if "," not in self.spec else None
        return m.group("version").split("+")[0] if m and "*" not in m.group("version") else None

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


def declaration_files(root: str) -> list[str]:
    """The files under `root` that declare its environment, in the order of `ORDER`, shallower first."""
    from rlcompat.pipeline.discovery import declared_language

    found: list[tuple[int, int, str]] = []
    folders = [root] + [os.path.join(root, f) for f in DECLARATION_FOLDERS]
    for depth, folder in enumerate(folders):
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            path = os.path.join(folder, name)
            kind = "setup.py" if name == "setup.py" else declared_language(path)
            if kind in ORDER and os.path.isfile(path):
                found.append((ORDER.index(kind), min(depth, 1), path))
    return [p for _, _, p in sorted(found)]


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
        for req, line in _requirements(path, text):
            out.append(Pin(req.name, req.spec, rel, line))
    return tuple(out)


def pin_of(root: str, distribution: str) -> Pin | None:
    """What `root` declares of `distribution`: its first requirement in `ORDER` (what pip installs for the project
    first) where that one bounds the version (`==0.6.3`, `<=0.6.3`); where it names no version at all, the first
    exact pin elsewhere (a Dockerfile's) is the better evidence; None where nothing names it. A range in the
    requirements is not overruled by an exact pin in a Dockerfile, another way to install the project."""
    name = normalise(distribution)
    mine = [p for p in tree_pins(root) if p.name == name]
    if not mine:
        return None
    if mine[0].version or mine[0].spec.strip():
        return mine[0]
    return next((p for p in mine if p.version), mine[0])


def _requirements(path: str, text: str) -> list[tuple[Requirement, int]]:
    from rlcompat.pipeline.discovery import declared_language

    name = os.path.basename(path)
    try:
        if name == "setup.py":
            return _setup_py(text)
        kind = declared_language(path)
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
