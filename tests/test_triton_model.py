"""The static Triton kernel model (rlcompat/analysis/triton_model.py), and the issue's acceptance checks on the pinned verl."""

from __future__ import annotations

import functools
from dataclasses import replace
from pathlib import Path

import libcst as cst
import pytest

from rlcompat.analysis import triton_model as tm
from rlcompat.api import scan_source
from rlcompat.config import Options
from rlcompat.knowledge.targets import resolve_target

HEADER = "import triton\nimport triton.language as tl\n"


def _kernels(code: str) -> dict[str, tm.Kernel]:
    module = cst.parse_module(code)
    return {k.name: k for k in tm.kernels_in_module(module, tm.module_qualname(module))}


MATMUL = HEADER + '''
BM = 64


@triton.heuristics({"BLOCK_K": lambda args: 32})
@triton.jit
def mm(a_ptr, b_ptr, c_ptr, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, EVEN: tl.constexpr = 1):
    offs_m = tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + offs_m[:, None] * K + offs_k[None, :])
        b = tl.load(b_ptr + offs_k[:, None] * 128 + offs_n[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + offs_m[:, None] * 128 + offs_n[None, :], acc)


def launch(a, b, c):
    mm[(1,)](a, b, c, a.shape[1], BLOCK_M=BM, BLOCK_N=2 * BM, num_stages=4, num_warps=8)
'''


def test_configs_come_from_launch_sites_heuristics_and_defaults():
    kernel = _kernels(MATMUL)["mm"]
    assert kernel.constexpr_params == ["BLOCK_M", "BLOCK_N", "BLOCK_K", "EVEN"]
    [config] = kernel.configs
    assert config.constexprs == {"BLOCK_K": 32, "EVEN": 1, "BLOCK_M": 64, "BLOCK_N": 128}
    assert (config.num_stages, config.num_warps) == (4, 8)


def test_tiles_reaching_a_dot_are_followed_through_pointer_arithmetic():
    [dot] = _kernels(MATMUL)["mm"].dots
    assert dot.a.shape == ("BLOCK_M", "BLOCK_K") and dot.b.shape == ("BLOCK_K", "BLOCK_N")
    assert dot.a.loaded and dot.a.nbytes == tm.DEFAULT_POINTER_BYTES
    assert dot.loop and dot.loop_is_innermost and dot.a.made_in == dot.loop


def test_estimate_depends_on_pipelining_and_stages():
    kernel = _kernels(MATMUL)["mm"]
    config = kernel.configs[0]  # 64 x 32 and 32 x 128 fp16 tiles, 4 stages
    a, b = 64 * 32 * 2, 32 * 128 * 2
    # below 8.0: no pipelining; the FMA dot stages fp32 copies one after the other
    assert tm.estimate_smem(kernel, config, resolve_target("sm61")).nbytes == max(2 * a, 2 * b)
    assert tm.estimate_smem(kernel, config, resolve_target("sm75")).nbytes == max(2 * a, 2 * b)
    # sm8x keeps num_stages - 1 buffers, sm90 num_stages (measured, docs/triton.md)
    assert tm.estimate_smem(kernel, config, resolve_target("sm86")).nbytes == 3 * (a + b)
    assert tm.estimate_smem(kernel, config, resolve_target("sm90")).nbytes == 4 * (a + b)
    assert tm.estimate_smem(kernel, replace(config, num_stages=2), resolve_target("sm86")).nbytes == a + b
    assert tm.nominal_smem(kernel, config) == 4 * (a + b)


FUSED = HEADER + '''
@triton.autotune(configs=[triton.Config({"BM": 128, "BN": 128, "BK": 32}, num_stages=3, num_warps=8)], key=["K"])
@triton.jit
def fused(h_ptr, w_ptr, out_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    m = tl.arange(0, BM)
    n = tl.arange(0, BN)
    kk = tl.arange(0, BK)
    logits = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        h = tl.load(h_ptr + m[:, None] * K + (k + kk)[None, :])
        w = tl.load(w_ptr + n[:, None] * K + (k + kk)[None, :])
        logits = tl.dot(h, w.T, logits)
    probs = tl.exp(logits - tl.max(logits, axis=1)[:, None])
    for k in range(0, K, BK):
        w = tl.load(w_ptr + n[:, None] * K + (k + kk)[None, :])
        d_h = tl.dot(probs.to(w_ptr.dtype.element_ty), w)
        tl.store(out_ptr + m[:, None] * K + (k + kk)[None, :], d_h)
'''


def test_tile_computed_before_the_loop_is_held_through_it():
    kernel = _kernels(FUSED)["fused"]
    first, second = kernel.dots
    assert first.b.shape == ("BK", "BN")  # w.T
    assert second.a.shape == ("BM", "BN") and not second.a.loaded
    assert second.a.made_in != second.loop  # computed outside the second loop
    assert (second.a.nbytes, second.a.wide_nbytes) == (2, 4)  # cast to the pointer's type after fp32 math
    config = kernel.configs[0]
    # sm75: the fp32 probs tile (64 KiB) stays staged while each fp32 copy of w (16 KiB) is staged
    estimate = tm.estimate_smem(kernel, config, resolve_target("sm75"))
    assert estimate.nbytes == 128 * 128 * 4 + 128 * 32 * 4 and estimate.dot is second
    # sm80: tensor cores take the narrowed tile (32 KiB) and the pipelined w (2 x 8 KiB)
    assert tm.estimate_smem(kernel, config, resolve_target("sm80")).nbytes == 128 * 128 * 2 + 2 * 128 * 32 * 2


