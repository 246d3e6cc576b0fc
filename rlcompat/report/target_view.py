"""Printing the target table and one target's profile."""

from __future__ import annotations

import json

from rlcompat.knowledge.precision import ROLES, dtype_for
from rlcompat.knowledge.targets import Target, sources

_COLUMNS = [
    ("bf16", "bf16_native"),
    ("fp16 TC", "fp16_tensor_cores"),
    ("FA2", "flash_attn_2"),
    ("FA3", "flash_attn_3"),
    ("SDPA flash", "sdpa_flash"),
    ("inductor", "inductor"),
    ("smem opt-in", "smem_per_block_optin"),
    ("vLLM", "vllm"),
    ("SGLang", "sglang"),
    ("last CUDA", "last_cuda_toolkit"),
]


def _cell(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def table_text(targets, products=()) -> str:
    header = ["target", "cc", "GPUs", *[c for c, _ in _COLUMNS]]
    rows = [[t.name, t.capability_text, ", ".join(t.gpus[:2]), *[_cell(t.fact(k)) for _, k in _COLUMNS]]
            for t in (*targets, *products)]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    if products:
        # products share a capability row's facts; a separator keeps them from reading as more capabilities
        lines.insert(2 + len(targets), "  ".join("-" * w for w in widths))
        lines.append("")
        lines.append("Products (below the second rule) are a capability's entry plus facts of their own:")
        for p in products:
            base = _base_of(p, targets)
            own = [k for k in p.facts if base is None or k not in base.facts or base.facts[k] != p.facts[k]]
            lines.append(f"  {p.name}: {p.capability_text} plus {', '.join(own) or '-'}; "
                         f"--target {p.aliases[0] if p.aliases else p.name}")
    lines.append("")
    lines.append("`rlcompat targets sm61` shows one target with every fact and its sources.")
    return "\n".join(lines) + "\n"


def profile_text(t: Target) -> str:
    lines = [f"{t.name}: compute capability {t.capability_text} ({t.architecture})", f"GPUs: {', '.join(t.gpus)}",
             f"Also accepted as --target: {', '.join(t.aliases) or '-'}", f"Trains in: {t.training_dtype}",
             _precision_line(t), ""]
    width = max(len(k) for k in t.facts)
    used = []
    for key, fact in t.facts.items():
        note = f"  ({fact.note})" if fact.note else ""
        lines.append(f"  {key.ljust(width)}  {_cell(fact.value)}  [{', '.join(fact.sources)}]{note}")
        used.extend(s for s in fact.sources if s not in used)
    lines += ["", "Sources:"]
    table = sources()
    lines += [f"  [{s}] {table.get(s, '(missing)')}" for s in sorted(used, key=lambda s: int(s[1:]))]
    return "\n".join(lines) + "\n"


def _precision_line(t: Target) -> str:
    return ("Precision policy: " + ", ".join(f"{role} {dtype_for(t, role)}" for role in ROLES)
            + " (docs/precision.md)")


def _as_dict(t: Target) -> dict:
    return {
        "name": t.name,
        "capability": t.capability_text,
        "architecture": t.architecture,
        "gpus": list(t.gpus),
        "aliases": list(t.aliases),
        "training_dtype": t.training_dtype,
        "precision": {role: dtype_for(t, role) for role in ROLES},
        "facts": {k: {"value": f.value, "sources": list(f.sources), "note": f.note} for k, f in t.facts.items()},
    }


def profile_json(t: Target) -> str:
    doc = _as_dict(t)
    doc["sources"] = {s: sources()[s] for f in t.facts.values() for s in f.sources}
    return json.dumps(doc, indent=2) + "\n"


def table_json(targets, products=()) -> str:
    entries = [_as_dict(t) for t in targets]
    for p in products:
        base = _base_of(p, targets)
        entries.append({**_as_dict(p), "product_of": base.name if base else None})
    return json.dumps(entries, indent=2) + "\n"


def _base_of(product: Target, targets) -> Target | None:
    return next((t for t in targets if t.capability == product.capability), None)
