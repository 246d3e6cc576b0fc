from __future__ import annotations

import re

import libcst as cst

from rlcompat.analysis import packages
from rlcompat.analysis import pyhelpers as h
from rlcompat.knowledge import trl_paths
from rlcompat.contract import Bad, Good, PythonRule

_IMPORT = "from trl import {0}\n"
_RUN = "trainer = {0}(model='Qwen/Qwen2.5-0.5B', args=args, train_dataset=ds)\n"
# A file that turns bf16 off and names no bf16 dtype hands the kernels fp32 or fp16 logits, which compile.
_BF16_OFF = re.compile(r"\bbf16\s*=\s*False\b")


def _trainers() -> tuple[str, ...]:
    return tuple(sorted({t for p in trl_paths.kernel_paths() for t in p.trainers}))


class TrlKernelsBf16OldTriton(PythonRule):
    code = "RLC130"
    name = "trl-kernels-bf16-old-triton"
    title = "TRL 1.14+ trainers run TRL's Triton kernels in bf16, which Triton up to 3.2 cannot compile below sm80"
    what = (
        "Finds a TRL trainer built in Python (`SFTTrainer`, `DPOTrainer`, `GRPOTrainer`, `RLOOTrainer`, `KTOTrainer`, "
        "`AsyncGRPOTrainer`) in a tree whose TRL release runs TRL's own Triton kernels on the model's logits with no "
        "option in between (rlcompat/knowledge/data/trl_paths.toml `[[kernel_path]]`: 1.14.x `logprob_entropy`, "
        "1.15.x and 1.16.x also `chunked_logprob` through `add_fused_lm_head`) and whose Triton is known to be older "
        "than 3.3: pinned, following a torch pin (torch 2.6 installs Triton 3.2.0), or, where the tree declares "
        "neither, installed for a file that imports TRL. Not reported: an unknown TRL or Triton release, Triton 3.3.0 "
        "(not measured), a file that sets `bf16=False` and names no bfloat16, a trainer under a capability check."
    )
    why = (
        "The kernels have no capability check and take the logits' dtype: bf16 under TRL's default `bf16=True` "
        "(`not fp16`) or with a bf16 model [S145]. Triton up to 3.2 hands the bf16 loads to ptxas unemulated, which "
        "refuses them below compute capability 8.0 (`Feature '.bf16' requires .target sm_80 or higher`, measured for "
        "sm61, sm70 and sm75; 3.3.1 and later compile them) [S54][S147]: training stops at the first forward. "
        "Below 7.0 Triton also has no official support at all [S18][S43]."
    )
    fix_safety = (
        "No automatic fix here: the precision is chosen in the trainer's config (RLC111 and RLC118 fix `bf16` there: "
        "fp16 or fp32 logits compile with every Triton measured), or Triton is upgraded to 3.3.1+ (torch 2.7+)."
    )
    calls = _trainers()  # the trainer class called
    resolves_from = ("trl",)  # a trainer class resolved through an import of trl
    sources = ("S18", "S43", "S54", "S145", "S147")

    bad = (
        Bad(_IMPORT.format("GRPOTrainer") + _RUN.format("GRPOTrainer"), target="sm75",
            frameworks={"trl": "1.16.0", "triton": "3.2.0"}),
        Bad(_IMPORT.format("SFTTrainer") + _RUN.format("SFTTrainer"), target="sm70",
            frameworks={"trl": "1.14.2", "torch": "2.6.0"}),
        Bad("from trl.experimental.async_grpo import AsyncGRPOTrainer\n" + _RUN.format("AsyncGRPOTrainer"),
            target="sm61", frameworks={"trl": "1.15.0", "torch": "2.5.1+cu124"}),
    )
    good = (
        Good(_IMPORT.format("GRPOTrainer") + _RUN.format("GRPOTrainer"), target="sm75",
             frameworks={"trl": "1.16.0", "triton": "3.3.1"}),
        Good(_IMPORT.format("GRPOTrainer") + _RUN.format("GRPOTrainer"), target="sm80",
             frameworks={"trl": "1.16.0", "triton": "3.2.0"}),
        Good(_IMPORT.format("GRPOTrainer") + _RUN.format("GRPOTrainer"), target="sm75",
             frameworks={"trl": "1.13.0", "triton": "3.2.0"}),
        Good(_IMPORT.format("GRPOTrainer") + _RUN.format("GRPOTrainer"), target="sm75", frameworks={"trl": "1.16.0"}),
        Good(_IMPORT.format("GRPOTrainer") + _RUN.format("GRPOTrainer"), target="sm75",
             frameworks={"trl": "1.16.0", "torch": "2.7.0"}),
        Good("from trl import GRPOConfig, GRPOTrainer\nargs = GRPOConfig(output_dir='o', bf16=False, fp16=True)\n"
             + _RUN.format("GRPOTrainer"), target="sm75", frameworks={"trl": "1.16.0", "triton": "3.2.0"}),
        # AsyncGRPOTrainer reaches the kernels from 1.15.0 only.
        Good("from trl.experimental.async_grpo import AsyncGRPOTrainer\n" + _RUN.format("AsyncGRPOTrainer"),
             target="sm75", frameworks={"trl": "1.14.2", "triton": "3.2.0"}),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.bf16_native

    def visit_Call(self, node: cst.Call, ctx) -> None:
        name = h.call_name(node)
        if name not in self.calls or not (ctx.qualname(node.func) or "").startswith("trl."):
            return
        knowledge = ctx.scanned
        trl = ctx.release("trl")
        path = trl_paths.kernel_path(trl) if trl else None
        if path is None or name not in path.trainers:
            return
        if _BF16_OFF.search(knowledge.text) and "bfloat16" not in knowledge.text:
            return
        triton = packages.triton_release(knowledge, "trl")
        if triton is None or trl_paths.triton_fails_bf16(triton.version) is not True:
            return
        if h.guarded_by(ctx.ancestors, h.is_capability_guard):
            return
        row = trl_paths.triton_bf16()
        target = self.target
        kernels = ", ".join(k.rsplit("/", 1)[-1] for k in path.kernels)
        official = "" if target.inductor else "; below 7.0 Triton has no official support at all"
        ctx.report(node, f"{name} of TRL {trl} runs TRL's Triton kernels ({kernels}) on the logits with no option "
                         f"to turn them off ({path.sites[name]}); with bf16 (TRL's default) they are bf16 "
                         f"kernels, which Triton {triton.version} ({triton.evidence}) cannot compile for {target.name} "
                         f"({target.capability_text}): `{row['error']}`{official}; train with bf16=False (fp16 or "
                         f"fp32 compile) or use Triton >= {row['compiles_from']} (torch >= 2.7)")
