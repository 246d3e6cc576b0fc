from __future__ import annotations

from rlcompat.knowledge import precision
from rlcompat.analysis import confighelpers as h
from rlcompat.contract import Bad, ConfigRule, FixSafety, Good

_ENGINES = ("vllm", "sglang")


class DtypeAutoCliAndConfig(ConfigRule):
    code = "RLC117"
    name = "dtype-auto-cli-and-config"
    title = "`torch_dtype: auto` / `--dtype auto` takes the checkpoint's dtype (bf16 for most models) on a GPU without bf16"
    what = (
        "Finds `--torch_dtype auto` and `torch_dtype: auto` in launch scripts and YAML trainer configs (TRL, "
        "LLaMA-Factory-style model arguments), and an explicit `--dtype auto` given to `vllm serve` / sglang. The "
        "Python form is RLC109."
    )
    why = (
        "`auto` loads the dtype in the checkpoint's config.json [S61], bf16 for most current models, which compute "
        "capability < 8.0 only emulates [S1]. vLLM falls back to float16 for such a checkpoint below 8.0, where "
        "bf16-pretrained models may overflow [S65][S66]."
    )
    fix_safety = (
        "By the precision policy (docs/precision.md): a trainer's `torch_dtype` becomes `float32` (safe); an engine's "
        "`--dtype` becomes `float16` on sm70/sm75 (unsafe: a smaller range than bf16) and `float32` on sm5x/sm6x."
    )
    names = ("auto",)
    sources = ("S1", "S61", "S65", "S66")

    bad = (
        Bad("python train_grpo.py --model_name_or_path Qwen/Qwen2.5-0.5B --torch_dtype auto\n", target="sm70",
            path="run.sh", fixed="python train_grpo.py --model_name_or_path Qwen/Qwen2.5-0.5B --torch_dtype float32\n"),
        Bad("model_name_or_path: Qwen/Qwen2.5-0.5B\ntorch_dtype: auto\n", path="grpo.yaml",
            fixed="model_name_or_path: Qwen/Qwen2.5-0.5B\ntorch_dtype: float32\n"),
        Bad("vllm serve Qwen/Qwen2.5-7B --dtype auto\n", target="sm75", unsafe=True, path="run.sh",
            fixed="vllm serve Qwen/Qwen2.5-7B --dtype float16\n"),
    )
    good = (
        Good("python train.py --torch_dtype auto\n", target="sm80", path="run.sh"),
        Good("python train.py --device_map auto --torch_dtype float32\n", target="sm70", path="run.sh"),
        Good("torch_dtype: float32\n", path="grpo.yaml"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.bf16_native

    def check_config(self, view, ctx) -> None:
        target = ctx.target
        engine = any(e in w for w in view.command_words for e in _ENGINES)
        settings = view.flags("--torch_dtype", "--torch-dtype") + (view.by_name("torch_dtype") if not view.is_verl else [])
        if engine:
            settings += view.flags("--dtype")
        for s in settings:
            if (s.value or "").strip().lower() != "auto":
                continue
            role = "rollout" if s.flag and s.key == "dtype" else "weights"
            fp16 = precision.dtype_for(target, role) == "float16"
            new = "float16" if fp16 else "float32"
            ctx.report(s.key_span, f"{s.label} is auto{h.where(s)}: the checkpoint's dtype, bf16 for most current models, "
                                   f"which {target.name} ({target.architecture}) lacks; use {new}",
                       [s.rewrite(new)], FixSafety.UNSAFE if fp16 else FixSafety.SAFE, f"use {new}")
