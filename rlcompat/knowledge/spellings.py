"""rlcompat/knowledge/data/spellings.toml as questions: which strings spell bf16, fp8, FlashAttention-2/3. The public reader for rules
and for rlcompat verify's guard (which must not import rules' helpers). Loaded once, on first use.

    bf16_replacements()["torch.bfloat16"]     -> ("torch.float32", "torch.float16")
    flash_attention(2).implementations        -> ("flash_attention_2", "paged|flash_attention_2")
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from rlcompat.knowledge import files


@dataclass(frozen=True)
class FlashAttention:
    version: int  # 2 or 3
    fact: str  # the rlcompat/knowledge/data/targets.toml fact saying whether a target runs it
    implementations: tuple[str, ...]  # transformers attn_implementation values selecting it
    names: frozenset[str]  # every lower-case name a setting may give it
    modules: tuple[str, ...]  # importable modules holding its kernels


@lru_cache(maxsize=1)
def _table() -> dict:
    return files.load("spellings.toml")


@lru_cache(maxsize=1)
def bf16_replacements() -> dict[str, tuple[str, str]]:
    """Each bf16 spelling (lower case) -> (its fp32, its fp16) in the same spelling family."""
    return {r["spelling"]: (r["float32"], r["float16"]) for r in _table()["bf16"]["replacements"]}


def bf16_spellings() -> frozenset[str]:
    return frozenset(bf16_replacements())


@lru_cache(maxsize=1)
def half_to_fp32() -> dict[str, str]:
    """Every 16-bit float spelling (fp16 and bf16, lower case) -> its fp32 counterpart in the same family."""
    out = {r["spelling"]: r["float32"] for r in _table()["fp16"]["replacements"]}
    out.update((spelling, fp32) for spelling, (fp32, _) in bf16_replacements().items())
    return out


@lru_cache(maxsize=1)
def _torch_dtype_names() -> dict[str, str]:
    names = {spelling: "bfloat16" for spelling in bf16_spellings()}
    names.update((r["spelling"], "float16") for r in _table()["fp16"]["replacements"])
    names.update((fp32, "float32") for fp32 in half_to_fp32().values())
    return names


def torch_dtype_name(spelling: str) -> str | None:
    """"bf16", "half", "torch.float16", "fp32", ... -> the torch dtype it spells ("bfloat16", "float16", "float32");
    None for anything else."""
    return _torch_dtype_names().get(spelling)


@lru_cache(maxsize=1)
def fp8_names() -> frozenset[str]:
    return frozenset(_table()["fp8"]["names"])


@lru_cache(maxsize=None)
def flash_attention(version: int) -> FlashAttention:
    row = _table()[f"flash_attention_{version}"]
    return FlashAttention(version, f"flash_attn_{version}", tuple(row["implementations"]), frozenset(row["names"]),
                          tuple(row["modules"]))


@lru_cache(maxsize=1)
def flash_attention_backends() -> frozenset[str]:
    """vLLM's FlashAttention-family backend names (lower case; environment variables spell them upper case)."""
    return frozenset(_table()["flash_attention_backends"]["names"])
