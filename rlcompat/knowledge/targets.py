"""GPU targets: the table in rlcompat/knowledge/data/targets.toml, and resolving `--target` to one entry."""

from __future__ import annotations

import difflib
import re
from dataclasses import MISSING, dataclass, field, fields
from functools import lru_cache
from typing import Any

from rlcompat.knowledge import files
from rlcompat.knowledge.versions import capability, capability_text


class TargetError(Exception):
    """A target that cannot be resolved; the message is one line meant for the user."""


@dataclass(frozen=True)
class Fact:
    value: Any
    sources: tuple[str, ...]
    note: str | None = None


@dataclass(frozen=True)
class Target:
    """One entry of rlcompat/knowledge/data/targets.toml. Every fact is a declared, typed field (`target.bf16_native`); its value's
    sources and note are in `facts` (`target.facts["bf16_native"].sources`), in the table's order."""

    name: str  # "sm61"
    capability: tuple[int, int]  # (6, 1)
    architecture: str
    gpus: tuple[str, ...]
    aliases: tuple[str, ...]
    bf16_native: bool
    fp16_tensor_cores: bool
    fp16_slow: bool
    flash_attn_2: bool
    flash_attn_3: bool
    sdpa_flash: bool
    sdpa_mem_efficient: bool
    inductor: bool
    triton_official: bool
    triton_pipelining: bool
    triton_mma: bool
    triton_atomic_sem: bool
    smem_per_block: int
    smem_per_block_optin: int
    vllm: bool
    vllm_bf16: bool
    sglang: bool
    fp8: bool
    bnb_int8_fast: bool
    unsloth: bool
    last_cuda_toolkit: str
    torch_wheels: str
    nccl_p2p_broken: bool = False  # a product's fact (targets.toml `[[product]]`); false where the table has none
    facts: dict[str, Fact] = field(default_factory=dict, hash=False, compare=False, repr=False)

    @property
    def cc(self) -> int:
        """Capability as an integer, 61 for 6.1, for comparisons."""
        return self.capability[0] * 10 + self.capability[1]

    @property
    def capability_text(self) -> str:
        return capability_text(self.capability)

    def fact(self, key: str) -> Any:
        """A fact by its name (for tables and knowledge files that name facts); an undeclared name raises KeyError."""
        if key not in FACT_NAMES:
            raise KeyError(f"{key!r} is not a target fact (rlcompat.knowledge.targets.FACT_NAMES)")
        return getattr(self, key)

    @property
    def training_dtype(self) -> str:
        """The compute (autocast) dtype: bf16 where native, fp16 on sm70/sm75, fp32 where fp16 is slow or lacks tensor
        cores. Weights stay fp32 below sm80: rules ask rlcompat.knowledge.precision (rlcompat/knowledge/data/precision.toml) for each role."""
        if self.bf16_native:
            return "bfloat16"
        if self.fp16_tensor_cores and not self.fp16_slow:
            return "float16"
        return "float32"

    def describe(self) -> str:
        return f"{self.name} ({self.capability_text}, {self.architecture}: {', '.join(self.gpus[:2])})"


_ENTRY_FIELDS = ("name", "capability", "architecture", "gpus", "aliases", "facts")
# Facts every [[target]] must give; the others (a product's) have a default in Target.
FACT_NAMES: frozenset[str] = frozenset(f.name for f in fields(Target) if f.name not in _ENTRY_FIELDS)
_REQUIRED_FACTS = frozenset(f.name for f in fields(Target) if f.name in FACT_NAMES and f.default is MISSING)
_FACT_TYPES = {f.name: f.type for f in fields(Target) if f.name in FACT_NAMES}


def _facts(entry: dict, where: str) -> dict[str, Fact]:
    out = {}
    for key, f in entry["facts"].items():
        if key not in FACT_NAMES:
            raise TargetError(f"rlcompat/knowledge/data/targets.toml {where}: unknown fact {key!r}; declare it as a field of rlcompat.knowledge.targets.Target")
        expected = {"bool": bool, "int": int, "str": str}[_FACT_TYPES[key]]
        if type(f["value"]) is not expected:
            raise TargetError(f"rlcompat/knowledge/data/targets.toml {where}: {key} = {f['value']!r} is not a {expected.__name__}")
        out[key] = Fact(value=f["value"], sources=tuple(f["sources"]), note=f.get("note"))
    return out


def _target(name: str, capability: tuple[int, int], architecture: str, gpus, aliases, facts: dict[str, Fact]) -> Target:
    missing = _REQUIRED_FACTS - facts.keys()
    if missing:
        raise TargetError(f"rlcompat/knowledge/data/targets.toml {name}: missing fact(s) {', '.join(sorted(missing))}")
    return Target(name=name, capability=capability, architecture=architecture, gpus=tuple(gpus),
                  aliases=tuple(aliases), facts=facts, **{k: f.value for k, f in facts.items()})


@lru_cache(maxsize=1)
def _table() -> dict:
    return files.load("targets.toml")


@lru_cache(maxsize=1)
def all_targets() -> tuple[Target, ...]:
    out = []
    for entry in _table()["target"]:
        out.append(_target(entry["name"], capability(entry["capability"]), entry["architecture"], entry["gpus"], entry["aliases"],
                           _facts(entry, entry["name"])))
    return tuple(sorted(out, key=lambda t: t.cc))


@lru_cache(maxsize=1)
def products() -> tuple[Target, ...]:
    """Named products (targets.toml `[[product]]`): their capability's entry, renamed, with their facts added."""
    out = []
    for entry in _table().get("product", ()):
        base = next(t for t in all_targets() if t.capability == capability(entry["capability"]))
        out.append(_target(entry["name"], base.capability, base.architecture, entry["gpus"], entry["aliases"],
                           {**base.facts, **_facts(entry, entry["name"])}))
    return tuple(out)


def product_for_gpu_name(name: str, target: Target) -> Target:
    """`auto`: the product entry when the card's NVML name marks one (\"NVIDIA GeForce RTX 4090\"), else `target`."""
    for entry, product in zip(_table().get("product", ()), products()):
        if entry["nvml_name_contains"] in name and product.capability == target.capability:
            return product
    return target


@lru_cache(maxsize=1)
def sources() -> dict[str, str]:
    return files.load("sources.toml")["sources"]


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
        f"compute capability {capability_text((major, minor))} is not in rlcompat's target table; pass --target with the closest entry (see `rlcompat targets`)"
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


@dataclass(frozen=True)
class CardMemory:
    gpu: str  # "Tesla P40"
    gib: float
    sources: tuple[str, ...]
    assumed: bool  # True when the spec named a capability and its first listed card was taken


def card_memory(spec: str, target: Target) -> CardMemory | None:
    """The memory of the card `--target spec` means (rlcompat/knowledge/data/targets.toml `[[card_memory]]`): the card it names
    (`P40`), or for a capability (`sm61`, `6.1`) its first listed card; None when that card has no row."""
    rows = {r["gpu"]: r for r in _table().get("card_memory", ())}
    key = _normalise(spec)
    named = [g for g in target.gpus if _normalise(g).replace("-", "") == key.replace("-", "")]  # "tesla-p40", "P40"
    capability = key.replace("-", "").replace("_", "") in (target.name, target.capability_text, str(target.cc),
                                                            f"compute{target.cc}")
    gpu = named[0] if named else (target.gpus[0] if capability and target.gpus else None)
    if gpu is None or gpu not in rows:
        return None
    row = rows[gpu]
    return CardMemory(gpu, float(row["memory_gib"]), tuple(row["sources"]), assumed=not named)

