from __future__ import annotations

from rlcompat.analysis import packages
from rlcompat.knowledge import trl_paths
from rlcompat.contract import Bad, ConfigRule, Good

_RUN = "trl grpo --model_name_or_path Qwen/Qwen2.5-0.5B --dataset_name trl-lib/DeepMath-103K {extra}--output_dir o\n"


class TrlKernelsBf16OldTritonCommand(ConfigRule):
    code = "RLC131"
    name = "trl-kernels-bf16-old-triton-command"
    title = "`trl sft|dpo|grpo|rloo|kto` of TRL 1.14+ runs TRL's Triton kernels in bf16, which Triton up to 3.2 cannot compile below sm80"
    what = (
        "Finds a command running a TRL training script (`trl grpo ...`, `python -m trl.scripts.sft`, "
        "`accelerate launch .../trl/scripts/dpo.py`) in a tree whose TRL release runs TRL's own Triton kernels in the "
        "trainer that script builds (rlcompat/knowledge/data/trl_paths.toml `[cli]`, `[[kernel_path]]`) and whose "
        "Triton is known to be older than 3.3: pinned, following a torch pin, or, where the tree declares neither, "
        "installed. Not reported: a command passing `--bf16 false` or `--fp16` (true), an unknown TRL or Triton "
        "release. A `--config` file's own `bf16` is not read. RLC130 reports the trainers built in Python."
    )
    why = (
        "Each script builds its trainer, which runs TRL's kernels on the logits with no option to turn them off and "
        "no capability check, in bf16 under TRL's default `bf16=True` [S145]. Triton up to 3.2 hands the bf16 loads "
        "to ptxas unemulated, which refuses them below compute capability 8.0 (measured for sm61, sm70, sm75; 3.3.1 "
        "and later compile them) [S54][S147]: training stops at the first forward. Below 7.0 Triton also has no "
        "official support at all [S18][S43]."
    )
    fix_safety = (
        "No automatic fix: pass `--bf16 false` (fp32; on sm70/sm75 `--fp16 true`, whose smaller range the "
        "precision policy accepts there), or upgrade Triton to 3.3.1+ (torch 2.7+)."
    )
    names = ("trl",)
    languages = frozenset({"shell", "markdown"})
    sources = ("S18", "S43", "S54", "S145", "S147")

    bad = (
        Bad(_RUN.format(extra=""), path="train.sh", target="sm75", frameworks={"trl": "1.16.0", "torch": "2.6.0"}),
        Bad("accelerate launch -m trl.scripts.sft --model_name_or_path m --bf16 true\n", path="train.sh",
            frameworks={"trl": "1.14.0", "triton": "3.1.0"}),
    )
    good = (
        Good(_RUN.format(extra="--bf16 false "), path="train.sh", target="sm75",
             frameworks={"trl": "1.16.0", "torch": "2.6.0"}),
        Good(_RUN.format(extra="--fp16 "), path="train.sh", target="sm75", frameworks={"trl": "1.16.0", "torch": "2.6.0"}),
        Good(_RUN.format(extra=""), path="train.sh", target="sm75", frameworks={"trl": "1.16.0", "torch": "2.7.1"}),
        Good(_RUN.format(extra=""), path="train.sh", target="sm80", frameworks={"trl": "1.16.0", "torch": "2.6.0"}),
        Good(_RUN.format(extra=""), path="train.sh", target="sm75", frameworks={"trl": "1.13.0", "torch": "2.6.0"}),
        Good("trl vllm-serve --model m\n", path="serve.sh", target="sm75", frameworks={"trl": "1.16.0", "torch": "2.6.0"}),
        Good("trl reward --model_name_or_path m\n", path="train.sh", frameworks={"trl": "1.16.0", "torch": "2.6.0"}),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.bf16_native

    def check_config(self, view, ctx) -> None:
        if view.kind != "command" or not view.word_spans or ctx.framework is None:
            return
        found = trl_paths.cli_trainer(view.command_words)
        if found is None:
            return
        script, trainer = found
        trl = ctx.framework("trl").release
        path = trl_paths.kernel_path(trl) if trl else None
        if path is None or trainer not in path.trainers:
            return
        if any(s.as_bool() is False for s in view.flags("bf16")):
            return
        if any(s.as_bool() is True or (s.switch and not s.value) for s in view.flags("fp16")):
            return
        triton = packages.triton_release(ctx.scanned, "trl")
        if triton is None or trl_paths.triton_fails_bf16(triton.version) is not True:
            return
        row = trl_paths.triton_bf16()
        target = self.target
        kernels = ", ".join(k.rsplit("/", 1)[-1] for k in path.kernels)
        official = "" if target.inductor else "; below 7.0 Triton has no official support at all"
        ctx.report(view.word_spans[0],
                   f"this runs TRL {trl}'s {script} script, whose {trainer} runs TRL's Triton kernels ({kernels}) on "
                   f"the logits with no option to turn them off ({path.sites[trainer]}); with bf16 (TRL's default) "
                   f"they are bf16 kernels, which Triton {triton.version} ({triton.evidence}) cannot compile for "
                   f"{target.name} ({target.capability_text}): `{row['error']}`{official}; pass --bf16 false (fp16 "
                   f"or fp32 compile) or use Triton >= {row['compiles_from']} (torch >= 2.7)", [None])
