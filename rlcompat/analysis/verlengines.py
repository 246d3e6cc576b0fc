"""verl settings read only by a training engine other than the default FSDP one (`engine` in rlcompat/knowledge/data/verl/*.toml:
Megatron, fsdp_turbo). In verl's own config files they are the values whoever selects that engine gets, so they are
judged there, with a message that says when they apply; in a user's config or launch command they are left alone
when the run selects another engine for that role."""

from __future__ import annotations

import re
from typing import Callable

from rlcompat.analysis.interpolation import select_default
from rlcompat.knowledge import verl_layout
from rlcompat.lang.settings import ConfigContext, ConfigView
from rlcompat.findings import FixSafety

def in_verl_package(ctx: ConfigContext) -> bool:
    return "verl/trainer/config/" in ctx.path.replace("\\", "/")


def engines_chosen(view: ConfigView, role: str) -> set[str]:
    """The training engines the view says its role runs on: `strategy` of the role or of its FSDP block,
    `model_engine=`, or a `ppo_<engine>_trainer` config name; empty when it says nothing."""
    layout = verl_layout.layout()
    prefix = layout.prefixes.get(role, "")
    chosen = set()
    for key in (f"{prefix}.strategy", f"{prefix}.fsdp_config.strategy", f"{prefix}.fsdp.strategy", "model_engine"):
        setting = view.get(key)
        if setting is not None and setting.value and "${" not in setting.value and setting.value != "???":
            value = setting.value.strip()
            chosen.add(layout.engine_named(value))
    by_name = layout.engine_of_config_name(" ".join(view.command_words))
    if by_name:
        chosen.add(by_name)
    return chosen


def report_engine_settings(view: ConfigView, ctx: ConfigContext, setting_id: str, is_bad: Callable[[str], bool],
                           new_value: Callable[[str], tuple[str, FixSafety]], describe: Callable[[str, str], str]) -> None:
    """Report each engine-only verl setting of `setting_id` that the view sets to a bad value. `describe(key,
    value)` words the hazard; the message adds when it applies and the proof."""
    own_file = in_verl_package(ctx)
    reported: set[int] = set()  # a config-group file mounted for several roles: one finding per line
    for known in ctx.verl.by_id(setting_id):
        if not known.engine:
            continue
        setting = view.get(known.key)
        if setting is None:
            _add_engine_default(view, ctx, known, is_bad, new_value, describe)
            continue
        setting = select_default(view, setting)
        if setting is None or setting.value is None or not is_bad(setting.value) or setting.key_span.start in reported:
            continue
        chosen = engines_chosen(view, known.role)
        if not own_file and chosen and known.engine not in chosen:
            continue  # the run uses another engine for this role: nothing reads the key
        value, safety = accepted_fix(known, ctx, *new_value(setting.value))
        name = view.full_key(setting) if view.kind == "yaml" else known.key
        origin = f" (from {setting.via})" if setting.via else ""
        when = "" if known.engine in chosen else f"; it applies when a run selects {known.selected_by}"
        advice = f"use {value}" if value is not None else no_accepted_value(known, ctx)
        message = (f"{name} is {setting.value}{origin}: {describe(known.key, setting.value)}; {advice}{when} "
                   f"({ctx.verl.cite(known.proof)})")
        ctx.report(setting.key_span, message, [setting.rewrite(value)] if value is not None else [], safety,
                   f"set it to {value}" if value is not None else "")
        reported.add(setting.key_span.start)


def accepted_fix(known, ctx: ConfigContext, value: str, safety: FixSafety) -> tuple[str | None, FixSafety]:
    """The fix where verl's config class for the key accepts it (`accepts`: verl's McoreEngineConfig asserts
    bfloat16 or float16, 0.6.1 to 0.9.1). Else the accepted fp16 spelling where the precision policy computes in fp16 on the target
    (unsafe: a bf16-pretrained model may overflow in fp16), else None: no value the engine takes runs there."""
    if not known.accepts or value in known.accepts:
        return value, safety
    from rlcompat.knowledge.precision import dtype_for

    fp16 = next((a for a in known.accepts if a in ("float16", "fp16")), None)
    if fp16 is not None and dtype_for(ctx.target, "autocast") == "float16":
        return fp16, FixSafety.UNSAFE
    return None, safety


