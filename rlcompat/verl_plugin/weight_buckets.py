"""Weights sent to the hf rollout server in buckets: one flat byte buffer per bucket and where each tensor is in
it. The trainer worker packs (`rollout.py`), the server unpacks views into the buffer it received (`server.py`)."""

from __future__ import annotations

import torch

_ALIGN = 16  # every tensor starts at a multiple of this in the flat buffer, so each can be viewed in its dtype


def pack_bucket(bucket: list[tuple[str, torch.Tensor]]) -> tuple[torch.Tensor, list[tuple[str, str, tuple, int, int]]]:
    """Copy tensors (any dtypes, one device) into one byte buffer; the layout says where each one is."""
    layout, offset = [], 0
    for name, t in bucket:
        nbytes = t.numel() * t.element_size()
        layout.append((name, str(t.dtype).removeprefix("torch."), tuple(t.shape), offset, nbytes))
        offset += -(-nbytes // _ALIGN) * _ALIGN
    flat = torch.empty(offset, dtype=torch.uint8, device=bucket[0][1].device)
    for (name, t), (_, _, _, start, nbytes) in zip(bucket, layout):
        flat[start:start + nbytes].copy_(t.contiguous().reshape(-1).view(torch.uint8))
    return flat, layout


def unpack_bucket(flat: torch.Tensor, layout) -> list[tuple[str, torch.Tensor]]:
    """The named tensors of `pack_bucket`'s buffer, as views into it."""
    return [(name, flat[start:start + nbytes].view(getattr(torch, dtype)).view(shape))
            for name, dtype, shape, start, nbytes in layout]
