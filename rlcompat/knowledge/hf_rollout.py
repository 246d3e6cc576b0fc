"""rlcompat's `hf` rollout for verl (rlcompat/verl_plugin, registered through the `verl.plugins` entry point in
pyproject.toml): whether it is installed and what a run sets to use it. RLC401 (scan), doctor and matrix all ask
here, so they say the same thing. Installation is read from package metadata; neither verl nor the plugin is
imported (the plugin needs torch, Ray and verl)."""

from __future__ import annotations

import os
from typing import Iterable

from rlcompat.release import install_command

NAME = "hf"  # the rollout name the plugin registers (rlcompat/verl_plugin ROLLOUT_NAME)
SUPPORTED_VERL = ("0.9.1",)  # rlcompat/verl_plugin SUPPORTED_VERL_VERSIONS (tests/test_one_answer.py holds them equal)
PLUGIN_MODULE = "rlcompat.verl_plugin"
ENTRY_POINT_GROUP = "verl.plugins"
INSTALL = install_command("verl")
ASK = "RLCOMPAT_HF_ROLLOUT"  # =1: act as installed, =0: as not installed (tests, machines without verl)

_installed: bool | None = None


def plugin_among(entry_point_values: Iterable[str], verl_installed: bool) -> bool:
    """Whether verl is installed and one of its `verl.plugins` entry points is rlcompat's plugin."""
    return verl_installed and any(v.startswith(PLUGIN_MODULE) for v in entry_point_values)


def entry_point_values() -> tuple[str, ...]:
    """The values of this environment's `verl.plugins` entry points ("rlcompat.verl_plugin.entry")."""
    from importlib.metadata import entry_points

    try:
        return tuple(ep.value for ep in entry_points(group=ENTRY_POINT_GROUP))
    except Exception:  # broken metadata: say what to install rather than guess
        return ()


def installed() -> bool:
    """The hf rollout can be selected here: RLCOMPAT_HF_ROLLOUT=1 (asked for) or =0 (not), else whether verl and
    the plugin's entry point are installed."""
    global _installed
    asked = os.environ.get(ASK)
    if asked in ("0", "1"):
        return asked == "1"
    if _installed is None:
        import importlib.util

        _installed = plugin_among(entry_point_values(), importlib.util.find_spec("verl") is not None)
    return _installed


def how_installed() -> str:
    return "asked for" if os.environ.get(ASK) == "1" else "installed here"


def supports(knowledge) -> bool:
    """Whether the plugin supports the verl of `knowledge` (rlcompat.knowledge.verl_config.Knowledge): exactly a supported
    release, not a fork or an unknown version judged with that release's rule set."""
    return knowledge.version in SUPPORTED_VERL and knowledge.version_known


def engine_runs_on(engine: str, target) -> bool:
    """Whether a verl rollout engine runs on `target`: rlcompat/knowledge/data/capabilities.toml's rows (targets.toml's vllm/sglang
    facts agree with them); hf (plain transformers) wherever torch does; an unknown engine nowhere."""
    from rlcompat.knowledge.capabilities import runs

    if engine == NAME:
        return True
    if engine == "sglang":
        return target.sglang
    return engine in ("vllm", "trtllm") and runs(engine, target)


def usable_engines(knowledge, target) -> list[str]:
    """The rollout engines the verl version registers that run on `target`."""
    return [e for e in knowledge.rollout_engines if engine_runs_on(e, target)]


def needed(knowledge, target) -> bool:
    """No engine the verl version registers runs on `target`: only the hf rollout gives main_ppo one."""
    return not usable_engines(knowledge, target)


def override(key: str) -> str:
    """The override that selects the hf rollout for a rollout-name key (RLC401's fix writes the same value)."""
    return f"{key}={NAME}"


def advice(knowledge, available: bool) -> str:
    """What to do, in words: the override, and the install command where the plugin is missing."""
    key = knowledge.setting("rollout-name", "actor").key
    if available:
        return f"rlcompat's hf rollout is installed: {override(key)}"
    return f"rlcompat's hf rollout is installable: {INSTALL}, then {override(key)}"
