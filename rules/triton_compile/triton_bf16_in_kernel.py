from __future__ import annotations

import libcst as cst

from rlcompat.contract import Bad, Good, PythonRule
from rlcompat.rules.triton_compile.helpers import in_triton_kernel

_KERNEL = '''import triton
import triton.language as tl


@triton.jit
def scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    {line}
'''


def _kernel(line: str) -> str:
    return _KERNEL.format(line=line)


class TritonBf16InKernel(PythonRule):
    code = "RLC303"
    name = "triton-bf16-in-kernel"
    title = "bf16 arithmetic or casts inside a Triton kernel on a GPU without bf16"
    what = (
        "Finds `tl.bfloat16` inside `@triton.jit` kernels: casts (`x.to(tl.bfloat16)`), `dtype=tl.bfloat16` for "
        "`tl.zeros`/`tl.full`, `out_dtype=`, comparisons excluded."
    )
    why = (
        "bf16 instructions need sm_80 [S1]. Triton up to 3.2 (3.1 ships with PyTorch 2.5) lowers bf16 casts and "
        "arithmetic to them and ptxas fails: `Feature '.bf16' requires .target sm_80 or higher` [S37][S54]; a bf16 "
        "`tl.dot` crashes the compiler on sm61 (`Unsupported rounding mode for conversion`) [S54]. Triton 3.3.1 "
        "(3.3 ships with PyTorch 2.7 [S38]) and newer emulate the conversions below 8.0 and compile the same kernels "
        "[S54], so this is an error with the Triton of older PyTorch versions, still common on these cards, and a "
        "slow path with newer ones."
    )
    fix_safety = (
        "No autofix: changing the kernel's cast does not change the tensors it is handed; a bf16 tensor still "
        "makes the kernel convert. Run the model in fp16/fp32 on this target (see RLC101) so no bf16 tensor reaches "
        "the kernel, and use `tl.float32` for the kernel's own casts."
    )
    names = ("bfloat16",)
    resolves_from = ("triton",)  # `triton.language.bfloat16` in a Triton kernel, both resolved through imports of triton
    severity = "warning"
    sources = ("S1", "S37", "S38", "S54")

    bad = (
        Bad(_kernel("tl.store(y_ptr + offs, (x * 2.0).to(tl.bfloat16), mask=offs < n)")),
        Bad(_kernel("acc = tl.zeros((BLOCK,), dtype=tl.bfloat16)"), target="sm75"),
        Bad(_kernel("y = x.to(triton.language.bfloat16)")),
    )
    good = (
        Good(_kernel("tl.store(y_ptr + offs, (x * 2.0).to(tl.bfloat16), mask=offs < n)"), target="sm80"),
        Good(_kernel("tl.store(y_ptr + offs, (x * 2.0).to(tl.float32), mask=offs < n)")),
        Good(_kernel("is_bf16 = x.dtype == tl.bfloat16")),
        Good("import triton.language as tl\nDTYPES = {'bf16': tl.bfloat16}\n"),  # outside a kernel
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.bf16_native

    def visit_Attribute(self, node: cst.Attribute, ctx) -> None:
        if node.attr.value != "bfloat16" or ctx.qualname(node) not in ("triton.language.bfloat16", "triton.language.core.bfloat16"):
            return
        if any(isinstance(a, (cst.Comparison, cst.ComparisonTarget)) for a in ctx.ancestors[-3:]):
            return
        if not in_triton_kernel(ctx):
            return
        ctx.report(
            node,
            f"bf16 inside a Triton kernel: {self.target.name} ({self.target.capability_text}) has no bf16 "
            "instructions; Triton <= 3.2 fails in ptxas (`.bf16 requires sm_80`), 3.3+ emulates slowly; "
            "use tl.float32 and keep bf16 tensors away from this kernel",
        )
