from __future__ import annotations

from rlcompat.contract import Bad, ConfigRule, Good
from rlcompat.analysis.confighelpers import keys_at_every_mount, turn_off

CMD = "python3 -m verl.trainer.main_ppo \\\n    {extra} \\\n    trainer.n_gpus_per_node=1\n"


class LigerKernel(ConfigRule):
    code = "RLC354"
    name = "liger-kernel"
    title = "Liger kernels switched on for a GPU Triton does not run on"
    what = (
        "Finds verl's `use_liger: true` (actor or critic model, the SFT trainer's `model.use_liger`) [S51], TRL/transformers' `use_liger_kernel: true` in "
        "YAML and the `--use_liger_kernel` flag."
    )
    why = (
        "Liger's kernels are all Triton, with Triton's hardware support [S37]: nothing below compute capability 7.0 "
        "[S17], and ptxas errors for bf16 below 8.0 [S37]."
    )
    fix_safety = "Turning it off uses the model's own PyTorch layers: the same math with more memory, safe."
    names = ("liger",)
    languages = ConfigRule.languages | {"python"}  # its settings written in Python too (lang/pysettings.py)
    sources = ("S17", "S37", "S51")

    bad = (
        Bad(CMD.format(extra="actor_rollout_ref.model.use_liger=True"), path="run.sh",
            fixed=CMD.format(extra="actor_rollout_ref.model.use_liger=False")),
        Bad("use_liger_kernel: true\nbf16: false\n", fixed="use_liger_kernel: false\nbf16: false\n", path="sft.yaml"),
        Bad("accelerate launch sft.py --use_liger_kernel --lr 1e-5\n", fixed="accelerate launch sft.py --lr 1e-5\n",
            path="run.sh"),
        Bad("torchrun -m verl.trainer.sft_trainer model.path=Qwen/Qwen2.5-0.5B model.use_liger=True\n", path="run.sh",
            fixed="torchrun -m verl.trainer.sft_trainer model.path=Qwen/Qwen2.5-0.5B model.use_liger=False\n"),
    )
    good = (
        Good(CMD.format(extra="actor_rollout_ref.model.use_liger=False"), path="run.sh"),
        Good(CMD.format(extra="actor_rollout_ref.model.use_liger=True"), path="run.sh", target="sm75"),
        Good("python3 serve.py model.use_liger=True\n", path="run.sh"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.inductor

    def check_config(self, view, ctx) -> None:
        target = ctx.target
        found = [s for s in (view.get(key) for key in _liger_keys(view, ctx.verl)) if s]
        found += view.by_name("use_liger_kernel") + view.flags("--use_liger_kernel", "--use-liger-kernel")
        why = f"Liger's Triton kernels do not run on {target.name} (compute capability {target.capability_text})"
        turn_off(found, ctx, lambda s: f"{s.label}: {why}; drop the flag",
                 lambda s: f"{s.label} is {s.value}: {why}; set it to false")


# Rule sets that do not mount model/hf_model.yaml at `critic.model` (verl before 0.8.0, a verl of unknown version)
# prove no critic key: the rule still reads this one there, unproven, so that their findings do not change.
UNPROVEN_CRITIC_KEY = "critic.model.use_liger"


def _liger_keys(view, knowledge) -> list[str]:
    """verl's `use_liger` keys (`[[setting]] id = "use-liger"`, the SFT trainer's only in an SFT run), each also at
    the other mounts of the file it is proven in (the critic's model block, verl 0.8.0 and 0.9.1)."""
    known = [k for k in knowledge.by_id("use-liger") if k.role != "sft" or _sft_view(view)]
    keys = [k.key for k in known] + [key for k in known for key in keys_at_every_mount(knowledge, k)]
    if not any(key.startswith("critic.") for key in keys):
        keys.append(UNPROVEN_CRITIC_KEY)
    return list(dict.fromkeys(keys))


def _sft_view(view) -> bool:
    """verl's SFT trainer names its model block `model` (not actor_rollout_ref.model)."""
    return view.is_verl and any("sft" in word for word in view.command_words) if view.kind == "command" else (
        view.is_verl and view.mounts == ("",))
