"""A VLLM_ATTENTION_BACKEND request that the run's vLLM replaces on the card: through vLLM 0.9.0 the selector swaps a
requested FLASH_ATTN for XFormers below 8.0 (rlcompat/knowledge/data/vllm.toml `[attention_backend_request]`), so
the variable changes nothing there; vLLM 0.11 keeps the request (frameworks/vllm/0.11.0.toml). Which vLLM runs: an
official vLLM image's tag, else the tree's pin, package or installed release, else a declared requirement that allows
no release after the last one read (`vllm<=0.6.3`, verl 0.1 forks' pin)."""

from __future__ import annotations

from rlcompat.knowledge import frameworks as fk
from rlcompat.knowledge import versions, vllm
from rlcompat.lang.settings import ConfigContext, ConfigView


def replaced(view: ConfigView, ctx: ConfigContext, key: fk.FrameworkKey, value: str | None) -> bool:
    """Whether `value` of vLLM's attention-backend key is a request the run's vLLM replaces on the target."""
    if key.framework.name != "vllm" or key.kind != "attention-backend" or value is None:
        return False
    if not vllm.request_replaced(value, ctx.target.capability):
        return False
    through = vllm.attention_backend_request()["falls_back_through"]
    release = vllm.image_release(view.image) if view.image else None
    identity = ctx.framework("vllm") if ctx.framework is not None else None
    if release is None and identity is not None:
        release = identity.release
    if release is not None:
        return versions.release(release) <= versions.release(through)
    if identity is not None and identity.how == "declared" and identity.spec:
        # every release the requirement allows is one read, or older (no release after `through`: 0.9.0.0.0.0.1 on)
        return versions.allows_between(identity.spec, through + ".0.0.0.1", "9999") is False
    return False
