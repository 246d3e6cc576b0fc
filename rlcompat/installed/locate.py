"""Where an installed distribution's files are, from its metadata only (importlib.metadata; nothing is imported)."""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata as metadata
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path


class InstalledError(Exception):
    """Why an installed distribution cannot be fixed or restored: one line, saying what to do."""


def normalise(name: str) -> str:
    """PEP 503 name normalisation: Flash_Attn -> flash-attn."""
    return re.sub(r"[-_.]+", "-", name).lower()


def fix_command(dist: str, target: str, unsafe_fixes: bool = False) -> str:
    """The command that patches an installed distribution for a target (what doctor and launch-script scans name)."""
    return f"rlcompat fix --installed {dist} --target {target}" + (" --unsafe-fixes" if unsafe_fixes else "")


def record_hash(data: bytes) -> str:
    """A file's hash as RECORD writes it: `sha256=` and the urlsafe base64 digest without padding [S99]."""
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")


@dataclass(frozen=True)
class Installed:
    name: str  # normalised distribution name
    version: str
    site: Path  # the folder RECORD's paths are relative to (site-packages), resolved
    record: dict[str, str]  # RECORD: path relative to `site` (posix) -> "sha256=..." ("" when RECORD gives none)
    roots: tuple[Path, ...]  # the package folders (or modules) fix reads

    def relative(self, path: str | Path) -> str:
        return Path(os.path.realpath(path)).relative_to(self.site).as_posix()


def python_here() -> str:
    return sys.executable or "python"


def locate(name: str, distributions=metadata.distributions, path: list[str] | None = None) -> Installed:
    """The distribution `name` as the running Python would import it (the first on sys.path, or on `path`)."""
    wanted = normalise(name)
    found = next((d for d in distributions(path=path if path is not None else sys.path)
                  if normalise(d.metadata["Name"] or "") == wanted), None)
    if found is None:
        raise InstalledError(f"{name} is not installed in this Python ({python_here()}): install it there, or run "
                             f"rlcompat with the Python of the environment that has it (`python -m rlcompat ...`)")
    editable = _editable_source(found)
    if editable:
        raise InstalledError(f"{name} is an editable install of {editable}: fix that checkout instead "
                             f"(`rlcompat fix {editable} --target ...`; git restores it)")
    site = Path(os.path.realpath(found.locate_file("")))
    record = {}
    for entry in found.files or ():
        rel = entry.as_posix()
        if rel.startswith("../") or Path(rel).is_absolute():
            continue  # scripts in bin/, data outside site-packages: not the package's code
        record[rel] = f"{entry.hash.mode}={entry.hash.value}" if entry.hash else ""
    if not record:
        raise InstalledError(f"{name} {found.version} at {site} has no RECORD of its files: reinstall it with pip "
                             f"(`pip install --force-reinstall {name}=={found.version}`)")
    return Installed(wanted, found.version, site, record, _roots(wanted, site, record))


def _editable_source(dist) -> str | None:
    """The source folder of an editable install (direct_url.json, PEP 610), else None."""
    try:
        text = dist.read_text("direct_url.json")
        data = json.loads(text) if text else {}
    except (OSError, ValueError):
        return None
    if not (data.get("dir_info") or {}).get("editable"):
        return None
    url = data.get("url", "")
    return url[len("file://"):] if url.startswith("file://") else url or "its source folder"


def _roots(name: str, site: Path, record: dict[str, str]) -> tuple[Path, ...]:
    """The top-level packages RECORD lists. Where one is named after the distribution, only that one: verl's wheel
    also installs top-level `scripts/` and `tests/` packages (its top_level.txt), which no verl run imports."""
    tops = sorted({rel.split("/", 1)[0] for rel in record if "/" in rel or rel.endswith(".py")})
    tops = [t for t in tops if not t.endswith((".dist-info", ".data", ".egg-info")) and t != "__pycache__"]
    own = name.replace("-", "_")
    chosen = [t for t in tops if t in (own, own + ".py")] or tops
    roots = tuple(site / t for t in chosen if (site / t).exists())
    if not roots:
        raise InstalledError(f"{name}: none of the files RECORD lists is under {site}: reinstall it with pip")
    return roots


def writable(installed: Installed) -> None:
    """Raise when a package folder cannot take a new file (each fix is written as a new file renamed over the old)."""
    for root in installed.roots:
        folder = root if root.is_dir() else root.parent
        if not os.access(folder, os.W_OK):
            raise InstalledError(
                f"cannot write {folder} (the {installed.name} installed there belongs to another user or the system): "
                f"patch a {installed.name} you own instead: `python -m venv .venv && .venv/bin/pip install "
                f"{installed.name}=={installed.version}`, then run rlcompat from that environment; never with sudo")
