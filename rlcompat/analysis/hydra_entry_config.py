"""The entry config a Hydra launch command runs with, where the scanned tree holds it.

A framework whose commands take Hydra overrides (knowledge `hydra_roots`) runs a key the command leaves out at the
value of its entry config (`hydra_config`: skyrl-train's `skyrl_train/config/ppo_base_config.yaml`). The release's
knowledge says what that file holds as released; a checkout of the framework (the user's fork, or the project cloned
and edited) may hold another value, and that file is what `uv run -m skyrl_train...` in the checkout composes. So
where the tree has the file (beside the command's script or in a folder above it, up to the tree's root), the
config is composed from it, as the run would, and its values replace the release's defaults; where it does not (the
framework installed from an index), the release's defaults stand.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from rlcompat.knowledge.paths import upwards
from rlcompat.lang.settings import ConfigContext, ConfigView


@dataclass(frozen=True)
class EntryConfig:
    values: dict[str, str | None]  # each leaf key of the composed config -> its value as text
    shown: str  # the entry config's path relative to the tree's root, as reports name it


def tree_entry_config(view: ConfigView, ctx: ConfigContext, fw) -> EntryConfig | None:
    """The composed entry config of `fw` from the tree's own file, with the command's group choices; None where the
    tree does not hold the file or it cannot be read (the release's defaults then stand)."""
    if not fw.hydra_config or not ctx.path or not os.path.isfile(ctx.path):
        return None
    memo = ctx.memo.setdefault("hydra_entry_config", {})
    key = (fw.name, fw.version, view.command_words)
    if key not in memo:
        memo[key] = composed(ctx, fw.hydra_config, view.command_words)
    return memo[key]


def composed(ctx: ConfigContext, relative: str, words=()) -> EntryConfig | None:
    """The config at `relative` (a path inside a framework's tree) as the tree holds it, beside the scanned file or in
    a folder above it up to the tree's root, composed with the command's Hydra `words` (group choices, overrides);
    None where the tree does not hold it or it cannot be read. The files read are recorded (a result that depends on
    them is not cached)."""
    from rlcompat.knowledge.identity import tree_root
    from rlcompat.schema import SchemaUnread
    from rlcompat.schema.hydra_static import compose_read, resolved

    root = os.path.abspath(tree_root(ctx.path))
    path = _find(os.path.dirname(os.path.abspath(ctx.path)), root, relative)
    if path is None:
        return None
    try:
        values, files, _ = compose_read(os.path.dirname(path), os.path.basename(path), words)
    except (SchemaUnread, OSError, RecursionError):
        return None
    ctx.record_reads(files)
    return EntryConfig(resolved(values), os.path.relpath(path, root).replace(os.sep, "/"))


def _find(start: str, root: str, relative: str) -> str | None:
    """`relative` below `start` or a folder above it, nearest first, up to `root` (the tree's root, which holds
    `start`)."""
    for folder in upwards(start):
        candidate = os.path.join(folder, *relative.split("/"))
        if os.path.isfile(candidate):
            return candidate
        if folder == root:
            return None
    return None
