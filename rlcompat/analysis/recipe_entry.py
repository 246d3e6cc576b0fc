"""A verl recipe's entry point: a module of the tree beside the verl package that a launch command runs
(`python3 -m recipe.dapo.main_dapo`), composing a Hydra config of its own over the package's trainer config.

verl's recipes (verl v0.4.0 recipe/dapo/main_dapo.py:27, recipe/prime/main_prime.py:38, and the forks that copy the
layout) each declare `@hydra.main(config_path="config", config_name="<name>_trainer")`; that config adds
`file://verl/trainer/config` to Hydra's search path and composes `defaults: [ppo_trainer, _self_]`
(recipe/dapo/config/dapo_trainer.yaml:1-7 [S460]), so every key it and the command leave unset runs at
ppo_trainer.yaml's value. Its module maps the roles to the package's own worker classes (`from
verl.workers.fsdp_workers import ActorRolloutRefWorker, CriticWorker`, main_dapo.py:67-70 [S461]): the run loads its
models in the same functions a main_ppo run does. A recipe config that is a trainer config of its own (it holds
`actor_rollout_ref`) stands for the same workers whether or not it composes ppo_trainer.

Everything is read as text (`ast`, the static Hydra composition), never imported; a recipe whose module or config
the tree does not hold, or whose composition cannot be followed, is no recipe run here (no claim is made).
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache

from rlcompat.pipeline.source import text_of

_HYDRA_MAIN = re.compile(r"@hydra\.main\(([^)]*)\)")
_HYDRA_ARG = re.compile(r"""\b(config_path|config_name)\s*=\s*["']([^"']+)["']""")
_SKIPPED = ("third_party", "__pycache__", "tests", "docs")


@dataclass(frozen=True)
class RecipeRun:
    module: str  # "recipe.dapo.main_dapo"
    file: str  # the module's file, absolute
    config: str  # the config its @hydra.main composes, absolute
    values: dict[str, str | None] = field(default_factory=dict)  # the composed config's values, as a run reads them
    files: tuple[str, ...] = ()  # the config files composed, in order
    origins: dict[str, str] = field(default_factory=dict)  # leaf key -> the file that sets it last
    imports: frozenset[tuple[str, str]] = frozenset()  # (module, name) of each `from M import N` of the module

    def maps(self, package: str, code: tuple[str, ...]) -> bool:
        """Whether the module takes a class of a `[[run_option]]`'s `code` ("workers/fsdp_workers.py:
        ActorRolloutRefWorker._build_model_optimizer") from the package itself (`from verl.workers.fsdp_workers import
        ActorRolloutRefWorker`): then its run loads models in that code. A class of the recipe's own is no row's."""
        name = os.path.basename(os.path.normpath(package))
        for row in code:
            relative, _, function = row.partition(":")
            module = ".".join([name, *relative.removesuffix(".py").split("/")])
            if "." in function and (module, function.split(".")[0]) in self.imports:
                return True
        return False


def hydra_config(text: str, folder: str) -> str | None:
    """The config file a module's `@hydra.main(config_path=..., config_name=...)` composes (absolute), or None."""
    for call in _HYDRA_MAIN.finditer(text):
        args = dict(_HYDRA_ARG.findall(call.group(1)))
        if "config_name" in args:
            name = args["config_name"]
            return os.path.abspath(os.path.join(folder, args.get("config_path", "."),
                                                name if name.endswith(".yaml") else name + ".yaml"))
    return None


def recipe_folders(package: str, prefixes: tuple[str, ...]) -> list[str]:
    """The folders beside `package` that hold entry modules of the knowledge's other prefixes (`recipe.`)."""
    root = os.path.dirname(os.path.abspath(package))
    own = os.path.basename(os.path.abspath(package))
    names = {p.split(".", 1)[0] for p in prefixes if p.split(".", 1)[0] and p.split(".", 1)[0] != own}
    return [os.path.join(root, n) for n in sorted(names) if os.path.isdir(os.path.join(root, n))]


@lru_cache(maxsize=32)
def recipe_configs(package: str, prefixes: tuple[str, ...]) -> dict[str, str]:
    """The config each recipe entry point beside `package` composes -> that module's file (both absolute)."""
    found: dict[str, str] = {}
    for top in recipe_folders(package, prefixes):
        for folder, dirs, names in os.walk(top):
            dirs[:] = [d for d in dirs if not d.startswith(".") and d not in _SKIPPED]
            for name in names:
                if name.endswith(".py"):
                    config = hydra_config(text_of(os.path.join(folder, name), "python") or "", folder)
                    if config is not None and os.path.isfile(config):
                        found.setdefault(config, os.path.join(folder, name))
    return found


def module_file(package: str, prefixes: tuple[str, ...], entry: str) -> tuple[str, str] | None:
    """(module, file) of a command's entry (`recipe.dapo.main_dapo`, or a path ending in recipe/dapo/main_dapo.py)
    where it is a module of a recipe folder beside `package` that the tree holds, else None."""
    root = os.path.dirname(os.path.abspath(package))
    for top in recipe_folders(package, prefixes):
        first = os.path.basename(top)
        if entry.endswith(".py"):
            parts = entry.replace(os.sep, "/").removesuffix(".py").split("/")
            if first not in parts:
                continue
            parts = parts[len(parts) - 1 - parts[::-1].index(first):]
        else:
            parts = entry.split(".")
        if parts[0] != first or not all(p.isidentifier() for p in parts):
            continue
        file = os.path.join(root, *parts) + ".py"
        if os.path.isfile(file):
            return ".".join(parts), file
    return None


def recipe_run(package: str, prefixes: tuple[str, ...], run_config: str, entry: str, given=None) -> RecipeRun | None:
    """The recipe run a command's `entry` starts, where its config composes the package's trainer config
    (`run_config`, absolute) or is a trainer config of its own; None otherwise (module docstring). `given`: the
    command's Hydra config flags (rlcompat/analysis/run_config.Flags): `--config-path` (relative to the module's
    folder) and `--config-name` replace the decorator's; a flag whose value is a shell expansion, or `--config-dir`,
    leaves the config unknown here (None)."""
    from rlcompat.schema import SchemaUnread
    from rlcompat.schema.hydra_static import compose_read, resolved

    found = module_file(package, prefixes, entry)
    if found is None:
        return None
    module, file = found
    text = text_of(file, "python")
    config = hydra_config(text or "", os.path.dirname(file))
    if given is not None and (given.unknown or given.path or given.name or given.dirs):
        if given.unknown or given.dirs or config is None and not (given.path and given.name):
            return None
        folder = given.path and os.path.join(os.path.dirname(file), given.path) or os.path.dirname(config)
        name = given.name or os.path.basename(config)
        config = os.path.abspath(os.path.join(folder, name if name.endswith(".yaml") else name + ".yaml"))
    if config is None or not os.path.isfile(config):
        return None
    root = os.path.dirname(os.path.abspath(package))
    try:
        values, files, origins = compose_read(os.path.dirname(config), os.path.basename(config), (), (root,))
    except (SchemaUnread, OSError, RecursionError):
        return None
    composes = any(os.path.realpath(f) == os.path.realpath(run_config) for f in files)
    if not composes and not any(k.startswith("actor_rollout_ref.") for k in values):
        return None
    return RecipeRun(module, file, config, resolved(values), tuple(files), dict(origins), _imports(text or ""))


def _imports(text: str) -> frozenset[tuple[str, str]]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return frozenset()
    return frozenset((node.module, alias.name) for node in ast.walk(tree)
                     if isinstance(node, ast.ImportFrom) and node.module and node.level == 0
                     for alias in node.names)

