from __future__ import annotations

from rlcompat.knowledge import quantized_checkpoints
from rlcompat.knowledge import frameworks as fk
from rlcompat.analysis.knowledge_keys import attributed
from rlcompat.contract import Bad, ConfigRule, Good


def _is_model_key(key: str) -> bool:
    name = fk.normalise(key).lower()
    return any(name == k or name.endswith("." + k) for k in quantized_checkpoints.model_keys())


class QuantizedCheckpointName(ConfigRule):
    code = "RLC416"
    name = "quantized-checkpoint-name"
    title = "A model whose name says a quantization format (AWQ, NVFP4) no engine runs on the GPU"
    what = (
        "Reads the settings that name the model a run loads (`base_model`, `model_name_or_path`, `pretrain`, "
        "`model.path`, `--model`, ...) and the format its name says, from the table in "
        "rlcompat/knowledge/data/quantized_checkpoints.toml (`...-AWQ`, `...-NVFP4`). The format's minimum compute capability is the "
        "lowest of the engines that load it (vLLM, AutoAWQ); in a config of a framework with its own row (axolotl "
        "trains NVFP4 bases only with its own kernels) that framework's. A warning: the name is a hint, the "
        "checkpoint's `quantization_config` decides."
    )
    why = (
        "AWQ kernels need compute capability 7.5, in vLLM (`get_min_capability` 75) [S56] and in AutoAWQ [S90]. "
        "NVFP4 (ModelOpt) checkpoints run in vLLM from 7.5 through FP4 Marlin [S92]; axolotl trains on them only with "
        "SonicMoE (Hopper+) or its Marlin W4A16 kernels (sm80+) [S91]."
    )
    fix_safety = (
        "No fix: another checkpoint (unquantized, or GPTQ, which vLLM runs from 6.0 [S56]) is the user's choice of "
        "model, with its own memory needs."
    )
    severity = "warning"
    languages = ConfigRule.languages | {"python"}  # its settings written in Python too (lang/pysettings.py)
    names = ("awq", "AWQ", "Awq", "nvfp4", "NVFP4", "NvFp4")
    python_triggers = ("AWQ", "awq", "NVFP4", "nvfp4")  # fewer than its triggers: call keywords and config fields
    sources = ("S56", "S90", "S91", "S92")

    bad = (
        Bad("model_name_or_path: TechxGenus/Meta-Llama-3-8B-Instruct-AWQ\nfinetuning_type: oft\n",
            path="llama3_oft_sft_awq.yaml"),
        Bad("base_model: nvidia/Qwen3-30B-A3B-NVFP4\nadapter: lora\n", path="30b-a3b-nvfp4-lora.yaml", target="sm75"),
        Bad("python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct-AWQ\n",
            path="run.sh", target="sm70"),
    )
    good = (
        Good("model_name_or_path: TechxGenus/Meta-Llama-3-8B-Instruct-AWQ\n", path="awq.yaml", target="sm75"),
        Good("model_name_or_path: TechxGenus/Meta-Llama-3-8B-Instruct-GPTQ\n", path="gptq.yaml"),
        Good("model_name_or_path: meta-llama/Meta-Llama-3-8B-Instruct\n", path="sft.yaml"),
        Good("model: nvidia/Qwen3-30B-A3B-NVFP4\n", path="serve.yaml", target="sm75"),
        Good("base_model: nvidia/Qwen3-30B-A3B-NVFP4\n", path="30b-a3b-nvfp4-lora.yaml", target="sm80"),
        Good("output_dir: saves/llama3-8b-awq\n", path="sft.yaml"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return any(target.capability < e.min_capability for f in quantized_checkpoints.formats() for e in f.engines)

    def check_config(self, view, ctx) -> None:
        target = ctx.target
        for s in view.settings:
            if s.value is None or not _is_model_key(s.key):
                continue
            fmt = quantized_checkpoints.name_format(s.value)
            if fmt is None:
                continue
            own = {e.framework for e in fmt.engines if e.framework}
            frameworks = {fw.name for fw in fk.frameworks() if fw.name in own and attributed(view, ctx, fw)}
            engines = quantized_checkpoints.engines_for(fmt, frameworks)
            lowest = min(e.min_capability for e in engines)
            if target.capability >= lowest:
                continue
            needs = "; ".join(f"{e.engine} needs {e.capability_text} ({e.where})" for e in engines)
            ctx.report(s.key_span, f"{s.label} is {s.value}: its name says a {fmt.name} checkpoint (read from the name "
                                   f"only: the checkpoint's quantization_config decides); {needs}; {target.name} is "
                                   f"{target.capability_text}: load an unquantized checkpoint or one in a format this "
                                   f"GPU runs")
