"""Which framework releases a scanned tree's code runs with, and why: its identity, resolved once per tree by whoever
runs the scan (api, runner, matrix) and handed to the front ends and rules through ScannedFile.

Per framework rlcompat has knowledge of (verl, and each of rlcompat/knowledge/data/frameworks/), in this order:
1. the framework's package inside the tree: verl's `verl/version/version` (or, for a trimmed copy, the release whose
   `[detect]` files match), another framework's `<package>/__init__.py` `__version__`. A package whose version is
   not a release rlcompat has knowledge of, or whose files are not that release's, is a **fork**;
2. the tree's declared pins (rlcompat/knowledge/declared_pins.py): an exact `==` pin gives the version; a looser requirement
   says only that the framework is declared; an install script or Dockerfile that installs the project and then the
   framework again wins over the project's own pin (later install wins, in script order);
3. the installed distribution of the scanning environment, for a tree that declares nothing about the framework,
   and only for the files that use it (import it or run its commands): `ScannedFile.framework`;
4. unknown.
Rules make claims that hold for one release only (a key is dead or live, a default with its file:line) only where
`FrameworkIdentity.exact`: the version is a release whose knowledge file rlcompat has. docs/knowledge.md.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Mapping

from rlcompat.knowledge import distributions
from rlcompat.knowledge.paths import nearest

VERL = "verl"
# Files or folders that make a directory the root of a project tree (what a scan of a file inside it belongs to).
TREE_MARKERS = (".git", "pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "environment.yml")


@dataclass(frozen=True)
class FrameworkIdentity:
    framework: str  # "verl", "trl"
    label: str  # "verl", "TRL"
    how: str  # "release" | "fork" | "pinned" | "declared" | "installed" | "unknown"
    version: str | None = None
    evidence: str = ""  # "verl/version/version says 0.1", "requirements.txt:3", "the example"
    closest: str | None = None  # the closest release rlcompat has knowledge of (no newer one when there is one)
    package: str = ""  # "./verl": the framework's package inside the tree
    config: str = ""  # "./verl/trainer/config": where a fork's own config is read
    spec: str = ""  # a declaration's version specifier as written (">=0.8.5,<=0.12.0"); "" for any other how

    @property
    def exact(self) -> bool:
        """Whether rlcompat has knowledge of exactly this release: only then may a rule claim what the release's
        files say (a dead or live key, a default and its file:line)."""
        return self.how != "fork" and self.version is not None and self.version in releases(self.framework)

    @property
    def release(self) -> str | None:
        """The version this tree's code runs, where one was found (the package in the tree, an exact pin, the
        installed distribution), whether or not rlcompat has knowledge of it; None for a fork, a declaration
        without an exact version, or nothing found."""
        return None if self.how in ("unknown", "declared", "fork") else self.version

    def describe(self) -> str:
        """One clause for the report: "verl fork at ./verl (verl/version/version says 0.1; ...)"."""
        name = self.label
        if self.how == "unknown":
            return f"{name}: version unknown ({self.evidence})" if self.evidence else f"{name}: version unknown"
        if self.how == "fork":
            parts = [self.evidence, self._judged_with(), f"config read from {self.config}" if self.config else "own config"]
            return f"{name} fork at {self.package} ({'; '.join(p for p in parts if p)})"
        if self.how == "declared":
            return f"{name} declared without an exact version ({self.evidence}); version unknown"
        head = f"{name} {self.version}"
        where = {"release": f"at {self.package} ({self.evidence})", "pinned": f"pinned in {self.evidence}",
                 "installed": "installed here (the tree declares none; for the files that use it)"}.get(self.how, self.evidence)
        note = "" if self.exact else (f"; no knowledge for {self.version}: {self._judged_with()}; its defaults, dead "
                                      "and live keys and file:lines withheld")
        return f"{head} {where}{note}"

    def _judged_with(self) -> str:
        """What a release without knowledge is judged with, as the rules do it: verl's rule set of the closest release
        (knowledge/verl_config.py); another framework's settings each by the newest release whose knowledge has the
        key (analysis/knowledgecheck.py)."""
        if self.framework == VERL:
            return f"closest release {self.closest}" if self.closest else ""
        known = releases(self.framework)
        if not known:
            return ""
        if len(known) == 1:
            return f"values judged with the keys of {self.label} {known[0]}"
        newest_first = ", ".join(reversed(known))
        return f"values judged with the keys of {self.label} {newest_first} (each key by the newest that has it)"

    def to_json(self) -> dict:
        return {"framework": self.framework, "how": self.how, "version": self.version, "evidence": self.evidence,
                "exact": self.exact, "closest_release": self.closest, "package": self.package or None,
                "config": self.config or None, "text": self.describe()}


@dataclass(frozen=True)
class TreeIdentity:
    root: str  # absolute; "" for text that is no file of a tree
    frameworks: tuple[FrameworkIdentity, ...] = ()
    _by_name: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    def get(self, name: str) -> FrameworkIdentity:
        if not self._by_name:
            self._by_name.update((f.framework, f) for f in self.frameworks)
        found = self._by_name.get(name)
        return found if found is not None else unknown(name)

    @property
    def found(self) -> tuple[FrameworkIdentity, ...]:
        """What the tree itself says (a package, a fork, a pin or a requirement), framework by framework."""
        return tuple(f for f in self.frameworks if f.how in ("release", "fork", "pinned", "declared"))

    def describe(self, shown_root: str = "") -> str:
        found = self.found
        where = shown_root or self.root or "."
        if not found:
            return f"{where}: no framework package or pin in the tree (installed frameworks apply to the files that use them)"
        return f"{where}: " + "; ".join(f.describe() for f in found)

    def to_json(self) -> dict:
        return {"root": self.root, "frameworks": [f.to_json() for f in self.found]}


def pinned(frameworks: Mapping[str, str] | None, why: str = "the example") -> TreeIdentity:
    """An identity stated by its caller (a rule's example, a test): those versions, every other framework unknown.
    The scanning environment plays no part."""
    rows = tuple(FrameworkIdentity(name, label_of(name), "pinned", version, why, closest_release(name, version))
                 for name, version in (frameworks or {}).items())
    return TreeIdentity("", rows)


def environment_only() -> TreeIdentity:
    """The identity of code that belongs to no tree (a text passed to `scan_source`): only what is installed in the
    scanning environment, which applies to the files that use it (ScannedFile.framework)."""
    rows = []
    for name in framework_names():
        version = installed_version(_distribution(name))
        if version is not None:
            rows.append(FrameworkIdentity(name, label_of(name), "installed", version, "the scanning environment",
                                          closest_release(name, version)))
    return TreeIdentity("", tuple(rows))


def unknown(name: str, why: str = "") -> FrameworkIdentity:
    return FrameworkIdentity(name, label_of(name), "unknown", None, why, closest_release(name, None))


# --- what rlcompat has knowledge of ----------------------------------------------------------------------------


def framework_names() -> tuple[str, ...]:
    from rlcompat.knowledge import frameworks as fk

    return (VERL,) + tuple(dict.fromkeys(f.name for f in fk.frameworks()))


@lru_cache(maxsize=None)
def releases(name: str) -> tuple[str, ...]:
    """The releases whose knowledge file rlcompat has, oldest first."""
    if name == VERL:
        from rlcompat.knowledge.verl_config import available_versions

        return available_versions()
    from rlcompat.knowledge import frameworks as fk

    return tuple(sorted((f.version for f in fk.frameworks() if f.name == name), key=version_key))


@lru_cache(maxsize=None)
def label_of(name: str) -> str:
    if name == VERL:
        return "verl"
    from rlcompat.knowledge import frameworks as fk

    return next((f.label for f in fk.frameworks() if f.name == name), name)


def _distribution(name: str) -> str:
    if name == VERL:
        return "verl"
    from rlcompat.knowledge import frameworks as fk

    return next((f.distribution for f in fk.frameworks() if f.name == name), name)


def version_key(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text))


def closest_release(name: str, version: str | None) -> str | None:
    """The newest release with knowledge not newer than `version` (the oldest if all are newer; the newest if the
    version is unknown)."""
    known = releases(name)
    if not known:
        return None
    if version is None:
        return known[-1]
    older = [v for v in known if version_key(v) <= version_key(version)]
    return older[-1] if older else known[0]


# --- resolving a tree -------------------------------------------------------------------------------------------


def tree_root(path: str) -> str:
    """The project tree a scanned path belongs to: the nearest directory (the path itself, if a directory) holding a
    project marker (`.git`, pyproject.toml, setup.py, requirements.txt, ...) or a framework package (`verl/` with
    `trainer/`, or a verl package itself); the path's own directory where none does."""
    full = os.path.abspath(path)
    start = full if os.path.isdir(full) else os.path.dirname(full)
    return nearest(start, _is_root) or start


@lru_cache(maxsize=256)
def _is_root(directory: str) -> bool:
    if _has_marker(directory):
        return True
    if _verl_package_dir(directory) is None:
        return False
    # A verl package inside a checkout (./verl next to setup.py) belongs to the checkout: its requirements and
    # scripts say what the run installs. Only a package with no project around it (site-packages) is its own tree.
    return not (os.path.basename(directory) == "verl" and _has_marker(os.path.dirname(directory)))


def _has_marker(directory: str) -> bool:
    return any(os.path.exists(os.path.join(directory, m)) for m in TREE_MARKERS)


def _verl_package_dir(directory: str) -> str | None:
    if os.path.basename(directory) == "verl" and os.path.isdir(os.path.join(directory, "trainer")):
        return directory
    # The package at ./verl, or inside a verl checkout vendored at ./verl (a git submodule: ./verl/verl), the layout
    # of recipe repositories that train with their own copy of verl.
    for inner in (os.path.join(directory, "verl"), os.path.join(directory, "verl", "verl")):
        if os.path.isdir(os.path.join(inner, "trainer")):
            return inner
    return None


def _tree_verl_package(root: str) -> str | None:
    """The verl package a tree's commands import: ./verl or ./verl/verl, else the one a project of the tree installs
    from deeper down: `src/verl` (a setup.py with `package_dir={'': 'src'}`), or a project vendored one level down (a
    folder with its own setup.py or pyproject.toml) that holds a verl package or a verl checkout
    (`<project>/verl/verl`)."""
    for folder in _project_folders(root):
        package = _verl_package_dir(folder)
        if package is not None:
            return package
    return None


@lru_cache(maxsize=64)
def resolve(root: str) -> TreeIdentity:
    """The identity of the tree at `root` (absolute): every framework's, by the order of this module's docstring."""
    return TreeIdentity(root, tuple(_resolve_one(root, name) for name in framework_names()))


def _resolve_one(root: str, name: str) -> FrameworkIdentity:
    from rlcompat.knowledge.declared_pins import pin_of

    in_tree = verl_package(_tree_verl_package(root), root) if name == VERL else _python_package(root, name)
    if in_tree is not None:
        return in_tree
    pin = pin_of(root, _distribution(name)) or _enclosing_pin(root, _distribution(name)) or _vendored_pin(root, name)
    if pin is not None and pin.version:
        return FrameworkIdentity(name, label_of(name), "pinned", pin.version, pin.evidence,
                                 closest_release(name, pin.version))
    if pin is not None:
        spec = f"{pin.name}{pin.spec}" if pin.spec else pin.name
        evidence = f"{pin.where}: {spec}" + (f", {pin.after}" if pin.after else "")
        return FrameworkIdentity(name, label_of(name), "declared", None, evidence, closest_release(name, None),
                                 spec=pin.spec.strip())
    version = installed_version(_distribution(name))
    if version is not None:
        return FrameworkIdentity(name, label_of(name), "installed", version, "the scanning environment",
                                 closest_release(name, version))
    return unknown(name)


def _vendored_pin(root: str, name: str):
    """Where the tree runs its own copy of verl from a project vendored in it (`./verl/verl` beside `./verl/setup.py`:
    DeepScaleR's layout) and names nothing of another framework itself: that project's pin of it, which pip installs
    with the copy the tree runs (`pip install -e ./verl`), its file named from the tree's root. None elsewhere."""
    from rlcompat.knowledge.declared_pins import pin_of

    package = _tree_verl_package(root) if name != VERL else None
    project = os.path.dirname(package) if package is not None else root
    if project == root or not any(os.path.isfile(os.path.join(project, m)) for m in ("setup.py", "pyproject.toml")):
        return None
    pin = pin_of(project, _distribution(name))
    if pin is None:
        return None
    return replace(pin, file=f"{os.path.relpath(project, root).replace(os.sep, '/')}/{pin.file}")


# What makes a folder a project of its own, rather than a folder of the project around it that lists a few extra
# requirements (ColossalChat's examples/requirements.txt, beside the coati project's setup.py one level up).
PROJECT_MARKERS = (".git", "pyproject.toml", "setup.py", "setup.cfg")


def _enclosing_pin(root: str, distribution: str):
    """Where `root` is no project of its own (only a requirements file or environment.yml marks it) and names nothing
    of `distribution`: the pin of the project around it, which is installed for the folder's scripts to run (its
    requirements add to that project's, they do not replace them). None where no enclosing tree names it."""
    from rlcompat.knowledge.declared_pins import pin_of

    if not _has_marker(root) or any(os.path.exists(os.path.join(root, m)) for m in PROJECT_MARKERS):
        return None  # a project of its own, or a folder nothing marks (a package scanned where it is installed)
    current = root
    while not any(os.path.exists(os.path.join(current, m)) for m in PROJECT_MARKERS):
        parent = os.path.dirname(current)
        if parent == current:
            return None
        enclosing = nearest(parent, _is_root)
        if enclosing is None:
            return None
        pin = pin_of(enclosing, distribution)
        if pin is not None:  # its file named from `root`, as the evidence of this tree's identity shows it
            shown = os.path.relpath(os.path.join(enclosing, pin.file), root).replace(os.sep, "/")
            return replace(pin, file=shown)
        current = enclosing
    return None


@lru_cache(maxsize=64)
def verl_package(package: str | None, root: str = "") -> FrameworkIdentity | None:
    """The identity a verl package directory gives (None for no package): a release rlcompat knows, else a fork."""
    if package is None:
        return None
    from rlcompat.knowledge.verl_config import package_release

    shown = "./" + os.path.relpath(package, root).replace(os.sep, "/") if root else package
    shown = "." if shown == "./." else shown
    config_shown = (shown.rstrip("/") + "/trainer/config") if os.path.isdir(os.path.join(package, "trainer", "config")) else ""
    version, exact, evidence = package_release(package)
    if exact:
        return FrameworkIdentity(VERL, "verl", "release", version, evidence, version, shown)
    return FrameworkIdentity(VERL, "verl", "fork", version, evidence, closest_release(VERL, version), shown, config_shown)


def verl_of_file(path: str, tree: FrameworkIdentity) -> FrameworkIdentity:
    """The verl a file is judged with: its own verl package's identity when it is inside one (the tree's verl says
    nothing about a copy elsewhere), else its tree's."""
    from rlcompat.knowledge.verl_config import package_root

    own = verl_package(package_root(os.path.dirname(os.path.abspath(path))))
    return own if own is not None else tree


_VERSION_ASSIGNMENT = re.compile(r"""^__version__\s*(?::\s*str\s*)?=\s*["']([^"']+)["']""", re.MULTILINE)


def _project_folders(root: str) -> list[str]:
    """Where a framework's package may sit in a tree: the root, `src/`, and a project vendored one level down (a
    folder with its own setup.py or pyproject.toml, e.g. `OpenRLHF-RAG/openrlhf`), the layout of repositories that
    train with their own copy of a framework."""
    folders = [root, os.path.join(root, "src")]
    try:
        children = sorted(e.path for e in os.scandir(root) if e.is_dir() and not e.name.startswith("."))
    except OSError:
        children = []
    for child in children:
        if any(os.path.isfile(os.path.join(child, m)) for m in ("setup.py", "pyproject.toml")):
            folders += [child, os.path.join(child, "src")]
    return folders


def _version_file(project: str) -> str | None:
    """The version a project's `version.txt` gives, where its setup.py reads that file (OpenRLHF's `_fetch_version`)."""
    try:
        with open(os.path.join(project, "setup.py"), encoding="utf-8", errors="replace") as fh:
            if "version.txt" not in fh.read():
                return None
        with open(os.path.join(project, "version.txt"), encoding="utf-8", errors="replace") as fh:
            first = fh.readline().strip()
    except OSError:
        return None
    return first if re.fullmatch(r"\d+(?:\.\d+)*(?:[.+-]?\w+)*", first) else None


_SETUP_NAME = r"""\bname\s*=\s*["']{}["']"""
_SETUP_VERSION = re.compile(r"""\bversion\s*=\s*["'](\d+(?:\.\d+)*(?:[.+-]?\w+)*)["']""")


def _project_version(project: str, distribution: str) -> tuple[str, str] | None:
    """(version, file) the project's own metadata gives the package, where its `__init__.py` has no `__version__`:
    a literal `name`/`version` pair in setup.py (slime 0.3.0's setup.py:33-34), or pyproject.toml's `[project]` with
    that name and a static version, or a dynamic one setuptools reads from a module's `__version__`. The project is
    the package: the version the install records."""
    try:
        with open(os.path.join(project, "setup.py"), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        if re.search(_SETUP_NAME.format(re.escape(distribution)), text) and (m := _SETUP_VERSION.search(text)):
            return m.group(1), "setup.py"
    except OSError:
        pass
    try:
        from rlcompat._toml import load_toml_text

        with open(os.path.join(project, "pyproject.toml"), encoding="utf-8", errors="replace") as fh:
            pyproject = load_toml_text(fh.read())
    except (OSError, ValueError):
        return None
    table = pyproject.get("project", {})
    if not isinstance(table, dict) or str(table.get("name", "")).lower().replace("_", "-") != distribution:
        return None
    version = table.get("version")
    if isinstance(version, str):
        return version, "pyproject.toml"
    return _dynamic_version(project, pyproject)


def _dynamic_version(project: str, pyproject: dict) -> tuple[str, str] | None:
    """(version, file) of `dynamic = ["version"]` read from a module's `__version__`: by setuptools
    (`[tool.setuptools.dynamic] version = {attr = "unsloth.models._utils.__version__"}`: Unsloth's checkout) or by
    hatchling from a file (`[tool.hatch.version] path = "xtuner/version.py"`: XTuner's checkout)."""
    tool = pyproject.get("tool", {})
    attr = tool.get("setuptools", {}).get("dynamic", {}).get("version", {})
    name = attr.get("attr", "") if isinstance(attr, dict) else ""
    module, _, variable = name.rpartition(".")
    hatch = tool.get("hatch", {}).get("version", {})
    hatch_path = hatch.get("path", "") if isinstance(hatch, dict) else ""
    if isinstance(hatch_path, str) and hatch_path.endswith(".py") and ".." not in hatch_path.split("/"):
        candidates = [os.path.join(project, *hatch_path.split("/"))]
    elif variable == "__version__" and module:
        candidates = [c for base in (project, os.path.join(project, "src"))
                      for c in (os.path.join(base, *module.split(".")) + ".py",
                                os.path.join(base, *module.split("."), "__init__.py"))]
    else:
        return None
    for candidate in candidates:
        try:
            with open(candidate, encoding="utf-8", errors="replace") as fh:
                m = _VERSION_ASSIGNMENT.search(fh.read())
        except OSError:
            continue
        if m:
            return m.group(1).strip(), os.path.relpath(candidate, project)
    return None


def _python_package(root: str, name: str) -> FrameworkIdentity | None:
    """A framework's package inside the tree (`trl/__init__.py`, `src/openrlhf/__init__.py`, a vendored project's
    `OpenRLHF-RAG/openrlhf/`) and its `__version__`, else the `version.txt` its project's setup.py reads."""
    module = _distribution(name).replace("-", "_")
    for folder in _project_folders(root):
        init = os.path.join(folder, module, "__init__.py")
        if not os.path.isfile(init):
            continue
        shown = "./" + os.path.relpath(os.path.dirname(init), root).replace(os.sep, "/")
        try:
            with open(init, encoding="utf-8", errors="replace") as fh:
                m = _VERSION_ASSIGNMENT.search(fh.read())
        except OSError:
            m = None
        version = m.group(1).strip() if m else None
        evidence = f"{shown[2:]}/__init__.py says __version__ = {version}" if version else "no __version__ in its __init__.py"
        project = folder if os.path.basename(folder) != "src" else os.path.dirname(folder)
        if version is None and (from_file := _version_file(project)) is not None:
            version = from_file
            where = os.path.relpath(os.path.join(project, "version.txt"), root).replace(os.sep, "/")
            evidence = f"{where} says {version} (read by its setup.py)"
        if version is None and (declared := _project_version(project, _distribution(name))) is not None:
            version, where = declared
            where = os.path.relpath(os.path.join(project, where), root).replace(os.sep, "/")
            evidence = f"{where} says {_distribution(name)} {version} (no __version__ in its __init__.py)"
        if version in releases(name):
            return FrameworkIdentity(name, label_of(name), "release", version, evidence, version, shown)
        from rlcompat.knowledge.frameworks import release_by_files

        if (by_files := release_by_files(name, os.path.dirname(init), version)) is not None:
            # a version file that does not say the release (XTuner V1's says 0.2.0): the release whose own files
            # these are, where its knowledge says how to tell it (`[detect]`)
            evidence += f"; its files are {by_files.label} {by_files.version}'s ({by_files.detect['proof']})"
            return FrameworkIdentity(name, label_of(name), "release", by_files.version, evidence, by_files.version, shown)
        return FrameworkIdentity(name, label_of(name), "fork", version, evidence, closest_release(name, version), shown)
    return None


@lru_cache(maxsize=32)
def installed_version(distribution: str) -> str | None:
    """The installed distribution's version, from its metadata (never by importing it). The only place rlcompat asks
    the scanning environment for a framework's version (as `importlib.metadata` finds it, without its import:
    knowledge/distributions.py)."""
    return distributions.version(distribution)


# --- a file's view of its tree's identity -----------------------------------------------------------------------


def uses(text: str, name: str) -> bool:
    """Whether a file's text imports the framework or runs one of its commands: the installed distribution applies to
    such files only."""
    word = _distribution(name).replace("-", "_")
    # every spelling holds the module's name: a plain search rules most files out at once
    if word in text and _spells_module(text, word):
        return True
    if name == VERL:
        return False
    from rlcompat.knowledge import frameworks as fk

    commands = {c for f in fk.frameworks() if f.name == name for c in f.commands}
    return any(c in text for c in commands)


@lru_cache(maxsize=None)
def _module_patterns(word: str) -> tuple[re.Pattern, ...]:
    module = re.escape(word)
    return (re.compile(rf"(?:^|[\s;(]|-m\s+)(?:from|import)\s+{module}\b", re.MULTILINE),  # an import of it
            re.compile(rf"\b{module}\."),  # a name in it
            re.compile(rf"-m\s+{module}\b"),  # `python -m` it
            re.compile(rf"(?:from|import)\s+{module}\b"), re.compile(rf"{module}\."))  # where the first two may match


def _spells_module(text: str, word: str) -> bool:
    """Whether `text` imports the module `word`, names something in it or runs it with `python -m`. The first two
    expressions start with no literal, so a search tries them at every position of the text (0.1-0.2 s for a
    1.4 MB file that spells `overload`, where `verl` is): they are tried only where their literal part is (`^`,
    `\b` and the character before, at a position inside the text, see the text before it)."""
    statement, attribute, command, statement_at, attribute_at = _module_patterns(word)
    if command.search(text):
        return True
    for m in statement_at.finditer(text):  # matches of the literal part cannot overlap: none is hidden
        s = m.start()
        if statement.match(text, s) or (s and statement.match(text, s - 1)):
            return True
    return any(attribute.match(text, m.start()) for m in attribute_at.finditer(text))


class Identities:
    """The identity of every tree of one scan: each scanned path's tree, resolved once."""

    def __init__(self, trees: Mapping[str, TreeIdentity] | None = None) -> None:
        self.trees: dict[str, TreeIdentity] = dict(trees or {})

    @classmethod
    def of_paths(cls, paths) -> "Identities":
        out = cls()
        for p in paths:
            out.for_path(p)
        return out

    def for_path(self, path: str) -> TreeIdentity:
        root = tree_root(path)
        found = self.trees.get(root)
        if found is None:
            found = self.trees[root] = resolve(root)
        return found

    def fingerprint(self) -> str:
        """What the identities are, for the result cache's key: a pin changed means other results."""
        return ";".join(f"{r}={f.framework}:{f.how}:{f.version}" for r, t in sorted(self.trees.items())
                        for f in t.frameworks if f.how != "unknown")


def clear_caches() -> None:
    """Forget every tree resolved so far (a test that rebuilds a tree at the same path)."""
    from rlcompat.knowledge import declared_pins
    from rlcompat.knowledge.install_steps import steps_of
    from rlcompat.knowledge.verl_config import package_release
    from rlcompat.schema.tree import entry_facts

    declared_pins.clear_caches()
    for cached in (resolve, verl_package, _is_root, steps_of, package_release, entry_facts):
        cached.cache_clear()
