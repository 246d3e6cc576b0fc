"""Which Triton features compile for which GPU: atomics (every sem/scope) and bf16, per target.

    python bench/triton_probes.py [--targets 61,70,75]

Needs `triton` (any 3.x; not an rlcompat dependency) but no GPU. Prints `ok` or ptxas's error per probe; the
table in docs/triton.md came from this with Triton 3.1.0 and 3.9.0.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


@triton.jit
def atomic_probe(x_ptr, y_ptr, BLOCK: tl.constexpr, SEM: tl.constexpr, SCOPE: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_add(y_ptr + offs, tl.load(x_ptr + offs), sem=SEM, scope=SCOPE)


@triton.jit
def atomic_default_probe(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_add(y_ptr + offs, tl.load(x_ptr + offs))


@triton.jit
def bf16_arith_probe(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, x * x + x)


@triton.jit
def bf16_cast_probe(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs).to(tl.bfloat16))


def compile_for(fn, pointers: tuple[str, str], constants: dict, cc: int) -> str:
    names = list(fn.arg_names)
    try:  # Triton >= 3.2: signature and constexprs by name
        source = ASTSource(fn=fn, signature={**dict(zip(names, pointers)), **{k: "constexpr" for k in constants}},
                           constexprs=constants)
    except TypeError:  # Triton 3.0/3.1: by index, `constants`
        source = ASTSource(fn=fn, signature=dict(enumerate(pointers)),
                           constants={names.index(k): v for k, v in constants.items()})
    sys.stdout.flush()
    saved, devnull = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # Triton prints the whole PTX when ptxas fails
    try:
        triton.compile(source, target=GPUTarget("cuda", cc, 32))
        return "ok"
    except Exception as exc:
        text = str(exc)
        match = re.search(r"; error\s*:\s*(.+)", text) or re.search(r"(Unsupported[^\n]+)", text)
        return match.group(1).strip() if match else f"{type(exc).__name__}"
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default="61,70,75")
    args = parser.parse_args(argv)
    print(f"triton {triton.__version__}")
    probes = [("tl.atomic_add default sem", atomic_default_probe, ("*fp32", "*fp32"), {"BLOCK": 128})]
    for sem in ("relaxed", "acquire", "release", "acq_rel"):
        for scope in ("gpu", "cta", "sys"):
            probes.append((f"tl.atomic_add sem={sem} scope={scope}", atomic_probe, ("*fp32", "*fp32"),
                           {"BLOCK": 128, "SEM": sem, "SCOPE": scope}))
    probes += [("bf16 arithmetic", bf16_arith_probe, ("*bf16", "*bf16"), {"BLOCK": 128}),
               ("fp32 -> bf16 cast", bf16_cast_probe, ("*fp32", "*bf16"), {"BLOCK": 128})]
    for cc in (int(c) for c in args.targets.split(",")):
        for label, fn, pointers, constants in probes:
            print(f"sm{cc}  {label:42} {compile_for(fn, pointers, constants, cc)}", flush=True)
    return 0


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        raise SystemExit(main())
