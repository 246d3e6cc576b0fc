"""GPU targets: the table in rules/targets.toml, and resolving `--target` to one entry."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

from rlcompat._toml import load_toml_text


class TargetError(Exception):
    """A target that cannot be resolved; the message is one line meant for the user."""


@dataclass(frozen=True)
class Fact:
    value: Any
    sources: tuple[str, ...]
    note: str | None = None


@dataclass(frozen=True)
class Target:
    name: str  # "sm61"
    capability: tuple[int, int]  # (6, 1)
    architecture: str
    gpus: tuple[str, ...]
    aliases: tuple[str, ...]
    facts: dict[str, Fact] = field(hash=False, compare=False)

    @property
    def cc(self) -> int:
        """Capability as an integer, 61 for 6.1, for comparisons."""
        return self.capability[0] * 10 + self.capability[1]

    @property
    def capability_text(self) -> str:
        return f"{self.capability[0]}.{self.capability[1]}"

    def fact(self, key: str) -> Any:
        return self.facts[key].value

    def __getattr__(self, key: str) -> Any:
        # target.bf16_native, target.smem_per_block_optin, ... read straight from the table.
        facts = self.__dict__.get("facts")
        if facts is not None and key in facts:
            return facts[key].value
        raise AttributeError(key)

    @property
    def training_dtype(self) -> str:
        """The compute (autocast) dtype: bf16 where native, fp16 on sm70/sm75, fp32 where fp16 is slow or lacks tensor
        cores. Weights stay fp32 below sm80: rules ask rlcompat.precision (rules/precision.toml) for each role."""
        if self.bf16_native:
            return "bfloat16"
        if self.fp16_tensor_cores and not self.fp16_slow:
            return "float16"
        return "float32"

    def describe(self) -> str:
        return f"{self.name} ({self.capability_text}, {self.architecture}: {', '.join(self.gpus[:2])})"


@lru_cache(maxsize=1)
def all_targets() -> tuple[Target, ...]:
    data = load_toml_text(resources.files("rlcompat.rules").joinpath("targets.toml").read_text("utf-8"))
    out = []
    for entry in data["target"]:
        major, minor = (int(p) for p in entry["capability"].split("."))
        facts = {
            key: Fact(value=f["value"], sources=tuple(f["sources"]), note=f.get("note"))
            for key, f in entry["facts"].items()
        }
        out.append(
            Target(
                name=entry["name"],
                capability=(major, minor),
                architecture=entry["architecture"],
                gpus=tuple(entry["gpus"]),
                aliases=tuple(entry["aliases"]),
                facts=facts,
            )
        )
    return tuple(sorted(out, key=lambda t: t.cc))


@lru_cache(maxsize=1)
def products() -> tuple[Target, ...]:
    """Named products (targets.toml `[[product]]`): their capability's entry, renamed, with their facts added."""
    data = load_toml_text(resources.files("rlcompat.rules").joinpath("targets.toml").read_text("utf-8"))
    out = []
    for entry in data.get("product", ()):
        major, minor = (int(p) for p in entry["capability"].split("."))
        base = next(t for t in all_targets() if t.capability == (major, minor))
        extra = {k: Fact(value=f["value"], sources=tuple(f["sources"]), note=f.get("note"))
                 for k, f in entry["facts"].items()}
        out.append(Target(name=entry["name"], capability=base.capability, architecture=base.architecture,
                          gpus=tuple(entry["gpus"]), aliases=tuple(entry["aliases"]), facts={**base.facts, **extra}))
    return tuple(out)


def product_for_gpu_name(name: str, target: Target) -> Target:
    """`auto`: the product entry when the card's NVML name marks one (\"NVIDIA GeForce RTX 4090\"), else `target`."""
    data = load_toml_text(resources.files("rlcompat.rules").joinpath("targets.toml").read_text("utf-8"))
    for entry, product in zip(data.get("product", ()), products()):
        if entry["nvml_name_contains"] in name and product.capability == target.capability:
            return product
    return target


@lru_cache(maxsize=1)
def sources() -> dict[str, str]:
    return load_toml_text(resources.files("rlcompat.rules").joinpath("sources.toml").read_text("utf-8"))["sources"]


def _normalise(spec: str) -> str:
    s = spec.strip().lower()
    s = re.sub(r"^(nvidia|geforce|tesla)[\s_-]+", "", s)
    return re.sub(r"[\s_]+", "-", s)


def _lookup_table() -> dict[str, Target]:
    table: dict[str, Target] = {}
    for t in all_targets():
        table[t.name] = t
        table[t.capability_text] = t
        table[str(t.cc)] = t
        table[f"sm-{t.cc}"] = t
        table[f"compute-{t.cc}"] = t
        for alias in (*t.aliases, *t.gpus):
            table[_normalise(alias)] = t
            table[_normalise(alias).replace("-", "")] = t
    for p in products():  # a product's own names win over the capability entry's aliases
        for alias in (p.name, *p.aliases, *p.gpus):
            table[_normalise(alias)] = p
            table[_normalise(alias).replace("-", "")] = p
    return table


def target_for_capability(major: int, minor: int) -> Target:
    """The table entry for a capability; an unknown minor version falls back to the closest lower one."""
    cc = major * 10 + minor
    exact = [t for t in all_targets() if t.cc == cc]
    if exact:
        return exact[0]
    lower = [t for t in all_targets() if t.cc < cc and t.capability[0] == major]
    if lower:
        return lower[-1]
    raise TargetError(
        f"compute capability {major}.{minor} is not in rlcompat's target table; pass --target with the closest entry (see `rlcompat targets`)"
    )


def resolve_target(spec: str) -> Target:
    """`sm61`, `sm_61`, `6.1`, `61`, `P40`, `tesla-p40`, or `auto` (NVML: the lowest capability among visible GPUs)."""
    if spec.strip().lower() == "auto":
        return lowest_visible_target()
    key = _normalise(spec)
    table = _lookup_table()
    for candidate in (key, key.replace("-", "")):
        if candidate in table:
            return table[candidate]
    close = difflib.get_close_matches(key, list(table), n=3, cutoff=0.6)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    raise TargetError(
        f"unknown target {spec!r}{hint}: use a compute capability like sm61 or 7.5, a GPU name like P40 or T4, or auto; `rlcompat targets` lists them"
    )


def lowest_visible_target(pynvml_module=None, env: dict[str, str] | None = None) -> Target:
    """`--target auto`: the table entry for the lowest capability among the visible GPUs."""
    from rlcompat.nvml import NvmlUnavailable, read_gpus, visible_gpus

    try:
        gpus = read_gpus(pynvml_module)
    except NvmlUnavailable as exc:
        raise TargetError(f"--target auto found no GPU: {exc}; pass --target (e.g. --target sm61 or --target P40)") from exc
    visible = visible_gpus(gpus, env)
    if not visible:
        found = f"{len(gpus)} GPU(s), none visible through CUDA_VISIBLE_DEVICES" if gpus else "no GPU"
        raise TargetError(f"--target auto found {found}; pass --target (e.g. --target sm61 or --target P40)")
    lowest = min(visible, key=lambda g: g.capability)
    return product_for_gpu_name(lowest.name, target_for_capability(*lowest.capability))
