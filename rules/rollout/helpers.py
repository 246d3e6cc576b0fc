"""What the rollout rules share."""

from __future__ import annotations

from rlcompat.knowledge import vllm
from rlcompat.knowledge.capabilities import last_release_that_runs, min_capability


def unsupported_reason(target) -> str:
    """Why vLLM does not run on `target`, from rlcompat/knowledge/data/capabilities.toml's `vllm` row (its minimum per release): one
    text for RLC401, RLC407 and RLC413. A script names no vLLM release, so the current one is judged."""
    head = f"{min_capability('vllm').by_release()} and {target.name} is {target.capability_text}"
    if last_release_that_runs("vllm", target):
        return f"{head}: a current release has no kernels for it"
    inductor = "" if target.inductor else " and V1 compiles with Inductor, which refuses the card"
    return f"{head}: no vLLM wheel has kernels for it{inductor}"


def unsupported_message(target, instead: str = "generate with transformers") -> str:
    """The reason and what runs instead: where an older release runs on the card (a V100), pinning it."""
    older = last_release_that_runs("vllm", target)
    advice = f"pin vllm<={older}, the last release built for it, or {instead}" if older else instead
    return f"{unsupported_reason(target)}; {advice}"


VLLM_SUBCOMMANDS = ("serve", "bench", "chat", "complete")  # `vllm <subcommand>` runs an engine
VLLM_ENTRYPOINTS = "vllm.entrypoints"  # `python -m vllm.entrypoints.openai.api_server`, `...cli.main serve`


def vllm_command(words: tuple[str, ...]) -> bool:
    """`vllm serve ...`, `python -m vllm.entrypoints.openai.api_server ...` (and `vllm.entrypoints.*`)."""
    for i, w in enumerate(words):
        if w.rsplit("/", 1)[-1] == "vllm" and i + 1 < len(words) and words[i + 1] in VLLM_SUBCOMMANDS:
            return True
        if w == "-m" and i + 1 < len(words) and words[i + 1].startswith(VLLM_ENTRYPOINTS):
            return True
    return False


def vllm_argv_word(words: list[str | None]) -> int | None:
    """In the words of a Python list or tuple (None: not a string literal), the index of the one that makes it a
    command line starting vLLM: `vllm.entrypoints.*` (run with `-m`), or `vllm` before a subcommand. Displays are
    narrowed before they are parsed (lang/pyspeed/narrow.py: elements without a trigger are left out), so the module
    name alone decides, without the `-m` before it."""
    for i, w in enumerate(words):
        if w is None:
            continue
        if w.startswith(VLLM_ENTRYPOINTS):
            return i
        if w.rsplit("/", 1)[-1] == "vllm" and i + 1 < len(words) and words[i + 1] in VLLM_SUBCOMMANDS:
            return i
    return None


def tree_vllm_release(ctx) -> tuple[str | None, str]:
    """The release of the scanned tree's vLLM (its pin, package or the installed one) where one is known, and how a
    message names it ("vLLM 0.8.5 (requirements.txt:3)"); (None, "") otherwise."""
    identity = ctx.framework("vllm") if ctx.framework is not None else None
    if identity is None or identity.release is None:
        return None, ""
    where = f" ({identity.evidence})" if identity.evidence else ""
    return identity.version, f"vLLM {identity.version}{where}"


def command_vllm_release(view, ctx) -> tuple[str | None, str]:
    """The vLLM release that runs a command or reads its environment, and how that is known: the official vLLM image
    its container runs (a Kubernetes container's or compose service's `image:`, a Dockerfile stage's `FROM`) [S216],
    else the tree's vLLM (tree_vllm_release)."""
    from_image = vllm.image_release(view.image) if view.image else None
    if from_image is not None:
        return from_image, f"vLLM {from_image} (the container's image {view.image})"
    return tree_vllm_release(ctx)
