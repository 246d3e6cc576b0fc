"""Compile TRL's own Triton kernels (`trl/kernels/`) for old GPU targets, as TRL launches them.

    python bench/trl_kernel_probes.py [--trl-src DIR] [--targets 61,70,75,80] [--dtypes fp32,fp16,bf16] [--markdown]

Needs `triton` (not an rlcompat dependency) but no GPU, and neither torch nor TRL's dependencies: the kernels are
read from TRL's source at run time (an installed `trl`, or `--trl-src` pointing at an unpacked sdist or the `trl`
package directory). Only the `@triton.jit` functions (TRL also wraps `triton.jit` in a local `_jit` decorator) and
the module's int constants are taken; they are written to a temporary module so Triton can read their source, and
nothing else of TRL is executed. Per kernel x launch variant x dtype x target it prints `ok` with the compiled shared
memory against the target's per-block limit (rlcompat/knowledge/data/targets.toml), or the compiler's error.

The launch table below says how TRL 1.16.0 calls each kernel: the dtype of each pointer, the constexpr flags and
which tensor dtypes reach the kernel. docs/triton.md ("TRL's kernels on old GPUs") has the results and the sources.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib.util
import itertools
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from quiet_stdout import quiet_stdout  # this folder is first on sys.path when a script runs

_REPO = Path(__file__).resolve().parent.parent


def _import_targets():
    """rlcompat.knowledge.targets from this checkout, also in a scratch venv where rlcompat is not installed."""
    sys.path.insert(0, str(_REPO))
    if importlib.util.find_spec("rlcompat.rules") is None:  # not installed: rules/ is rlcompat.rules
        spec = importlib.util.spec_from_file_location("rlcompat.rules", _REPO / "rules" / "__init__.py",
                                                      submodule_search_locations=[str(_REPO / "rules")])
        sys.modules["rlcompat.rules"] = module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    from rlcompat.knowledge.targets import target_for_capability

    return target_for_capability

# `T` stands for the dtype under test (the logits or the projection tile TRL hands over).
T = "T"


@dataclass(frozen=True)
class Launch:
    """How TRL launches one kernel: pointer types by parameter name (default *fp32), dtypes it can get, variants."""

    file: str
    kernel: str
    pointers: dict
    dtypes: tuple = ("fp32", "fp16", "bf16")
    variants: tuple = ({},)
    ints64: tuple = ()  # int parameters TRL passes values >= 2**31 for
    constants: dict = field(default_factory=dict)  # non-flag constexprs (BLOCK_SIZE comes from the module)


# TRL 1.16.0. logprob_entropy: logits of any of fp16/bf16/fp32 (trl/trainer/utils.py:515 `_supports_trl_loss_kernel`),
# index int32/int64 (:524), row_mask bool/int (:532); without a mask the index pointer stands in
# (trl/kernels/logprob_entropy.py:163). n_cols is a constexpr: the vocabulary (151936, Qwen2.5).
# chunked_logprob: the tile is `compute_dtype` (autocast dtype or the hidden states' dtype,
# trl/kernels/chunked_logprob.py:329-347). chunked_divergence: the tiles are always fp32
# (trl/kernels/chunked_divergence.py:418-419, 543-544), so fp16/bf16 never reach its kernels.
_FLAGS_GRADS = ({"HAS_LOGPROB_GRAD": True, "HAS_ENTROPY_GRAD": True},
                {"HAS_LOGPROB_GRAD": True, "HAS_ENTROPY_GRAD": False},
                {"HAS_LOGPROB_GRAD": False, "HAS_ENTROPY_GRAD": True})
LAUNCHES = (
    Launch("logprob_entropy.py", "_forward_kernel",
           {"logits_ptr": T, "index_ptr": "i64", "row_mask_ptr": "mask"},
           variants=({"HAS_MASK": False}, {"HAS_MASK": True}),
           constants={"n_cols": 151936, "TEMPERATURE": 1.0}),
    Launch("logprob_entropy.py", "_backward_kernel",
           {"logits_ptr": T, "grad_logits_ptr": T, "index_ptr": "i64", "row_mask_ptr": "mask"},
           variants=tuple({"HAS_MASK": m, **g} for m, g in zip((True, False, True), _FLAGS_GRADS)),
           constants={"n_cols": 151936, "TEMPERATURE": 1.0}),
    Launch("chunked_logprob.py", "_forward_kernel",
           {"mm_ptr": T, "targets_ptr": "i64"},
           variants=tuple({"HAS_SOFTCAP": s, "HAS_ENTROPY": o, "HAS_LOG_SUM_SQ_PROBS": o, "HAS_MEAN_LOGITS": o,
                           "HAS_IS_TOP1": o} for s, o in ((False, True), (True, True), (False, False)))),
    Launch("chunked_logprob.py", "_backward_kernel",
           {"mm_ptr": T, "targets_ptr": "i64"},
           variants=tuple({"HAS_SOFTCAP": s, **g} for s, g in zip((False, True, False), _FLAGS_GRADS))),
    Launch("chunked_divergence.py", "_stats_kernel", {}, dtypes=("fp32",),
           variants=({"S_HAS_SOFTCAP": False, "T_HAS_SOFTCAP": False}, {"S_HAS_SOFTCAP": True, "T_HAS_SOFTCAP": True})),
    Launch("chunked_divergence.py", "_jsd_kernel", {}, dtypes=("fp32",),
           variants=({"S_HAS_SOFTCAP": False, "T_HAS_SOFTCAP": False}, {"S_HAS_SOFTCAP": True, "T_HAS_SOFTCAP": True})),
    Launch("chunked_divergence.py", "_backward_kernel", {}, dtypes=("fp32",),
           variants=tuple({"MODE": m, "S_HAS_SOFTCAP": s, "T_HAS_SOFTCAP": s}
                          for m, s in ((0, False), (1, False), (2, False), (2, True)))),
)


# ---------------------------------------------------------------------------------------------------------------
# Reading TRL's kernels


def kernels_dir(trl_src: str | None) -> Path:
    if trl_src is None:
        spec = importlib.util.find_spec("trl")  # finds the package without importing it
        if spec is None or not spec.submodule_search_locations:
            raise SystemExit("error: trl is not installed here; pass --trl-src <unpacked trl sdist or trl package dir>")
        root = Path(next(iter(spec.submodule_search_locations)))
    else:
        root = Path(trl_src)
        root = root / "trl" if (root / "trl" / "kernels").is_dir() else root
    if not (root / "kernels").is_dir():
        raise SystemExit(f"error: {root} has no kernels/ directory; pass the unpacked TRL sdist or its trl/ package")
    return root / "kernels"


def trl_version(kernels: Path) -> str:
    pkg_info = kernels.parent.parent / "PKG-INFO"  # an unpacked sdist
    if pkg_info.is_file():
        match = re.search(r"^Version:\s*(\S+)", pkg_info.read_text(), re.M)
        if match:
            return match.group(1)
    try:  # an installed trl: its metadata, without importing it
        from importlib.metadata import version

        return version("trl")
    except Exception:
        return "unknown"


def _jit_wrappers(trees: dict[str, ast.Module]) -> set[str]:
    """Local decorators that call `triton.jit` (TRL's `_jit`), besides `triton.jit` itself."""
    names = set()
    for tree in trees.values():
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and any(
                    isinstance(n, ast.Attribute) and n.attr == "jit" and isinstance(n.value, ast.Name)
                    and n.value.id == "triton" for n in ast.walk(node)):
                names.add(node.name)
    return names


def _is_jit(node: ast.FunctionDef, wrappers: set[str]) -> bool:
    for deco in node.decorator_list:
        deco = deco.func if isinstance(deco, ast.Call) else deco
        if ast.unparse(deco) == "triton.jit" or (isinstance(deco, ast.Name) and deco.id in wrappers):
            return True
    return False


@dataclass
class KernelSource:
    file: str
    module: object  # the temporary module holding the jit functions
    lines: dict  # kernel name -> line of its `def` in TRL's file


def load_kernels(kernels: Path, scratch: Path) -> dict[str, KernelSource]:
    trees = {p.name: ast.parse(p.read_text(), filename=str(p)) for p in sorted(kernels.glob("*.py"))}
    wrappers = _jit_wrappers(trees)
    jit_defs = {name: [n for n in tree.body if isinstance(n, ast.FunctionDef) and _is_jit(n, wrappers)]
                for name, tree in trees.items()}
    loaded = {}
    for name, tree in trees.items():
        own = jit_defs[name]
        if not own:
            continue
        parts = ["from __future__ import annotations", "import triton", "import triton.language as tl"]
        # int constants and jit helpers imported from a sibling (`from .chunked_logprob import _transform`)
        for node in tree.body:
            if _int_constant(node):
                parts.append(ast.unparse(node))
            if isinstance(node, ast.ImportFrom) and node.level == 1 and f"{node.module}.py" in jit_defs:
                wanted = {a.name for a in node.names}
                parts += [_as_triton_jit(d) for d in jit_defs[f"{node.module}.py"] if d.name in wanted]
                siblings = trees[f"{node.module}.py"].body
                parts += [ast.unparse(n) for n in siblings if _int_constant(n) and any(
                    isinstance(t, ast.Name) and t.id in wanted for t in n.targets)]
        parts += [_as_triton_jit(d) for d in own]
        path = scratch / f"trl_{name}"
        path.write_text("\n\n".join(parts) + "\n")
        spec = importlib.util.spec_from_file_location(f"_trl_probe_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        loaded[name] = KernelSource(name, module, {d.name: d.lineno for d in own})
    return loaded


def _int_constant(node: ast.stmt) -> bool:
    return isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and type(node.value.value) is int


def _as_triton_jit(node: ast.FunctionDef) -> str:
    node = ast.FunctionDef(**{**node.__dict__, "decorator_list": [ast.parse("triton.jit", mode="eval").body]})
    return ast.unparse(ast.fix_missing_locations(node))


# ---------------------------------------------------------------------------------------------------------------
# Compiling


def compile_one(jit_fn, launch: Launch, flags: dict, dtype: str, block: int, cc: int) -> tuple[str, int | None]:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    names = list(jit_fn.arg_names)
    constexpr_names = {p.name for p in jit_fn.params if p.is_constexpr}
    constexprs = {"BLOCK_SIZE": block, **launch.constants, **flags}
    missing = constexpr_names - set(constexprs)
    if missing:
        return f"probe error: no value for {sorted(missing)}", None
    signature, attrs = {}, {}
    for i, name in enumerate(names):
        if name in constexprs:
            signature[name] = "constexpr"
        elif name.endswith("_ptr"):
            kind = launch.pointers.get(name, "fp32")
            kind = dtype if kind == T else ("i1" if flags.get("HAS_MASK") else "i64") if kind == "mask" else kind
            signature[name] = f"*{kind}"
            attrs[(i,)] = [["tt.divisibility", 16]]  # torch allocations are 16-byte aligned
        elif name in ("logit_scale", "softcap", "inv_t", "beta") or name.endswith(("_scale", "_softcap")):
            signature[name] = "fp32"
        else:
            signature[name] = "i64" if name in launch.ints64 else "i32"
    try:  # Triton >= 3.3: signature and constexprs by name
        source = ASTSource(fn=jit_fn, signature=signature, constexprs=constexprs, attrs=attrs)
    except TypeError:
        try:  # Triton 3.2: by name, constexprs as `constants`, no divisibility hints
            source = ASTSource(fn=jit_fn, signature=signature, constants=constexprs)
        except TypeError:  # Triton 3.0/3.1: by index
            source = ASTSource(fn=jit_fn, constants={names.index(k): v for k, v in constexprs.items()},
                               signature={i: signature[n] for i, n in enumerate(names) if n not in constexprs})
    try:
        with quiet_stdout():  # Triton prints the whole PTX when ptxas fails
            compiled = triton.compile(source, target=GPUTarget("cuda", cc, 32))
    except Exception as exc:
        text = str(exc)
        match = re.search(r"; error\s*:\s*(.+)", text) or re.search(r"error\s*:\s*(.+)", text)
        return "error: " + (match.group(1).strip() if match else f"{type(exc).__name__}: {text[:120]}"), None
    return "ok", int(compiled.metadata.shared)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trl-src", help="unpacked TRL sdist or its trl/ package dir (default: the installed trl)")
    parser.add_argument("--targets", default="61,70,75,80")
    parser.add_argument("--dtypes", default="fp32,fp16,bf16")
    parser.add_argument("--markdown", action="store_true", help="also print a kernel x dtype x target summary table")
    args = parser.parse_args(argv)
    import triton

    target_for_capability = _import_targets()
    kernels = kernels_dir(args.trl_src)
    targets = [int(c) for c in args.targets.split(",")]
    dtypes = args.dtypes.split(",")
    print(f"trl {trl_version(kernels)} ({kernels}); triton {triton.__version__}", flush=True)
    summary: dict[tuple, list] = {}
    with tempfile.TemporaryDirectory(prefix="trl_kernels_") as scratch:
        loaded = load_kernels(kernels, Path(scratch))
        for launch, cc, dtype in itertools.product(LAUNCHES, targets, dtypes):
            source = loaded.get(launch.file)
            fn = getattr(source.module, launch.kernel, None) if source else None
            label = f"{launch.file}:{source.lines.get(launch.kernel, '?') if source else '?'} {launch.kernel}"
            if fn is None:
                print(f"sm{cc}  {label}: not found in this TRL", flush=True)
                continue
            if dtype not in launch.dtypes:
                summary.setdefault((label, dtype, cc), []).append(("n/a", None))
                continue
            limit = target_for_capability(cc // 10, cc % 10).smem_per_block_optin
            block = getattr(source.module, "_BLOCK_SIZE", 1024)
            for flags in launch.variants:
                verdict, shared = compile_one(fn, launch, flags, dtype, block, cc)
                if shared is not None:
                    over = "  OVER LIMIT: OutOfResources" if shared > limit else ""
                    verdict = f"ok  smem {shared} B / limit {limit} B{over}"
                flag_text = ",".join(f"{k}={int(v)}" for k, v in flags.items()) or "-"
                print(f"sm{cc}  {label:44} {dtype:5} {flag_text:70} {verdict}", flush=True)
                summary.setdefault((label, dtype, cc), []).append((verdict, shared))
    if args.markdown:
        print(f"\n| kernel | dtype | {' | '.join(f'sm{cc}' for cc in targets)} |")
        print(f"|---|---|{'---|' * len(targets)}")
        for label in dict.fromkeys(k[0] for k in summary):
            for dtype in dtypes:
                cells = []
                for cc in targets:
                    results = summary.get((label, dtype, cc), [])
                    errors = [v for v, _ in results if v.startswith(("error", "probe"))]
                    if not results or results[0][0] == "n/a":
                        cells.append("n/a")
                    elif errors:
                        cells.append(f"{errors[0]} ({len(errors)}/{len(results)} variants)")
                    else:
                        cells.append(f"ok, {max(s for _, s in results)} B")
                print(f"| {label} | {dtype} | {' | '.join(cells)} |")
    return 0


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        raise SystemExit(main())
