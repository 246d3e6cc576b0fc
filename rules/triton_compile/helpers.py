"""What the Triton and compile rules share."""

from __future__ import annotations

import libcst as cst

from rlcompat.analysis import triton_model as tm


def in_triton_kernel(ctx) -> bool:
    return any(isinstance(a, cst.FunctionDef) and a.decorators and tm.is_triton_kernel(a, ctx.qualname)
               for a in ctx.ancestors)
