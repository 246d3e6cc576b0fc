"""Python declarations of verl config keys that the scanned verl version never reads (`field` of `[[dead]]` in
rlcompat/knowledge/data/verl/<version>.toml): the same verdict for `use_torch_compile: bool = True` in `ActorConfig` as for
`actor_rollout_ref.actor.use_torch_compile` in YAML or a launch script."""

from __future__ import annotations

import os

import libcst as cst


def enclosing_class(ancestors: list[cst.CSTNode]) -> str:
    """The name of the class whose body holds the node directly (not through a method)."""
    for parent in reversed(ancestors):
        if isinstance(parent, cst.FunctionDef):
            return ""
        if isinstance(parent, cst.ClassDef):
            return parent.name.value
    return ""


def dead_field(knowledge, path: str, class_name: str, field_name: str):
    """(DeadKey, Knowledge) when `class_name.field_name` in `path` declares a key dead in the scanned file's verl
    release (`knowledge`: the file's verl knowledge, from its tree's identity).

    None when the release is not known exactly (a fork, an unknown version): then no rule may say the default does
    nothing.
    """
    if not class_name or not field_name or knowledge is None:
        return None
    if not knowledge.version_known:
        return None
    norm = path.replace(os.sep, "/")
    for dead in knowledge.dead.values():
        module, _, qualified = dead.field.partition(":")
        if module and qualified == f"{class_name}.{field_name}" and norm.endswith(module):
            return dead, knowledge
    return None
