from __future__ import annotations

from rlcompat.analysis import confighelpers as h
from rlcompat.contract import Bad, ConfigRule, FixSafety, Good, VERL_091

CMD = "python3 -m verl.trainer.main_ppo \\\n    algorithm.adv_estimator=grpo \\\n    {extra}trainer.n_gpus_per_node=1\n"
ACTOR = "actor_rollout_ref.actor.fsdp_config.use_torch_compile"
REF = "actor_rollout_ref.ref.fsdp_config.use_torch_compile"


class FsdpTorchCompile(ConfigRule):
    code = "RLC351"
    name = "fsdp-torch-compile"
    title = "verl's FSDP engine compiles with torch.compile on a GPU Inductor refuses"
    what = (
        "Finds `fsdp_config.use_torch_compile: true` (verl's `engine/fsdp.yaml`, user configs, Hydra overrides for the "
        "actor, ref and critic; the SFT engine trainer's `engine.use_torch_compile`) and launch scripts that leave it "
        "at verl's default, true [S51]."
    )
    why = (
        "With it on, the FSDP engine wraps its entropy computation in `torch.compile`, whose Inductor backend generates "
        "Triton kernels and raises `GPUTooOldForTriton` below compute capability 7.0 [S17]. The key that looks like the "
        "switch, `actor.use_torch_compile`, is not read at all (RLC352)."
    )
    fix_safety = "Setting it to false runs the same computation eagerly: safe."
    names = ("use_torch_compile",)
    verl_commands = True  # a verl launch command that leaves its key at the bad default
    sources = ("S17", "S51")

    bad = (
        Bad("# Whether to use torch compile in fsdp.\nuse_torch_compile: true\n",
            fixed="# Whether to use torch compile in fsdp.\nuse_torch_compile: false\n",
            path="verl/trainer/config/engine/fsdp.yaml"),
        Bad(CMD.format(extra=""), path="run.sh",
            fixed=CMD.format(extra="").replace("=1\n", f"=1 \\\n    {ACTOR}=False \\\n    {REF}=False\n"),
            frameworks=VERL_091),
        Bad(CMD.format(extra=f"{ACTOR}=True \\\n    {REF}=false \\\n    "), path="run.sh",
            fixed=CMD.format(extra=f"{ACTOR}=False \\\n    {REF}=false \\\n    ")),
    )
    good = (
        Good("use_torch_compile: true\n", path="verl/trainer/config/engine/fsdp.yaml", target="sm70"),
        Good(CMD.format(extra=f"{ACTOR}=False \\\n    {REF}=False \\\n    "), path="run.sh"),
        Good("use_torch_compile: true\n", path="unrelated.yaml"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.inductor

    def check_config(self, view, ctx) -> None:
        target = ctx.target

        def describe(key: str, value: str, origin: str) -> str:
            return (f"{key} is {value}{origin}: torch.compile's Inductor backend refuses {target.name} "
                    f"(compute capability {target.capability_text} < 7.0); set it to False")

        h.set_or_add(view, ctx, "torch-compile", lambda v: v.strip().lower() in h.TRUE_WORDS,
                     lambda v: (False, FixSafety.SAFE), describe, roles=("actor", "ref", "critic", "sft"))
