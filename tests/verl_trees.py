"""Small verl package trees for tests: the version file verl's detection reads, and the given files."""

from __future__ import annotations

from pathlib import Path


def verl_package(root: Path, version: str | None, files: dict[str, str]) -> Path:
    """`root/verl` with `version/version` (left out when `version` is None) and `files` (paths relative to the
    package, e.g. `trainer/config/actor/actor.yaml`)."""
    package = root / "verl"
    (package / "trainer").mkdir(parents=True)
    if version:
        (package / "version").mkdir()
        (package / "version" / "version").write_text(version + "\n")
    for name, text in files.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text)
    return package


def verl_091_knowledge(path: str):
    """The knowledge a front end gets for a file of a tree that runs verl 0.9.1 (pinned: the scanning environment's
    installed verl plays no part)."""
    from rlcompat.pipeline.scanned_file import ScannedFile
    from rlcompat.knowledge.identity import pinned

    return ScannedFile(path, pinned({"verl": "0.9.1"}, "the test"))
