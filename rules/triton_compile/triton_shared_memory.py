from __future__ import annotations

from dataclasses import replace

import libcst as cst

from rlcompat.analysis import triton_model as tm
from rlcompat.contract import Bad, FixSafety, Good, PendingFix, PythonRule

_MIN_BLOCK = 16  # tl.dot needs every dimension >= 16

_MATMUL_BODY = '''@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * N + offs_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * N
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc)
'''


def _matmul(*configs: str) -> str:
    listed = "".join(f"        {c},\n" for c in configs)
    return (f"import triton\nimport triton.language as tl\n\n\n@triton.autotune(\n    configs=[\n{listed}    ],\n"
            f"    key=[\"M\", \"N\", \"K\"],\n)\n{_MATMUL_BODY}")


_BIG = 'triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 128}, num_stages=3, num_warps=8)'
_SMALL = 'triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, num_stages=3, num_warps=4)'
_DEEP = 'triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, num_stages=5, num_warps=8)'


def _kib(n: int) -> str:
    return f"{n / 1024:g} KiB"


class TritonSharedMemory(PythonRule):
    code = "RLC301"
    name = "triton-shared-memory"
    title = "Triton kernel config needs more shared memory than the GPU has per block"
    what = (
        "Reads every `@triton.jit` kernel's configurations (`@triton.autotune` configs, `@triton.heuristics`, "
        "`tl.constexpr` defaults, meta-parameters at launch sites) and estimates each one's shared memory on the "
        "target with rlcompat's kernel model (docs/triton.md): the tiles that reach each `tl.dot`, their element "
        "sizes, and whether the target software-pipelines. Reports configs above the per-block opt-in limit."
    )
    why = (
        "Such a launch fails with `triton.runtime.errors.OutOfResources: out of resource: shared memory` [S21]. The "
        "usual rule of thumb, num_stages x (BLOCK_M + BLOCK_N) x BLOCK_K x bytes [S22], is wrong below 8.0: Triton "
        "software-pipelines only on sm80 and newer [S20], so num_stages does not multiply anything there, but the "
        "FMA dot used below 8.0 [S19] stages its operands as fp32, and a tile computed in registers (logits) is "
        "staged whole. Limits are the per-block opt-in figures [S23][S24]. Estimates were checked against Triton's "
        "compiler [S54]."
    )
    fix_safety = (
        "Dropping the config from an autotune list that keeps another fitting config is safe: the autotuner already "
        "chooses among them. Lowering num_stages (pipelining targets only) is safe: it changes speed, not results. "
        "Halving a block size is unsafe: a kernel may assume a block spans a whole row or divides a dimension."
    )
    # Only a `@triton.jit` kernel (however `jit` was imported) can be reported, so a file without "jit" is never
    # parsed for this rule: many files only mention Triton (availability checks, backend names, configs).
    names = ("jit",)
    resolves_from = ("triton",)  # a kernel is a function whose decorator or `tl.constexpr` parameter resolves into triton
    whole_module = True  # a kernel's launch sites and autotune configs may sit in statements without a trigger
    whole_module_for_decorators_from = ("triton",)  # a kernel is a function whose decorator resolves to triton.jit
    sources = ("S19", "S20", "S21", "S22", "S23", "S24", "S54")

    bad = (
        Bad(_matmul(_BIG, _SMALL), fixed=_matmul(_SMALL)),
        Bad(_matmul(_DEEP), target="sm86",
            fixed=_matmul(_DEEP.replace("num_stages=5", "num_stages=4"))),
        Bad(_matmul(_BIG.replace("num_stages=3, ", "")), target="sm86",  # default num_stages=3
            fixed=_matmul(_BIG.replace("num_stages=3, num_warps=8", "num_warps=8, num_stages=2"))),
        Bad(_matmul(_BIG), unsafe=True,
            fixed=_matmul(_BIG.replace('"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 128',
                                       '"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64'))),
    )
    good = (
        # nominally 3 x (128 + 128) x 64 x 2 = 96 KiB, but nothing is pipelined on sm61: max(32, 32) KiB
        Good(_matmul('triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, num_stages=3, num_warps=8)')),
        Good(_matmul(_BIG), target="sm90"),
        Good(_matmul(_SMALL)),
        Good("import triton\n\n@triton.jit\ndef k(x_ptr, BLOCK: tl.constexpr):\n    pass\n"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return True

    def visit_FunctionDef(self, node: cst.FunctionDef, ctx) -> None:
        if not node.decorators or not tm.is_triton_kernel(node, ctx.qualname):
            return
        module = ctx.ancestors[0] if ctx.ancestors else None
        if not isinstance(module, cst.Module):
            return
        launches = ctx.scanned.derived("triton launch sites", module, lambda: tm.LaunchSites(module))
        kernel = tm.read_kernel(node, module, ctx.qualname, launches=launches)
        limit = self.target.smem_per_block_optin
        fits = [c for c in kernel.configs if (e := tm.estimate_smem(kernel, c, self.target)) is not None and e.nbytes <= limit]
        for config in kernel.configs:
            estimate = tm.estimate_smem(kernel, config, self.target)
            if estimate is None or estimate.nbytes <= limit:
                continue
            pipelining = "pipelined" if self.target.triton_pipelining else "no pipelining below 8.0"
            message = (
                f"`{kernel.name}` config {config.describe()} needs about {_kib(estimate.nbytes)} of shared memory on "
                f"{self.target.name} ({estimate.detail}; {pipelining}), above the {_kib(limit)} per-block limit: the "
                "launch fails with OutOfResources"
            )
            ctx.report(config.node or node.name, message, self._fix(kernel, config, fits, limit))

    def _fix(self, kernel: tm.Kernel, config: tm.LaunchConfig, fits: list, limit: int) -> PendingFix | None:
        if config.node is None:
            return None
        inline = kernel.configs_list_node is not None and any(
            isinstance(d.decorator, cst.Call) and any(a.value is kernel.configs_list_node for a in d.decorator.args)
            for d in kernel.node.decorators
        )
        if inline and kernel.configs_complete and fits:
            listed = kernel.configs_list_node
            kept = [e for e in listed.elements if e.value is not config.node]
            text = cst.Module([]).code_for_node(listed.with_changes(elements=kept))
            return PendingFix([(listed, text)], FixSafety.SAFE, "drop the config: other configs in the list fit")
        if self.target.triton_pipelining:
            for stages in range(config.num_stages - 1, 0, -1):
                estimate = tm.estimate_smem(kernel, replace(config, num_stages=stages), self.target)
                if estimate is not None and estimate.nbytes <= limit:
                    return PendingFix(self._set_stages(config.node, stages), FixSafety.SAFE,
                                      f"lower num_stages to {stages}")
        return self._shrink_blocks(kernel, config, limit)

    @staticmethod
    def _set_stages(call: cst.Call, stages: int) -> list:
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == "num_stages":
                return [(arg.value, str(stages))]
        last = call.args[-1]
        return [(last, f"{cst.Module([]).code_for_node(last.with_changes(comma=cst.MaybeSentinel.DEFAULT))}, num_stages={stages}")]

    def _shrink_blocks(self, kernel: tm.Kernel, config: tm.LaunchConfig, limit: int) -> PendingFix | None:
        if config.dict_node is None:
            return None
        values = dict(config.constexprs)
        literal = {
            e.key.evaluated_value: e.value for e in config.dict_node.elements
            if isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString) and isinstance(e.value, cst.Integer)
        }
        changed: set[str] = set()
        while True:
            estimate = tm.estimate_smem(kernel, replace(config, constexprs=values), self.target)
            if estimate is None:
                return None
            if estimate.nbytes <= limit:
                break
            shapes = [t.shape or () for t in (estimate.dot.a, estimate.dot.b)]
            uses = {d: sum(d in s for s in shapes) for s in shapes for d in s if isinstance(d, str)}
            candidates = [d for d in uses if d in literal and (values.get(d) or 0) // 2 >= _MIN_BLOCK]
            if not candidates:
                return None
            # the dimension both operands share (K) first: halving it halves both tiles
            largest = max(candidates, key=lambda d: (values[d] * uses[d], d))
            values[largest] //= 2
            changed.add(largest)
        edits = [(literal[d], str(values[d])) for d in sorted(changed)]
        what = ", ".join(f"{d}={values[d]}" for d in sorted(changed))
        return PendingFix(edits, FixSafety.UNSAFE, f"shrink {what} (check the kernel allows smaller blocks)")
