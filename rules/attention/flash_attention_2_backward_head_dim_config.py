from __future__ import annotations

from pathlib import Path

from rlcompat.knowledge import flash_attn_backward
from rlcompat.analysis import confighelpers as h
from rlcompat.analysis.confighelpers import remove_flag
from rlcompat.contract import Bad, ConfigRule, FixSafety, Good

_FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "models" / "fa2_head_dim_256_rtx3090" / "input"
_MODEL_NAMES = ("model_name_or_path", "pretrain")
_MODEL_FLAGS = ("--model_name_or_path", "--model-name-or-path", "--pretrain")
VERL_MODEL = "actor_rollout_ref.model.path"
VERL_ATTN = "actor_rollout_ref.model.override_config.attn_implementation"
_VERL = "python3 -m verl.trainer.main_ppo \\\n    actor_rollout_ref.model.path={path} \\\n    trainer.n_gpus_per_node=1\n"


class FlashAttention2BackwardHeadDimConfig(ConfigRule):
    code = "RLC210"
    name = "flash-attention-2-backward-head-dim-config"
    title = "FlashAttention-2 training of a local model with head_dim above 192 on a 99 KB card, chosen in a config or script"
    what = (
        "RLC209 for YAML configs and launch scripts: a model path (`model_name_or_path`, OpenRLHF's `--pretrain`, "
        "verl's `actor_rollout_ref.model.path`) naming a local directory with a config.json, in a config or command "
        "that selects FlashAttention-2 (`attn_implementation: flash_attention_2`, the `--attn_implementation` flag, "
        "OpenRLHF's `--flash_attn`, or a verl command that leaves verl's default, flash_attention_2 [S51])."
    )
    why = (
        "As RLC209: on cards with 99 KB of shared memory FlashAttention-2's backward for head_dim 193-256 raises "
        "`FlashAttention backward for head dim > 192 requires A100/A800 or H100/H800` in flash-attn before 2.5.5 "
        "(193-224: before 2.6.2), and with attention dropout fails on every release [S70]. With dropout an error, "
        "without a warning naming the release that runs it."
    )
    fix_safety = (
        "With attention dropout: `sdpa` replaces the value (or the verl override is added, or OpenRLHF's "
        "`--flash_attn` is removed); PyTorch runs this head_dim and dropout with its memory-efficient kernel [S71]: "
        "safe. Without dropout: no fix."
    )
    names = ("flash_attention_2", "flash_attn", "flash-attn")
    verl_commands = True  # a verl launch command that leaves its key at the bad default
    sources = ("S51", "S70", "S71")
    prevents = ("X12",)

    bad = (
        Bad("model_name_or_path: models/gemma-7b-dropout\nattn_implementation: flash_attention_2\nbf16: true\n",
            target="sm86", path=str(_FIXTURE / "sft.yaml"),
            fixed="model_name_or_path: models/gemma-7b-dropout\nattn_implementation: sdpa\nbf16: true\n"),
        Bad(_VERL.format(path="models/gemma-7b-dropout"), target="sm89", path=str(_FIXTURE / "run.sh"),
            fixed=_VERL.format(path="models/gemma-7b-dropout").replace("=1\n", f"=1 \\\n    ++{VERL_ATTN}=sdpa\n")),
        Bad("deepspeed --module openrlhf.cli.train_sft --pretrain models/gemma-7b --flash_attn --zero_stage 2\n",
            target="sm86", path=str(_FIXTURE / "run.sh")),
    )
    good = (
        Good("model_name_or_path: models/gemma-7b-dropout\nattn_implementation: flash_attention_2\n", target="sm80",
             path=str(_FIXTURE / "sft.yaml")),
        Good("model_name_or_path: models/gemma-7b-dropout\nattn_implementation: sdpa\n", target="sm86",
             path=str(_FIXTURE / "sft.yaml")),
        Good("model_name_or_path: google/gemma-7b\nattn_implementation: flash_attention_2\n", target="sm86",
             path=str(_FIXTURE / "sft.yaml")),
        Good(_VERL.format(path="models/qwen2.5-0.5b"), target="sm86", path=str(_FIXTURE / "run.sh")),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return flash_attn_backward.applies_to(target)

    def check_config(self, view, ctx) -> None:
        paths = view.by_name(*_MODEL_NAMES) + view.flags(*_MODEL_FLAGS)
        verl_model = view.get(VERL_MODEL) if view.is_verl else None
        if verl_model is not None:
            paths.append(verl_model)
        hazard = next((z for z in (flash_attn_backward.backward_hazard(ctx.model_shape(s.value),
                                                                     self.target)
                                   for s in paths if s.value) if z is not None), None)
        if hazard is None:
            return
        severity = "" if hazard.with_dropout else "warning"
        chosen = [s for s in view.by_name("attn_implementation", "_attn_implementation")
                  + view.flags("--attn_implementation", "--attn-implementation") if s.value == "flash_attention_2"]
        for s in chosen:
            ctx.report(s.key_span, hazard.message + h.where(s),
                       [s.rewrite("sdpa")] if hazard.with_dropout else [], FixSafety.SAFE, "use sdpa", severity)
        for s in view.flags("--flash_attn", "--flash-attn"):
            if s.value and s.as_bool() is False:
                continue
            edits = [remove_flag(ctx.source_text, s.word_span) if s.word_span else None] if hazard.with_dropout else []
            ctx.report(s.key_span, hazard.message + h.where(s), edits, FixSafety.SAFE, f"remove {s.key}", severity)
        if verl_model is not None and view.kind == "command" and view.get(VERL_ATTN) is None and not chosen:
            # verl 0.9.1 selects flash_attention_2 unless the override says otherwise
            edits = [view.add(f"++{VERL_ATTN}", "sdpa")] if hazard.with_dropout and view.can_add else []
            ctx.report(verl_model.key_span, hazard.message + h.where(verl_model) + "; verl's default "
                                                             "attn_implementation is flash_attention_2", edits, FixSafety.SAFE,
                       "select sdpa", severity)
