"""The release of a package a scanned file runs with that is no framework of rlcompat's knowledge (Triton, torch),
by the order of rlcompat/knowledge/identity.py: what the caller stated (a rule's example), the tree's exact pin
(rlcompat/knowledge/declared_pins.py), else, where the tree declares nothing of it, the scanning environment's installed
distribution for a file that uses the framework concerned. The Triton release follows the torch pin where the tree
pins torch and not triton (rlcompat/knowledge/data/trl_paths.toml `[[torch_triton]]`)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from rlcompat.knowledge import identity
from rlcompat.knowledge import trl_paths


@dataclass(frozen=True)
class Release:
    version: str
    evidence: str  # "pinned in requirements.txt:3", "torch 2.6.0 pinned in requirements.txt:2 installs it", ...


def _stated_or_pinned(knowledge, distribution: str) -> tuple[Release | None, bool]:
    """(the release, whether the tree declares the distribution at all)."""
    stated = knowledge.tree.get(distribution)
    if stated.release is not None:
        where = f"pinned in {stated.evidence}" if stated.how == "pinned" else stated.describe()
        return Release(stated.release, where), True
    root = knowledge.tree.root
    if not root:
        return None, False
    from rlcompat.knowledge.declared_pins import pin_of

    pin = pin_of(root, distribution)
    if pin is None:
        return None, False
    return (Release(pin.version, f"pinned in {pin.where}") if pin.version else None), True


def triton_release(knowledge, framework: str) -> Release | None:
    """The Triton release of the file's run: its pin, torch's pin, else the installed one where the tree declares
    neither and the file uses `framework`; None where none is known."""
    if knowledge is None:
        return None
    if knowledge.tree.root:
        # The answer depends on the tree's declarations (a pin added later changes it): such a result is not cached.
        from rlcompat.knowledge.declared_pins import declaration_files

        knowledge.record_reads(declaration_files(knowledge.tree.root) or [knowledge.tree.root])
    triton, declared = _stated_or_pinned(knowledge, "triton")
    if triton is not None or declared:
        return triton
    torch, torch_declared = _stated_or_pinned(knowledge, "torch")
    if torch is not None:
        version = trl_paths.triton_of_torch(torch.version)
        return Release(version, f"the one torch {torch.version} installs, torch {torch.evidence}") if version else None
    if torch_declared:
        return None
    own = knowledge.framework(framework)
    if own.how != "installed" and not knowledge.tree.root:
        return None  # a text stated by its caller: nothing of the scanning environment applies
    if not identity.uses(knowledge.text, framework):
        return None
    version = identity.installed_version("triton")
    return Release(version, "installed here (the tree declares neither triton nor torch)") if version else None


def package_dir(path: str, framework_identity) -> str | None:
    """The directory of the framework package a scanned file's identity found (./verl, ./src/verl), for the file at
    `path`; None where the identity names none."""
    package = getattr(framework_identity, "package", "")
    if not package:
        return None
    return os.path.normpath(package if os.path.isabs(package) else os.path.join(identity.tree_root(path), package))


def package_file(path: str, framework_identity, relative: str, record_reads=None) -> str | None:
    """The text of `relative` inside the framework package a scanned file's identity found (a fork's own code:
    `workers/actor/dp_actor.py` of ./verl), for the file at `path`; None where there is no such package or file. The
    read is recorded, so a result that depends on it is not cached."""
    base = package_dir(path, framework_identity)
    if base is None:
        return None
    full = os.path.normpath(os.path.join(base, relative))
    if record_reads is not None:
        record_reads([full])
    try:
        with open(full, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None
