"""What `rlcompat --version` prints: the installed version, and with --verbose what the knowledge is.

The rule catalog has no version number of its own; it changes with every rule or knowledge file, so its version
is a digest of exactly those files (the same bytes whatever the install method). A knowledge file that declares
the version of what it describes (rlcompat/knowledge/data/verl/0.9.1.toml: `version = "0.9.1"`) shows that version; the others
show their own digest, so two installs can be compared line by line.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib import resources

from rlcompat.release import __version__

_RULES_PACKAGE = "rlcompat.rules"


def installed_version() -> str:
    """The version in the installed distribution's metadata; the source's own when run from a bare checkout."""
    from importlib import metadata

    try:
        return metadata.version("rlcompat")
    except metadata.PackageNotFoundError:
        return __version__


@dataclass(frozen=True)
class KnowledgeFile:
    path: str  # relative to rlcompat/knowledge/data/, with forward slashes: "verl/0.9.1.toml"
    version: str  # what the file declares (`version = ...`), else "sha256:<first 12 hex digits>"


def _rule_modules():
    """(relative path, Traversable) of every module of the rule catalog, at any depth, sorted by path."""
    from rlcompat.knowledge import files

    return files.walk(resources.files(_RULES_PACKAGE), ".py", skip=(".", "__pycache__"))


def catalog_version() -> str:
    """A digest of every rule module and knowledge file: equal catalogs give equal versions."""
    from rlcompat.knowledge import files

    digest = hashlib.sha256()
    entries = [(f"rules/{name}", entry) for name, entry in _rule_modules()]
    entries += [(f"knowledge/{name}", entry) for name, entry in files.all_files()]
    for name, entry in entries:
        digest.update(name.encode() + b"\0")
        digest.update(entry.read_bytes())
    return f"sha256:{digest.hexdigest()[:12]}"


def knowledge_files() -> list[KnowledgeFile]:
    from rlcompat.knowledge import files

    out = []
    for name, entry in files.all_files():
        raw = entry.read_bytes()
        declared = files.load(*name.split("/")).get("version")
        version = str(declared) if isinstance(declared, (str, int, float)) else f"sha256:{hashlib.sha256(raw).hexdigest()[:12]}"
        out.append(KnowledgeFile(name, version))
    return out


def version_text(verbose: bool) -> str:
    lines = [f"rlcompat {installed_version()}"]
    if verbose:
        from rlcompat.rules import environment_rules, file_rules

        files, machine = len(file_rules()), len(environment_rules())
        lines.append(f"rule catalog {catalog_version()}: {files + machine} rules ({files} for files, {machine} for the machine)")
        lines.append("knowledge files (rlcompat/knowledge/data/):")
        lines.extend(f"  {k.path}  {k.version}" for k in knowledge_files())
    return "\n".join(lines) + "\n"
