"""rlcompat: find and fix what stops LLM RL post-training on older NVIDIA GPUs.

The library API is small and imports nothing heavy (no torch, no verl):

    from rlcompat import scan_paths, fix_paths, resolve_target, Options
"""

from __future__ import annotations

from rlcompat.release import __version__

__all__ = [
    "__version__",
    "Finding",
    "Fix",
    "Edit",
    "FixSafety",
    "Options",
    "Target",
    "TargetError",
    "resolve_target",
    "scan_paths",
    "scan_source",
    "fix_paths",
]


def __getattr__(name: str):
    # Lazy so that `import rlcompat` stays cheap for the CLI and the pre-commit hook.
    if name in ("Finding", "Fix", "Edit", "FixSafety"):
        from rlcompat import findings

        return getattr(findings, name)
    if name in ("Target", "TargetError", "resolve_target"):
        from rlcompat.knowledge import targets

        return getattr(targets, name)
    if name == "Options":
        from rlcompat.config import Options

        return Options
    if name in ("scan_paths", "scan_source", "fix_paths"):
        from rlcompat import api

        return getattr(api, name)
    raise AttributeError(f"module 'rlcompat' has no attribute {name!r}")