def test_configs_in_a_module_level_list_and_unreadable_lists():
    code = HEADER + (
        "CONFIGS = [triton.Config({'B': 64}, num_warps=4), make_config()]\n\n"
        "@triton.autotune(configs=CONFIGS, key=['n'])\n@triton.jit\ndef k(x_ptr, B: tl.constexpr):\n    pass\n"
    )
    kernel = _kernels(code)["k"]
    assert kernel.autotuned and not kernel.configs_complete
    assert [c.constexprs for c in kernel.configs] == [{"B": 64}]
    assert kernel.configs[0].num_stages == tm.DEFAULT_NUM_STAGES


def test_unknown_block_sizes_give_no_estimate():
    code = HEADER + '''
@triton.jit
def k(a_ptr, b_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + r[:, None] * BLOCK + r[None, :])
    tl.dot(a, a)


def launch(a, n):
    k[(1,)](a, a, BLOCK=triton.next_power_of_2(n))
'''
    kernel = _kernels(code)["k"]
    assert kernel.configs[0].constexprs == {"BLOCK": None}
    assert tm.estimate_smem(kernel, kernel.configs[0], resolve_target("sm61")) is None
    assert scan_source(code, resolve_target("sm61"), settings=Options(select=("RLC301",))) == []


# ---------------------------------------------------------------------------------------------------------------
# The pinned verl 0.9.1, as a new user would try it

try:
    import verl  # noqa: F401  (only to find its files; nothing of it runs)

    VERL_DIR = Path(verl.__file__).parent
except ImportError:  # pragma: no cover - verl is in the dev environment
    VERL_DIR = None

needs_verl = pytest.mark.skipif(VERL_DIR is None, reason="verl is not installed")


@functools.lru_cache(maxsize=None)
def _scan(relative: str, target: str, select: str):
    path = VERL_DIR / relative
    return scan_source(path.read_text(), resolve_target(target), path=str(path), settings=Options(select=(select,)))


@needs_verl
def test_verl_kernel_estimates_match_compiled_shared_memory():
    """Estimates against Triton 3.9's compiled figures for sm61/sm75 (bench/triton_smem.py, docs/triton.md)."""
    module = cst.parse_module((VERL_DIR / "utils/kernel/kernels.py").read_text())
    kernels = {k.name: k for k in tm.kernels_in_module(module, tm.module_qualname(module))}
    compiled_below_sm80 = {
        "efficient_entropy_kernel_general_mainloop": 32768,
        "efficient_entropy_backward_kernel_general_mainloop_MN": 81920,
        "efficient_entropy_backward_kernel_d_hidden": 65536,
        "efficient_entropy_backward_kernel_d_weight": 65536,
        "efficient_entropy_backward_kernel_general_d_logits": 32768,
        "efficient_entropy_backward_kernel_general_d_logits_split_N": 32768,
    }
    for name, compiled in compiled_below_sm80.items():
        kernel = kernels[name]
        for target in ("sm61", "sm75"):
            assert tm.estimate_smem(kernel, kernel.configs[0], resolve_target(target)).nbytes == compiled, (name, target)
        assert tm.nominal_smem(kernel, kernel.configs[0]) >= 72 * 1024  # what the naive formula says


@needs_verl
def test_verl_kernels_sm61_atomics_and_only_the_fused_backward_too_big():
    findings = _scan("utils/kernel/kernels.py", "sm61", "RLC3")
    atomics = [f for f in findings if f.code == "RLC302"]
    assert len(atomics) == 6 and all("atomic_add" in f.message for f in atomics)
    smem = {f.message.split("`")[1] for f in findings if f.code == "RLC301"}
    assert "efficient_entropy_backward_kernel_general_mainloop_MN" in smem
    assert not smem & {"efficient_entropy_kernel_general_mainloop", "efficient_entropy_backward_kernel_general_d_logits",
                       "efficient_entropy_backward_kernel_general_d_logits_split_N"}


@needs_verl
def test_verl_kernels_sm75_and_sm90():
    sm75 = _scan("utils/kernel/kernels.py", "sm75", "RLC3")
    assert [(f.code, f.message.split("`")[1]) for f in sm75] == [
        ("RLC301", "efficient_entropy_backward_kernel_general_mainloop_MN")]
    assert _scan("utils/kernel/kernels.py", "sm90", "RLC3") == []


@needs_verl
def test_verl_fsdp_engine_torch_compile():
    sm61 = _scan("workers/engine/fsdp/transformer_impl.py", "sm61", "RLC304")
    assert len(sm61) == 1 and "torch.compile" in sm61[0].message and sm61[0].fix is not None
    assert _scan("workers/engine/fsdp/transformer_impl.py", "sm75", "RLC304") == []
