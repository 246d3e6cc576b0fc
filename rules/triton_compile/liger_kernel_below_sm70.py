from __future__ import annotations

import libcst as cst

from rlcompat.analysis import pyhelpers as h
from rlcompat.analysis.pyswitches import switched_on, turn_off
from rlcompat.contract import Bad, Good, PythonRule


def _behind_liger_switch(ancestors) -> bool:
    """Under `if use_liger:` (or any test naming liger): the switch is what to turn off, and it is reported."""
    for a in ancestors:
        if isinstance(a, cst.If) and "liger" in cst.Module([]).code_for_node(a.test).lower():
            return True
    return False


class LigerKernelBelowSm70(PythonRule):
    code = "RLC305"
    name = "liger-kernel-below-sm70"
    title = "Liger-Kernel switched on for a GPU older than Volta"
    what = (
        "Finds `use_liger=True` (a keyword or an assignment, as in TRL and verl model configs) and calls into "
        "`liger_kernel` (`apply_liger_kernel_to_llama(...)`, `AutoLigerKernelForCausalLM...`) outside a "
        "compute-capability check or the `if use_liger:` switch itself."
    )
    why = (
        "Liger-Kernel is a set of Triton kernels its maintainers support on sm80 and newer [S37]; Triton itself "
        "does not support Pascal [S43][S18]. On sm6x its kernels hit the failures of RLC302/RLC303 (atomics, bf16 "
        "casts) and PyTorch's own Triton integration refuses capability < 7.0 [S17]."
    )
    fix_safety = (
        "`use_liger=True` becomes `use_liger=False`: safe, the model falls back to the Hugging Face modules it "
        "patches (same math, more memory). Direct `liger_kernel` calls have no autofix: gate them on capability."
    )
    # `use_liger` (keyword, field, assignment) or a name imported from `liger_kernel`
    names = ("use_liger", "liger_kernel")
    severity = "warning"
    sources = ("S17", "S18", "S37", "S43")

    bad = (
        Bad("cfg = ModelConfig(path, use_liger=True)\n", fixed="cfg = ModelConfig(path, use_liger=False)\n"),
        Bad("class C:\n    use_liger: bool = True\n", fixed="class C:\n    use_liger: bool = False\n"),
        Bad("from liger_kernel.transformers import apply_liger_kernel_to_qwen2\n\napply_liger_kernel_to_qwen2()\n"),
    )
    good = (
        Good("cfg = ModelConfig(path, use_liger=True)\n", target="sm70"),
        Good("cfg = ModelConfig(path, use_liger=False)\n"),
        Good("class C:\n    use_liger: bool = False\n"),
        Good("import torch\nfrom liger_kernel.transformers import apply_liger_kernel_to_qwen2\n"
             "if torch.cuda.get_device_capability()[0] >= 8:\n    apply_liger_kernel_to_qwen2()\n"),
        Good("if cfg.use_liger:\n    pass\n"),
        Good("from liger_kernel.transformers import apply_liger_kernel_to_qwen2\n\n"
             "def build(m, use_liger):\n    if use_liger:\n        apply_liger_kernel_to_qwen2(model=m)\n"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.inductor

    def visit_Arg(self, node: cst.Arg, ctx) -> None:
        if node.keyword is not None and node.keyword.value == "use_liger":
            self._check_true(node.value, ctx)

    def visit_AnnAssign(self, node: cst.AnnAssign, ctx) -> None:
        if h.target_name(node.target) == "use_liger" and node.value is not None:
            self._check_true(node.value, ctx)

    def visit_Assign(self, node: cst.Assign, ctx) -> None:
        if any(h.target_name(t.target) == "use_liger" for t in node.targets):
            self._check_true(node.value, ctx)

    def _check_true(self, value, ctx) -> None:
        if switched_on(value, ctx.ancestors):
            turn_off(value, ctx, f"use_liger=True enables Liger-Kernel's Triton kernels, supported on sm80+ only; "
                                 f"{self.target.name} is {self.target.capability_text}: turn it off", "use_liger=False")

    def visit_Call(self, node: cst.Call, ctx) -> None:
        name = ctx.qualname(node.func) or ""
        if not name.startswith("liger_kernel."):
            return
        if h.guarded_by(ctx.ancestors, h.is_capability_guard) or _behind_liger_switch(ctx.ancestors):
            return
        ctx.report(
            node,
            f"`{name.rsplit('.', 1)[-1]}` runs Liger-Kernel's Triton kernels, supported on sm80+ only; "
            f"{self.target.name} is {self.target.capability_text}: gate it on capability or leave it off",
        )
