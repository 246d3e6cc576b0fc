from __future__ import annotations

from rlcompat.analysis.knowledgecheck import DataExamples, check
from rlcompat.contract import Bad, ConfigRule, Good

KINDS = frozenset({"compile-switch", "liger-switch"})


class FrameworkKernelSetting(ConfigRule):
    code = "RLC355"
    name = "framework-kernel-setting"
    title = "A framework's torch.compile or Liger switch (from rlcompat's framework knowledge) below Volta"
    what = (
        "Reads rlcompat/knowledge/data/frameworks/: keys and flags of kind `compile-switch` and `liger-switch` (transformers "
        "`torch_compile`, torchtune `compile`, DeepSpeed `compile.deepcompile`, OpenRLHF `--ds.deepcompile` and "
        "`--ds.use_liger_kernel`, LLaMA-Factory `enable_liger_kernel`, SGLang `--enable-torch-compile`, axolotl "
        "`torch_compile`, `flex_attention` and the Liger plugin's `liger_*` switches) and reports "
        "them switched on for a GPU Triton does not run on."
    )
    why = (
        "torch.compile's Inductor backend generates Triton kernels and raises GPUTooOldForTriton below compute "
        "capability 7.0 [S17]; Liger's kernels are Triton [S37]."
    )
    fix_safety = "Turning the switch off runs the same computation eagerly or with the model's own layers: safe."
    languages = ConfigRule.languages | {"python"}  # its settings written in Python too (lang/pysettings.py)
    names = ("compile", "liger", "flex_attention", "[orchestrator]", "[data]")
    sources = ("S17", "S37")
    # Not the key words of its `kinds` (a file is read only where it spells one): these mark the statements whose
    # settings every config rule reads, and the key words would mark others
    python_triggers = ("compile", "liger")
    kinds = KINDS
    precedence = 1

    bad = DataExamples("bad", (
        Bad("deepspeed --module openrlhf.cli.train_sft --use_liger_kernel --zero_stage 2\n", path="run.sh",
            fixed="deepspeed --module openrlhf.cli.train_sft --zero_stage 2\n"),
    ))
    good = DataExamples("good", (
        Good("deepspeed --module openrlhf.cli.train_sft --use_liger_kernel\n", path="run.sh", target="sm70"),
    ))

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.inductor

    def check_config(self, view, ctx) -> None:
        check(view, ctx, KINDS)
