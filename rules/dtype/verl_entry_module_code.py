from __future__ import annotations

from rlcompat.contract import Bad, ConfigRule, Good
from rlcompat.knowledge import verl_entry_code

_SFT = ("torchrun --standalone --nnodes=1 --nproc_per_node=2 \\\n    -m verl.trainer.fsdp_sft_trainer \\\n"
        "    data.train_files=train.parquet \\\n    model.partial_pretrain=Qwen/Qwen2.5-0.5B-Instruct{extra}\n")


def _module(words) -> str | None:
    for i, word in enumerate(words[:-1]):
        if word in ("-m", "--module"):
            return words[i + 1]
    return None


class VerlEntryModuleCode(ConfigRule):
    code = "RLC123"
    name = "verl-entry-module-code"
    title = "A command runs a verl entry module whose own code writes bf16 and FlashAttention-2 (or that the tree's verl lacks)"
    what = (
        "Finds a launch command that runs a verl module listed in rlcompat/knowledge/data/verl_entry_code.toml "
        "(`torchrun -m verl.trainer.fsdp_sft_trainer ...`). Where the tree's verl (its pin, else the installed "
        "release) has the module, the command is reported with what that release's trainer writes itself (file:line). "
        "Where that release has no such module (verl 0.8.0 and later replaced fsdp_sft_trainer with sft_trainer), the "
        "command cannot start with it, and every release rlcompat knows that has the module writes the same: both are "
        "said, citing the newest such release. A verl fork in the tree is left to the rules that read its code."
    )
    why = (
        "verl's FSDP SFT trainer wraps the model in FSDP mixed precision with param_dtype torch.bfloat16, autocasts "
        "to bfloat16 and loads the model with attn_implementation=\"flash_attention_2\", all written in its code "
        "(verl 0.4.1 to 0.7.0, verl/trainer/fsdp_sft_trainer.py; rows of verl_entry_code.toml), so no override of "
        "the command changes them. bf16 has no hardware below compute capability 8.0 [S1]; FlashAttention-2 refuses "
        "cards below 8.0 [S10][S12]."
    )
    fix_safety = (
        "No automatic fix: no key of the command changes what the trainer writes. Run SFT through verl's "
        "`verl.trainer.sft_trainer` (0.8.0 and later), whose engine settings choose the dtype and attention, or "
        "patch the trainer."
    )
    names = ("fsdp_sft_trainer",)
    languages = frozenset({"shell", "markdown"})
    sources = ("S1", "S10", "S12")

    bad = (
        Bad(_SFT.format(extra=""), path="run_sft.sh", target="sm75", frameworks={"verl": "0.4.1"}),
        Bad(_SFT.format(extra=""), path="run_sft.sh", target="sm61", frameworks={"verl": "0.9.1"}),
    )
    good = (
        Good(_SFT.format(extra=""), path="run_sft.sh", target="sm80", frameworks={"verl": "0.4.1"}),
        Good(_SFT.format(extra="").replace("fsdp_sft_trainer", "sft_trainer"), path="run_sft.sh", target="sm75",
             frameworks={"verl": "0.9.1"}),
        Good("python -m verl.trainer.main_ppo trainer.n_gpus_per_node=1\n", path="run.sh", target="sm75",
             frameworks={"verl": "0.4.1"}),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.bf16_native or not target.flash_attn_2

    def check_config(self, view, ctx) -> None:
        if view.kind != "command" or not view.word_spans or ctx.framework is None:
            return
        module = _module(list(view.command_words))
        if module not in verl_entry_code.modules():
            return
        verl = ctx.framework("verl")
        if verl.how == "fork":
            return
        release = verl.release
        code = verl_entry_code.code_of(module, release) if release else None
        missing = ""
        if code is None:
            code = verl_entry_code.newest_code(module)
            if code is None:
                return
            having = verl_entry_code.releases_with(module)
            if release and release not in having:
                missing = (f"{verl.describe()}: it has no module {module}, so the command stops at "
                           f"startup (No module named {module}; {code.replaced_by} replaced it); ")
            span = f"{having[0]} to {having[-1]}" if len(having) > 1 else having[0]
            with_release = f"with the releases that have it ({span}) the trainer"
        else:
            with_release = f"with verl {release} the trainer"
        target = self.target
        parts = []
        if not target.bf16_native and code.bf16:
            parts.append(f"trains in bf16 ({code.bf16} in verl {code.release}), which has no hardware on "
                         f"{target.name} ({target.capability_text})")
        if not target.flash_attn_2 and code.flash_attention_2:
            parts.append(f"loads the model with FlashAttention-2 ({code.flash_attention_2}), which refuses cards "
                         f"below 8.0")
        if not parts:
            return
        ctx.report(view.word_spans[0],
                   f"this runs {code.what} ({module}): {missing}{with_release} " + "; it ".join(parts) +
                   "; no override of the command changes what the trainer writes: run SFT through "
                   f"{code.replaced_by} (verl 0.8.0+) with an fp32/fp16 engine and sdpa attention", [None])
