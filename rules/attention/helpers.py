"""What the attention rules share."""

from __future__ import annotations

import libcst as cst

from rlcompat.analysis import pyhelpers as h

# Config class fields that switch FlashAttention-2 on when True (OpenRLHF's `--flash_attn` dest and its spellings).
FLASH_SWITCH_FIELDS = ("flash_attn", "use_flash_attn")


def is_flash_attn_guard(call: cst.Call) -> bool:
    name = h.call_name(call)
    return name.startswith("is_flash_attn") or h.is_capability_guard(call)
