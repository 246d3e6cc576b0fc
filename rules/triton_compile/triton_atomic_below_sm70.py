from __future__ import annotations

import libcst as cst

from rlcompat.contract import Bad, Good, PythonRule
from rlcompat.rules.triton_compile.helpers import in_triton_kernel

_ATOMICS = frozenset(
    {"atomic_add", "atomic_max", "atomic_min", "atomic_and", "atomic_or", "atomic_xor", "atomic_xchg", "atomic_cas"}
)

_KERNEL = '''import triton
import triton.language as tl


@triton.jit
def sum_rows(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=0.0)
    {atomic}
'''


def _kernel(atomic: str) -> str:
    return _KERNEL.format(atomic=atomic)


# A kernel behind a local wrapper of triton.jit, imported only when Triton is there (TRL's `_jit` does this).
_WRAPPED_KERNEL = '''from importlib.util import find_spec

if find_spec("triton"):
    import triton
    import triton.language as tl


def jit_if_available(fn):
    return triton.jit(fn) if find_spec("triton") else fn


@jit_if_available
def count_hits(hits_ptr, total_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    {atomic}
'''


class TritonAtomicBelowSm70(PythonRule):
    code = "RLC302"
    name = "triton-atomic-below-sm70"
    title = "`tl.atomic_*` in a Triton kernel on a GPU older than Volta"
    what = (
        "Finds `tl.atomic_add`, `atomic_max`, `atomic_cas`, ... (and the `tensor.atomic_*` forms) inside `@triton.jit` "
        "kernels, including kernels behind a local wrapper of `triton.jit` (a decorated function with `tl.constexpr` "
        "parameters)."
    )
    why = (
        "Triton emits every atomic with a memory-ordering qualifier: `atom.global.gpu.acq_rel.add.f32` by default, "
        "`atom....relaxed...` with sem=\"relaxed\"; no value of `sem` leaves it out (Triton's `_str_to_sem`) [S45]. Those qualifiers belong to the memory model introduced with sm_70 "
        "[S45], and ptxas rejects them below it: `Feature '.acq_rel' requires .target sm_70 or higher`. Measured "
        "with Triton 3.1 and 3.9 for sm61: every sem (relaxed, acquire, release, acq_rel) and scope (gpu, cta, sys) "
        "fails the same way, so passing sem= does not help [S54]. The kernel cannot be compiled, on its first launch."
    )
    fix_safety = (
        "No autofix: no spelling of the atomic compiles for sm6x with current Triton. Write per-program partial "
        "results to a buffer and reduce them afterwards (a second kernel or `torch.sum`/`index_add_`), or gate the "
        "Triton path on `torch.cuda.get_device_capability() >= (7, 0)` and keep a PyTorch fallback."
    )
    names = ("atomic_",)
    resolves_from = ("triton",)  # only inside a Triton kernel (a decorator or parameter resolved into triton)
    sources = ("S45", "S54")

    bad = (
        Bad(_kernel("tl.atomic_add(out_ptr, tl.sum(x, axis=0))")),
        Bad(_kernel('tl.atomic_add(out_ptr, tl.sum(x, axis=0), sem="relaxed")')),
        Bad(_kernel("tl.atomic_max(out_ptr + row, tl.max(x, axis=0))")),
        Bad(_kernel("tl.atomic_cas(out_ptr, 0, 1)")),
        Bad(_kernel("(out_ptr + row).atomic_add(tl.sum(x, axis=0))")),
        Bad(_WRAPPED_KERNEL.format(atomic="tl.atomic_add(total_ptr, tl.sum(tl.load(hits_ptr + offs), axis=0))")),
    )
    good = (
        Good(_kernel("tl.atomic_add(out_ptr, tl.sum(x, axis=0))"), target="sm70"),
        Good(_kernel("tl.store(out_ptr + row, tl.sum(x, axis=0))")),
        Good("import torch\ntotal.atomic_add(1)\n"),  # not in a Triton kernel
        Good("import triton\ndef helper(p):\n    return p.atomic_add\n"),
        Good(_WRAPPED_KERNEL.format(atomic="tl.store(total_ptr, tl.sum(tl.load(hits_ptr + offs), axis=0))")),
        # decorated, but no tl.constexpr parameter: not a Triton kernel
        Good("import functools\n@functools.cache\ndef bump(counter):\n    return counter.atomic_add(1)\n"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.triton_atomic_sem

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in _ATOMICS:
            return
        name = ctx.qualname(func)
        if name is not None and not name.startswith("triton.language."):
            return
        if not in_triton_kernel(ctx):
            return
        sem = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "sem"), None)
        spelled = f" (even with sem={cst.Module([]).code_for_node(sem)})" if sem is not None else " (default sem=\"acq_rel\")"
        ctx.report(
            node,
            f"`{func.attr.value}`{spelled} compiles to a PTX atomic with a memory-ordering qualifier that ptxas "
            f"rejects below sm_70; {self.target.name} is {self.target.capability_text}: reduce partial results "
            "without atomics or gate this kernel on capability >= 7.0",
        )
