"""rlcompat/knowledge/data/trl_paths.toml: code paths of TRL releases that select a kernel or an engine with no config
option in between (its Triton kernels on the model's logits, its asynchronous GRPO trainer's attention and vLLM), and
which Triton release compiles bf16 below compute capability 8.0; for RLC130 and RLC430. Also the configs whose
unset `bf16` means bf16 (RLC111)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from rlcompat.knowledge import files, versions


@dataclass(frozen=True)
class KernelPath:
    releases: tuple[str, str]  # [first, below)
    kernels: tuple[str, ...]
    trainers: frozenset[str]
    sites: dict  # trainer -> where it reaches the kernels (file:line of that release)
    proof: str
    dtype_from: str
    sources: tuple[str, ...]


@dataclass(frozen=True)
class AsyncGrpo:
    releases: tuple[str, str]
    attention: str  # a kinds.toml [attention] value ("" for transformers' default)
    attention_spelling: str  # how the trainer writes it
    generation: str
    file: str
    lines: dict  # "1.14" -> the line of `file` that passes the attention in that minor release
    proof: str
    sources: tuple[str, ...]

    def site(self, release: str) -> str:
        """file:line of the attention keyword in TRL `release`; the first release's line, said so, where the table
        has none for it."""
        minor = ".".join(str(p) for p in versions.release(release)[:2])
        if minor in self.lines:
            return f"{self.file}:{self.lines[minor]}"
        first = min(self.lines, key=versions.release)
        return f"{self.file}:{self.lines[first]} (TRL {first})"


@lru_cache(maxsize=1)
def _table() -> dict:
    return files.load("trl_paths.toml")


def _in(version: str, span) -> bool:
    return versions.version_in(version, span[0], span[1])


@lru_cache(maxsize=1)
def kernel_paths() -> tuple[KernelPath, ...]:
    return tuple(KernelPath(tuple(r["releases"]), tuple(r["kernels"]), frozenset(r["trainers"]), dict(r["sites"]), r["proof"],
                            r["dtype_from"], tuple(r["sources"])) for r in _table()["kernel_path"])


def kernel_path(trl_release: str) -> KernelPath | None:
    """The kernels TRL `trl_release` runs on the model's logits and the trainers that reach them; None for a release
    without any (before 1.14.0) or one not read (newer than the table)."""
    return next((k for k in kernel_paths() if _in(trl_release, k.releases)), None)


@lru_cache(maxsize=1)
def async_grpo_rows() -> tuple[AsyncGrpo, ...]:
    return tuple(AsyncGrpo(tuple(r["releases"]), r["attention"], r.get("attention_spelling", ""), r["generation"],
                           r.get("file", ""), dict(r.get("lines", {})), r["proof"], tuple(r["sources"])) for r in _table()["async_grpo"])


def async_grpo(trl_release: str) -> AsyncGrpo | None:
    return next((a for a in async_grpo_rows() if _in(trl_release, a.releases)), None)


def first_async_grpo_attention() -> AsyncGrpo:
    """The oldest release range whose async GRPO trainer hard-codes an attention (for messages where the release is
    not known)."""
    return next(a for a in async_grpo_rows() if a.attention)


def triton_bf16() -> dict:
    """`[triton_bf16]`: below which Triton release ptxas refuses bf16 below 8.0, from which it compiles, the targets
    measured and the error."""
    return _table()["triton_bf16"]


def triton_fails_bf16(triton_release: str) -> bool | None:
    """True where Triton `triton_release` cannot compile bf16 below 8.0, False where it can, None where not measured."""
    row = triton_bf16()
    if versions.release(triton_release) < versions.release(row["fails_below"]):
        return True
    if versions.release(triton_release) >= versions.release(row["compiles_from"]):
        return False
    return None


def triton_of_torch(torch_release: str) -> str | None:
    """The Triton release a PyTorch release installs, where the table has it."""
    return next((r["triton"] for r in _table()["torch_triton"] if _in(torch_release, r["torch"])), None)


def cli_trainer(words) -> tuple[str, str] | None:
    """(the script name, the trainer it builds) for a command running a TRL training script: `trl grpo ...`,
    `python -m trl.scripts.grpo`, `.../trl/scripts/grpo.py`; None for any other command."""
    trainers = _table()["cli"]["trainers"]
    words = list(words)
    for i, word in enumerate(words):
        name = ""
        if word.rsplit("/", 1)[-1] == "trl" and i + 1 < len(words):
            name = words[i + 1]
        elif word.startswith("trl.scripts."):
            name = word[len("trl.scripts."):]
        elif word.endswith(".py") and "trl/scripts/" in word:
            name = word.rsplit("/", 1)[-1][:-3]
        if name in trainers:
            return name, trainers[name]
    return None


def cli_proof() -> str:
    return _table()["cli"]["proof"]


@lru_cache(maxsize=1)
def bf16_unset_configs() -> frozenset[str]:
    """TRL's configs whose unset `bf16` becomes `not fp16` ([bf16_unset])."""
    return frozenset(_table()["bf16_unset"]["configs"])
