"""What the rollout rules share."""

from __future__ import annotations


def vllm_command(words: tuple[str, ...]) -> bool:
    """`vllm serve ...`, `python -m vllm.entrypoints.openai.api_server ...` (and `vllm.entrypoints.*`)."""
    for i, w in enumerate(words):
        if w.rsplit("/", 1)[-1] == "vllm" and i + 1 < len(words) and words[i + 1] in ("serve", "bench", "chat", "complete"):
            return True
        if w == "-m" and i + 1 < len(words) and words[i + 1].startswith("vllm.entrypoints"):
            return True
    return False
