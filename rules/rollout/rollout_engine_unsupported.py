from __future__ import annotations

from rlcompat.lang.settings import ConfigRule
from rlcompat.rule import Bad, Good

# TensorRT-LLM lists Ampere (sm80) and newer as its supported hardware [S53]; not in targets.toml, which has
# no TensorRT-LLM column.
TRTLLM_MIN_CC = 80
CMD = "python3 -m verl.trainer.main_ppo \\\n    actor_rollout_ref.rollout.name={name} \\\n    trainer.n_gpus_per_node=1\n"


def engine_runs(engine: str, target) -> tuple[bool, str]:
    if engine == "hf":  # HF transformers' generate(): runs wherever torch runs (verl <= 0.5 registers it)
        return True, ""
    if engine == "vllm":
        return target.vllm, "vLLM needs compute capability 7.5+ (its docs said 7.0+ up to v0.14)"
    if engine == "sglang":
        return target.sglang, "SGLang refuses compute capability < 7.5 (`SGLang only supports sm75 and above.`)"
    if engine == "trtllm":
        return target.cc >= TRTLLM_MIN_CC, "TensorRT-LLM supports Ampere (8.0) and newer"
    return False, ""


class RolloutEngineUnsupported(ConfigRule):
    code = "RLC401"
    name = "rollout-engine-unsupported"
    title = "verl's rollout engine cannot run on the target GPU"
    what = (
        "Reports `actor_rollout_ref.rollout.name` (YAML or Hydra override) when the engine it names does not run on the "
        "target, and says which engines the scanned verl version registers that do. verl 0.9.1 registers only vllm, "
        "sglang and trtllm [S51]."
    )
    why = (
        "vLLM needs compute capability 7.5 (7.0 in docs up to v0.14) [S7]; SGLang raises `SGLang only supports sm75 and "
        "above.` [S35]; TensorRT-LLM supports Ampere and newer [S53]. Where none runs, no configuration change helps: "
        "the rollout needs other hardware or another verl."
    )
    fix_safety = "No autofix: switching engines changes the whole rollout, and on sm6x/sm70 there is nothing to switch to."
    triggers = ("rollout",)
    sources = ("S7", "S35", "S51", "S53")

    bad = (
        Bad(CMD.format(name="vllm"), path="run.sh"),
        Bad(CMD.format(name="sglang"), path="run.sh", target="sm70"),
        Bad(CMD.format(name="trtllm"), path="run.sh", target="sm75"),
        Bad("actor_rollout_ref:\n  rollout:\n    name: vllm\n", path="ppo.yaml"),
        Bad(CMD.format(name="sglang").replace("trainer.", "reward_model.rollout.name=vllm \\\n    trainer."), path="run.sh",
            target="sm70"),
    )
    good = (
        Good(CMD.format(name="vllm"), path="run.sh", target="sm75"),
        Good("name: ???\n", path="verl/trainer/config/rollout/rollout.yaml"),
        Good("name: vllm\n", path="docker-compose.yaml"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return target.cc < TRTLLM_MIN_CC

    def check_config(self, view, ctx) -> None:
        # The actor's rollout and, where the version has one, the reward model's (reward_model.rollout.name).
        keys = [k.key for k in ctx.verl.by_id("rollout-name")] or ["actor_rollout_ref.rollout.name"]
        for key in keys:
            setting = view.get(key)
            if setting is not None and setting.value and setting.value not in ("???", "null"):
                self._check(setting, ctx)

    def _check(self, setting, ctx) -> None:
        engine, target, verl = setting.value, ctx.target, ctx.verl
        registered = ", ".join(verl.rollout_engines)
        if engine not in verl.rollout_engines:
            ctx.report(setting.key_span, f"rollout engine {engine!r} is not registered in {verl.label} "
                                         f"(only {registered}: {verl.rollout_engines_proof})")
            return
        runs, reason = engine_runs(engine, target)
        if runs:
            return
        usable = [e for e in verl.rollout_engines if engine_runs(e, target)[0]]
        if usable:
            advice = f"use {' or '.join(usable)} (actor_rollout_ref.rollout.name={usable[0]})"
        else:
            advice = (f"no rollout engine {verl.label} registers ({registered}) runs on {target.name}, and no config "
                      "change fixes that: run the rollout on a GPU with compute capability 7.5+ (a standalone rollout "
                      "pool, rollout.nnodes > 0), train on such a GPU, or use a verl release with an HF-transformers "
                      "rollout")
        ctx.report(setting.key_span, f"rollout engine {engine} cannot run on {target.name} "
                                     f"({target.capability_text}): {reason}; {advice}")
