"""Compare rlcompat's shared-memory estimate with what Triton's own compiler reports, per kernel/config/target.

    python bench/triton_smem.py PATH/TO/verl/utils/kernel/kernels.py [--targets 61,75,80,90] [--dtype bf16]
    python bench/triton_smem.py fixtures/triton/matmul_autotune/input.py --dtype fp16

Needs `triton` (not a dependency of rlcompat) but no GPU: `triton.compile` is given an explicit
`GPUTarget("cuda", cc, 32)`, and `metadata.shared` is the kernel's static + dynamic shared memory. The file is
executed (it has to be, to get the JIT functions), so only run it on code you trust. verl's kernels.py imports
`verl.utils.device`; a stub stands in for it so verl need not be installed.

Arguments are specialised the way Triton's JIT does for a typical launch: pointers 16-byte aligned, sizes and
strides divisible by 16, the innermost (unit) strides equal to 1. Pointer element types: `--dtype` for activations
and weights, int64 for labels, fp32 for the rest (see `pointer_type`).
"""

from __future__ import annotations

import argparse
import os
import importlib.util
import inspect
import re
import sys
import types
from pathlib import Path

import libcst as cst

from rlcompat.analysis import triton_model as tm
from rlcompat.knowledge.targets import target_for_capability

from quiet_stdout import quiet_stdout  # this folder is first on sys.path when a script runs

UNIT_STRIDE = re.compile(r"stride\w*_k$|^stride_d_logits_n$|^s[a-z]k$|^s[bc]n$|^stride_\w*_(?:col|n_inner)$")
DIVISIBLE_INT = re.compile(r"^(stride\w*|num_tokens|hidden_size|vocab_size|vocab_per_split|[MNK]|n_cols|s\w+)$")


def pointer_type(kernel: str, name: str, dtype: str) -> str:
    if "label" in name or "target" in name or "index" in name:
        return "*i64"
    if name in ("hidden_ptr", "weight_ptr", "a_ptr", "b_ptr", "c_ptr", "x_ptr", "y_ptr", "logits_ptr", "input_ptr",
                "output_ptr", "w_ptr"):
        return f"*{dtype}"
    if name in ("d_hidden_ptr", "d_weight_ptr") and not kernel.endswith("_MN"):
        return f"*{dtype}"  # the fused MN backward accumulates with atomics into fp32 gradients
    return "*fp32"


def load_module(path: Path):
    stub = types.ModuleType("verl.utils.device")
    stub.get_device_capability = lambda *a: (0, 0)
    stub.get_device_name = lambda: "cuda"
    stub.is_cuda_available = False
    stub.get_torch_device = lambda: None
    for name in ("verl", "verl.utils"):
        sys.modules.setdefault(name, types.ModuleType(name))
    sys.modules.setdefault("verl.utils.device", stub)
    spec = importlib.util.spec_from_file_location(f"_bench_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compile_shared(jit_fn, kernel: tm.Kernel, config: tm.LaunchConfig, cc: int, dtype: str) -> int | str:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    params = list(inspect.signature(jit_fn.fn).parameters.values())
    constexprs = {k: v for k, v in config.constexprs.items() if v is not None}
    for p in params:
        if p.name in kernel.constexpr_params and p.name not in constexprs:
            constexprs[p.name] = False if p.name.startswith("USE_") else p.default
    signature, attrs = {}, {}
    for i, p in enumerate(params):
        name, annotation = p.name, str(p.annotation)
        if name in constexprs:
            signature[name] = "constexpr"
        elif name.endswith("_ptr"):
            signature[name] = pointer_type(kernel.name, name, dtype)
            attrs[(i,)] = [["tt.divisibility", 16]]
        elif "float" in annotation:
            signature[name] = "fp32"
        elif UNIT_STRIDE.search(name):
            signature[name] = "constexpr"
            constexprs[name] = 1
        else:
            signature[name] = "i64" if "int64" in annotation else "i32"
            if DIVISIBLE_INT.match(name):
                attrs[(i,)] = [["tt.divisibility", 16]]
    source = ASTSource(fn=jit_fn, signature=signature, constexprs=constexprs, attrs=attrs)
    try:
        with quiet_stdout():  # Triton dumps the whole PTX to stdout when ptxas fails
            compiled = triton.compile(source, target=GPUTarget("cuda", cc, 32),
                                      options={"num_warps": config.num_warps, "num_stages": config.num_stages})
    except Exception as exc:  # ptxas and MLIR errors: report the line that says what failed
        text = str(exc)
        match = re.search(r"; error\s*:\s*(.+)", text) or re.search(r"error\s*:\s*(.+)", text)
        return "error: " + (match.group(1).strip() if match else type(exc).__name__)[:70]
    return int(compiled.metadata.shared)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--targets", default="61,75,80,90")
    parser.add_argument("--dtype", default="bf16", help="element type of activation/weight pointers")
    args = parser.parse_args(argv)
    import triton

    module = load_module(args.path)
    tree = cst.parse_module(args.path.read_text())
    qualname = tm.module_qualname(tree)
    kernels = tm.kernels_in_module(tree, qualname)
    ccs = [int(c) for c in args.targets.split(",")]
    print(f"triton {triton.__version__}; {args.path}; pointer dtype {args.dtype}")
    print("| kernel | config | target | nominal | estimate | compiled | error |")
    print("|---|---|---|---:|---:|---:|---:|")
    errors = []
    for kernel in kernels:
        jit_fn = getattr(module, kernel.name)
        jit_fn = getattr(jit_fn, "fn", jit_fn)  # an Autotuner/Heuristics wraps the JITFunction
        while not hasattr(jit_fn, "arg_names") and hasattr(jit_fn, "fn"):
            jit_fn = jit_fn.fn
        for config in kernel.configs:
            nominal = tm.nominal_smem(kernel, config)
            for cc in ccs:
                target = target_for_capability(cc // 10, cc % 10)
                estimate = tm.estimate_smem(kernel, config, target)
                compiled = compile_shared(jit_fn, kernel, config, cc, args.dtype)
                est = estimate.nbytes if estimate else None
                err = ""
                if isinstance(compiled, int) and est is not None and compiled:
                    errors.append((est - compiled) / compiled)
                    err = f"{100 * (est - compiled) / compiled:+.0f}%"
                sizes = ", ".join(f"{k}={v}" for k, v in config.constexprs.items() if not k.startswith("USE_"))
                print(f"| {kernel.name} | {sizes}, s{config.num_stages} w{config.num_warps} | sm{cc} | "
                      f"{nominal if nominal is not None else '-'} | {est if est is not None else '-'} | {compiled} | {err} |",
                      flush=True)
    if errors:
        mean_abs = sum(abs(e) for e in errors) / len(errors)
        print(f"\n{len(errors)} compiled kernels with an estimate: mean |error| {100 * mean_abs:.1f}%, "
              f"worst {100 * max(errors, key=abs):+.0f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
