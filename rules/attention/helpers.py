"""What the attention rules share."""

from __future__ import annotations

import libcst as cst

from rlcompat.analysis import pyhelpers as h


def is_flash_attn_guard(call: cst.Call) -> bool:
    name = h.call_name(call)
    return name.startswith("is_flash_attn") or h.is_capability_guard(call)
