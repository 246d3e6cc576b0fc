"""rlcompat/knowledge/data/verl_layout.toml: verl's config layout beyond one release's keys (where each role's
settings sit, which key or config name picks its training engine, which entry points read no PPO config)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from rlcompat.knowledge import files


@dataclass(frozen=True)
class Layout:
    prefixes: dict[str, str]  # role -> where its settings sit
    strategies: dict[str, str]  # role -> the key naming its training engine ("" where it follows the actor's)
    fsdp_names: frozenset[str]  # values of `model_engine` / `strategy` that mean the FSDP engine
    engines_by_config_name: tuple[str, ...]  # `ppo_<engine>_trainer` config names
    other_engines: frozenset[str]  # engines other than FSDP, whose keys the knowledge does not cover
    not_ppo: re.Pattern  # a command's words running an entry point without the PPO config
    sft_engine: re.Pattern  # ... running the engine-based SFT trainer

    def engine_named(self, value: str) -> str:
        """`fsdp` for a spelling of the FSDP engine (`dp`, `fsdp2`), else the value (`fsdp_turbo` is an engine of its
        own)."""
        return "fsdp" if value in self.fsdp_names else value

    def engine_of_config_name(self, words: str) -> str | None:
        return next((engine for engine in self.engines_by_config_name if f"ppo_{engine}_trainer" in words), None)


@lru_cache(maxsize=1)
def layout() -> Layout:
    data = files.load("verl_layout.toml")
    roles = data["roles"]
    return Layout(
        prefixes={role: row["prefix"] for role, row in roles.items()},
        strategies={role: row["strategy"] for role, row in roles.items()},
        fsdp_names=frozenset(data["engine_names"]["fsdp"]),
        engines_by_config_name=tuple(data["engine_names"]["by_config_name"]),
        other_engines=frozenset(data["engine_names"]["others"]),
        not_ppo=re.compile(data["entry_points"]["not_ppo"]),
        sft_engine=re.compile(data["entry_points"]["sft_engine"]),
    )