def no_accepted_value(known, ctx: ConfigContext) -> str:
    return (f"the {known.engine} engine of {ctx.verl.label} accepts only {', '.join(known.accepts)} "
            f"({known.accepts_proof}), and the precision policy (docs/precision.md) picks neither on {ctx.target.name}: "
            f"train with the FSDP engine")


def critic_trained(view: ConfigView) -> bool:
    """verl trains a critic for GAE, the default advantage estimator."""
    estimator = view.get("algorithm.adv_estimator")
    return estimator is None or estimator.value in (None, "gae")


def role_built(view: ConfigView, key: str) -> bool:
    """Whether a run with these settings builds the model whose setting `key` is: a critic only for GAE
    (critic_trained), a reward model unless `reward_model.enable` is set false (verl 0.2.0.post2 main_ppo.py:92 and
    0.3.0.post1 :134 map RewardModelWorker only with it [S480]); the actor's and the reference policy's keys, and a
    value not written here, claim nothing."""
    if key.startswith("critic."):
        return critic_trained(view)
    if key.startswith("reward_model."):
        enable = view.get("reward_model.enable")
        return enable is None or enable.value is None or enable.as_bool() is not False
    return True


def _role_engines(view: ConfigView, role: str) -> set[str]:
    """The engines a command selects for a role; the reference model follows the actor's strategy unless told
    otherwise (verl 0.9.1 verl/trainer/config/ref/ref.yaml:5, `strategy: ${actor_rollout_ref.actor.strategy}`)."""
    chosen = engines_chosen(view, role)
    if not chosen and role == "ref":
        chosen = engines_chosen(view, "actor")
    return chosen


def _add_engine_default(view: ConfigView, ctx: ConfigContext, known, is_bad, new_value, describe) -> None:
    """A launch command that selects the engine and leaves its setting out runs on verl's default: the override is
    added, as for the default FSDP engine's settings (confighelpers.set_or_add). A setting that follows another
    (`follows`: the ref's Megatron attention backend is the actor's) gets its value from that one's fix."""
    if not ctx.verl.version_known:
        return  # a default (and its file:line) is a claim about one release: not this tree's (fork, unknown)
    if (view.kind != "command" or not view.is_verl or not view.can_add or known.role == "reward" or known.follows
            or not known.default or not is_bad(known.default) or not takes_ppo_keys(view)):
        return
    if known.engine not in _role_engines(view, known.role) or (known.role == "critic" and not critic_trained(view)):
        return
    value, safety = accepted_fix(known, ctx, *new_value(known.default))
    advice = f"add {value}" if value is not None else no_accepted_value(known, ctx)
    message = (f"{known.key} is not set here, so the {known.engine} engine this command selects uses "
               f"{ctx.verl.label}'s default, {known.default}: {describe(known.key, known.default)}; {advice} "
               f"({ctx.verl.label} knowledge: {known.proof.split(' (')[0]})")
    ctx.report(view.anchor, message, [view.add(known.add_prefix + known.key, value)] if value is not None else [],
               safety, f"add {known.add_prefix}{known.key}={value}" if value is not None else "")


def in_its_config(view: ConfigView, ctx: ConfigContext, known) -> bool:
    """Whether a verl setting of another top config (`config = "generation.yaml"`) applies to this view: the file is
    that config, or the command runs its entry point (`verl.trainer.main_generation`) or names it."""
    if not known.config:
        return True
    stem = known.config.rsplit(".", 1)[0]
    if ctx.path.replace("\\", "/").endswith("trainer/config/" + known.config):
        return True
    words = " ".join(view.command_words)
    return view.kind == "command" and (f"main_{stem}" in words or f"config-name={stem}" in words
                                       or f"config-name {stem}" in words)


def runs_sft_trainer(view: ConfigView) -> bool:
    """Whether a command runs verl's engine-based SFT trainer (verl.trainer.sft_trainer, config sft_trainer_engine),
    whose config has the `engine` and `model` blocks (not fsdp_sft_trainer's)."""
    return bool(verl_layout.layout().sft_engine.search(" ".join(view.command_words)))


def takes_ppo_keys(view: ConfigView) -> bool:
    """Whether a command runs an entry point of the PPO trainer config (a YAML view: True)."""
    # verl_layout.toml [entry_points]: the entry points whose top config is not ppo_trainer.yaml
    return view.kind != "command" or not verl_layout.layout().not_ppo.search(" ".join(view.command_words))
