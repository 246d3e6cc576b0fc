"""The precision policy in rlcompat/knowledge/data/precision.toml: which dtype a role (training weights, autocast, rollout) uses on a
target, and why. Dtype rules ask here instead of deciding per rule, so their fixes agree with each other."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from rlcompat.knowledge import files
from rlcompat.findings import FixSafety

ROLES = ("weights", "autocast", "rollout")
ROLE_LABELS = {
    "weights": "training weights and optimizer state",
    "autocast": "mixed-precision compute (autocast, trainer flags)",
    "rollout": "inference and rollout",
}


@dataclass(frozen=True)
class Choice:
    target_class: str
    role: str
    dtype: str  # float32 | float16 | bfloat16
    why: str
    sources: tuple[str, ...]


@lru_cache(maxsize=1)
def policy_data() -> dict:
    return files.load("precision.toml")


def target_class(target) -> str:
    for name, c in policy_data()["classes"].items():
        if c["min_cc"] <= target.cc <= c["max_cc"]:
            return name
    raise KeyError(f"no precision class covers {target.name}")


def choice(target, role: str) -> Choice:
    if role not in ROLES:
        raise KeyError(f"unknown precision role {role!r}; one of {', '.join(ROLES)}")
    name = target_class(target)
    entry = policy_data()["policy"][name][role]
    return Choice(name, role, entry["dtype"], entry["why"], tuple(entry["sources"]))


def dtype_for(target, role: str) -> str:
    """`float32`, `float16` or `bfloat16`: what `role` uses on `target`."""
    return choice(target, role).dtype


def fp16_overflow_models() -> dict[str, dict]:
    """model_type -> {models, refused_by_vllm, sources}: checkpoints known to overflow in fp16."""
    return policy_data()["fp16_overflow"]


def refuses_fp16(model_name: str | None) -> bool:
    """True when `model_name` belongs to a model type vLLM refuses to run in float16."""
    low = (model_name or "").lower()
    return any(m["refused_by_vllm"] and any(p in low for p in m["name_patterns"])
               for m in fp16_overflow_models().values())


def fp16_overflow_note(model_name: str | None) -> str:
    """A warning to add when `model_name` (a hub id or path) belongs to a model type known to overflow in fp16."""
    low = (model_name or "").lower()
    for model_type, m in fp16_overflow_models().items():
        if any(p in low for p in m["name_patterns"]):
            refused = "; vLLM refuses float16 for it" if m["refused_by_vllm"] else ""
            return (f" ({m['models']} ({model_type}) is known to overflow in fp16{refused}: "
                    f"prefer float32 [{', '.join(m['sources'])}])")
    return ""


def errors() -> dict[str, dict]:
    return policy_data()["errors"]


# Which role a dtype argument plays, from the call it is passed to and the name it is bound to.
_AUTOCAST_CALLS = frozenset({"autocast", "custom_fwd", "GradScaler"})
_ROLLOUT_CALLS = frozenset({"LLM", "EngineArgs", "AsyncEngineArgs", "AsyncLLMEngine", "LLMEngine", "Engine"})
_AUTOCAST_WORDS = ("autocast", "compute_dtype", "mixed_precision", "amp_dtype")
_ROLLOUT_WORDS = ("rollout", "inference", "generation", "vllm", "sglang")


def role_of_binding(call_name: str = "", name: str = "") -> str:
    """`autocast(dtype=...)`, `bnb_4bit_compute_dtype=`, `mixed_precision=` -> autocast; vLLM's `LLM(dtype=)` ->
    rollout; everything else (`torch_dtype=`, `.to(...)`, `param_dtype=`, a default) -> weights, the conservative
    choice: fp32 weights are always numerically sound."""
    low = name.lower()
    if call_name in _AUTOCAST_CALLS or any(w in low for w in _AUTOCAST_WORDS):
        return "autocast"
    if call_name in _ROLLOUT_CALLS or any(w in low for w in _ROLLOUT_WORDS):
        return "rollout"
    return "weights"


def markdown() -> str:
    """docs/precision.md's policy table (the rest of that page is written by hand below a marker)."""
    from rlcompat.knowledge.targets import sources

    data = policy_data()
    table = sources()
    out = ["| target | " + " | ".join(ROLE_LABELS[r] for r in ROLES) + " |", "|---|---|---|---|"]
    cited: set[str] = set()
    for name, c in data["classes"].items():
        cells = []
        for role in ROLES:
            e = data["policy"][name][role]
            cited.update(e["sources"])
            tags = "".join(f"[{s}]" for s in e["sources"])
            cells.append(f"**{e['dtype']}**: {e['why']} {tags}")
        out.append(f"| {c['label']} | " + " | ".join(cells) + " |")
    out += ["", "Model types known to overflow in fp16 (rollout fixes on sm70/sm75 name them in the message; for "
            "those vLLM refuses in fp16 they write float32):", "",
            "| model_type | models | vLLM refuses float16 | sources |", "|---|---|---|---|"]
    for model_type, m in data["fp16_overflow"].items():
        cited.update(m["sources"])
        out.append(f"| `{model_type}` | {m['models']} | {'yes' if m['refused_by_vllm'] else 'no'} | "
                   + "".join(f"[{s}]" for s in m["sources"]) + " |")
    out += ["", "Sources:", ""]
    out += [f"- [{s}] {table[s]}" for s in sorted(cited, key=lambda s: int(s[1:]))]
    return "\n".join(out) + "\n"


START, END = "<!-- precision-policy:start -->", "<!-- precision-policy:end -->"


def refresh(page_text: str) -> str:
    """The page with the text between the policy markers regenerated."""
    head, _, rest = page_text.partition(START)
    _, _, tail = rest.partition(END)
    return f"{head}{START}\n{markdown()}{END}{tail}"


if __name__ == "__main__":
    import sys
    from pathlib import Path

    page = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/precision.md")
    page.write_text(refresh(page.read_text("utf-8")), "utf-8")


# Framework-knowledge rows (rlcompat/knowledge/data/frameworks/) name a setting's role as weights, compute or inference.
_KNOWLEDGE_ROLES = {"weights": "weights", "compute": "autocast", "inference": "rollout"}
_SHORT_NAMES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}


def knowledge_choice(role: str, target) -> tuple[str, FixSafety]:
    """("fp32" | "fp16" | "bf16", the safety of moving a bf16 setting there) for a framework-knowledge role: a
    move to fp32 keeps training numerically sound; one to fp16 narrows the range (unsafe)."""
    dtype = dtype_for(target, _KNOWLEDGE_ROLES[role])
    return _SHORT_NAMES[dtype], FixSafety.UNSAFE if dtype == "float16" else FixSafety.SAFE


def loader_default_since() -> str:
    """The transformers release from which `from_pretrained` without a dtype loads the checkpoint's dtype."""
    return policy_data()["loader_default"]["since"]
