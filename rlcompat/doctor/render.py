"""Doctor output. text and json are the doctor's own (they show the machine and the stack as well as the
findings); sarif and github are the shared report formats of `scan`. The JSON schema is in docs/doctor.md."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from rlcompat.knowledge import hf_rollout
from rlcompat.release import __version__
from rlcompat.doctor.memory import CUDA_CONTEXT, GIB, USABLE, Estimate
from rlcompat.doctor.snapshot import Environment
from rlcompat.findings import Finding
from rlcompat.knowledge.targets import Target

SCHEMA_VERSION = 1
# Shown as "not installed" in text output when absent; every watched distribution appears in JSON when present.
EXPECTED = ("torch", "triton", "transformers", "verl", "flash-attn", "vllm", "sglang", "liger-kernel")


@dataclass
class MemoryCheck:
    estimate: Estimate
    changes: list[str]  # what the suggested plan changed, in words
    overrides: list[str]  # verl command-line overrides for the suggested plan
    gpus_needed: int | None  # when it does not fit on one: the fewest GPUs of this size that would do
    card_from: str  # "GPU 0 (NVIDIA ...)", "--gpu-memory" or the known memory of the target's card
    overrides_from: str = ""  # the verl knowledge the keys come from ("verl 0.9.1 knowledge (rlcompat/knowledge/data/verl/0.9.1.toml)")
    overrides_problem: str = ""  # why no key is named (verl not installed here)
    unnamed: list[str] = field(default_factory=list)  # settings the installed verl's knowledge has no key for


@dataclass
class RolloutAdvice:
    """What rolls out on the target for the installed verl: rlcompat's hf rollout where no engine verl registers runs
    there, and a vllm-pascal build where that release rolls out with one."""

    installed: bool  # its `verl.plugins` entry point is installed
    override: str  # "actor_rollout_ref.rollout.name=hf": RLC401's fix
    registered: tuple[str, ...]  # the engines verl registers
    text: str
    vllm_pascal: str | None = None  # the community build's words (rlcompat/knowledge/vllm_pascal.py), or None


@dataclass
class DoctorResult:
    env: Environment
    target: Target | None
    target_from: str  # "--target", "pyproject.toml", "auto (GPU 0)"
    findings: list[Finding] = field(default_factory=list)
    memory: MemoryCheck | None = None
    memory_problem: str | None = None  # why the memory check could not run
    notes: list[str] = field(default_factory=list)
    rollout: RolloutAdvice | None = None

    @property
    def failed(self) -> bool:
        return bool(self.findings) or (self.memory is not None and self.memory.estimate.fits is False)


def _gib(n: int | None) -> str:
    return "?" if n is None else f"{n / GIB:.1f} GiB"


# --- text -------------------------------------------------------------------------------------------------------


def text(result: DoctorResult) -> str:
    env, lines = result.env, []
    lines.append("Machine")
    if env.gpus:
        for g in env.gpus:
            lines.append(f"  GPU {g.index}  {g.name}  capability {g.capability_text}  {_gib(g.memory_total)}  {g.uuid}")
        hidden = env.all_gpus - len(env.gpus)
        extra = f"; {hidden} more hidden by CUDA_VISIBLE_DEVICES" if hidden else ""
        lines.append(f"  driver {env.driver_version}, CUDA driver API {env.cuda_driver_version or '?'}{extra}")
    else:
        lines.append(f"  no GPU: {env.gpu_problem}")
    lines += [f"  note: {n}" for n in result.notes]
    lines.append(f"Stack: Python {env.python}")
    width = max(len(n) for n in (*EXPECTED, *env.packages, "nvcc"))
    for name, pkg in sorted(env.packages.items()):
        extra = _torch_text(env) if name == "torch" else ""
        extra += "".join(_patch_text(p) for p in env.installed_patches if p.dist == name)
        lines.append(f"  {name:<{width}}  {pkg.version}{extra}")
    lines.append(f"  {'nvcc':<{width}}  {env.nvcc} ({env.nvcc_path})" if env.nvcc else f"  {'nvcc':<{width}}  not found")
    missing = [n for n in EXPECTED if n not in env.packages]
    if missing:
        lines.append(f"  not installed: {', '.join(missing)}")
    t = result.target
    lines.append(f"Checked for {t.describe()}, from {result.target_from}")
    lines.append("")
    for f in result.findings:
        lines += _finding_text(f)
    # hf not installed: RLC513 says it, with the remedy; a vllm-pascal build is said only here
    if result.rollout is not None and (result.rollout.installed or result.rollout.vllm_pascal):
        lines += [f"Rollout: {result.rollout.text}", ""]
    if result.memory is not None:
        lines += _memory_text(result.memory)
    elif result.memory_problem:
        lines += [f"Memory: not estimated: {result.memory_problem}", ""]
    lines.append(_summary(result))
    return "\n".join(lines) + "\n"


def _patch_text(p) -> str:
    """`rlcompat fix --installed`'s patch of a distribution, after its version in the stack list."""
    files = len(p.patched) + len(p.unpatched) + len(p.edited)
    count = f", {files} file{'s' if files != 1 else ''}" if files else ""
    see = "" if p.state == "applied" else ", see RLC516"
    return f"  (rlcompat's patch of {p.patched_version} for {p.target}{count}: {p.state}{see})"


def _torch_text(env: Environment) -> str:
    tb = env.torch
    if tb is None:
        return ""
    if tb.problem and tb.arches_from != "table":
        return f"  (could not be asked: {tb.problem})"
    if tb.hip:
        return f"  ROCm {tb.hip} build"
    if tb.cuda is None:
        return "  CPU-only build"
    how = f"; inferred from the version, torch could not be asked: {tb.problem}" if tb.arches_from == "table" else ""
    arches = " ".join(tb.arches) if tb.arches else "unknown"
    return f"  CUDA {tb.cuda}, kernels for {arches}{how}"


def _finding_text(f: Finding) -> list[str]:
    out = [f"{f.code} {f.name} ({f.severity})", f"  {getattr(f, 'problem', '') or f.message}"]
    if getattr(f, "error_text", ""):
        out.append(f"  you would see: {f.error_text}")
    if getattr(f, "remedy", ""):
        out.append(f"  what to do: {f.remedy}")
    out.append(f"  installed at: {f.path}" if f.path.endswith("METADATA") else f"  about: {f.path}")
    return out + [""]


def _memory_text(m: MemoryCheck) -> list[str]:
    e = m.estimate
    lines = [f"Memory: {e.algo.upper()} with a {e.shape.params / 1e9:.2f}B-parameter model (shape of {e.shape.name}), "
             f"{e.dtype}, {e.gpus} GPU(s), {e.seq_len} tokens per sequence, {e.rollout} rollout; per GPU:"]
    width = max(len(k) for k in e.parts)
    lines += [f"  {k:<{width}}  {v / GIB:6.2f} GiB" for k, v in e.parts.items()]
    lines.append("  phases (with CUDA context): " + ", ".join(f"{k} {v / GIB:.1f}" for k, v in e.phases.items()) + " GiB")
    card = f"{_gib(e.budget)} usable ({USABLE:.0%} of {_gib(e.card_bytes)}, {m.card_from})"
    if e.fits is None:
        lines.append(f"  peak {_gib(e.peak)} with verl's defaults; pass --gpu-memory to compare it with the card")
    elif e.fits:
        how = f" after: {'; '.join(m.changes)}" if m.changes else " with verl's defaults"
        lines.append(f"  peak {_gib(e.peak)} of {card}: fits{how}")
    else:
        lines.append(f"  peak {_gib(e.peak)} of {card}: does not fit even after: {'; '.join(m.changes) or 'nothing to change'}")
        lines.append(f"  it fits on {m.gpus_needed} such GPUs (trainer.n_gpus_per_node={m.gpus_needed}, FSDP shards the states)"
                     if m.gpus_needed else _fits_on_no_count(e))
    if e.rollout == "hf":
        lines.append(f"  rollout 'hf' = generation with transformers (verl 0.9.1 registers it only with rlcompat's plugin, "
                     f"{hf_rollout.INSTALL}; its server holds its own copy of the whole model, counted in the rollout "
                     "phase only: it moves the copy to host memory while the trainer updates)")
    if m.overrides_problem:
        lines.append(f"  verl overrides: not named: {m.overrides_problem}")
        return lines + [""]
    lines.append(f"  verl overrides (keys from {m.overrides_from}):")
    lines += [f"    {o}" for o in m.overrides]
    if m.unnamed:
        lines.append(f"  not named (no key in that knowledge): {', '.join(m.unnamed)}")
    return lines + [""]


def _fits_on_no_count(e: Estimate) -> str:
    copy = e.parts.get("rollout server weights (whole model)", 0)
    if copy + CUDA_CONTEXT > e.budget:  # FSDP shards the trainer's states, never the replica's copy
        return (f"  it fits on no number of such GPUs: the hf rollout's server holds the whole model on each GPU "
                f"({_gib(copy)} in {e.dtype}), more than the card leaves it; use a smaller model or a larger card")
    return "  it does not fit on 64 such GPUs either: use a smaller model or LoRA"


def _summary(result: DoctorResult) -> str:
    errors = sum(1 for f in result.findings if f.severity == "error")
    warnings = len(result.findings) - errors
    where = result.target.describe()
    if not result.findings:
        head = f"All clear: nothing installed here fails on {where}"
    else:
        head = f"Found {len(result.findings)} problem{'s' if len(result.findings) != 1 else ''} ({errors} error{'s' if errors != 1 else ''}, {warnings} warning{'s' if warnings != 1 else ''}) for {where}"
    if result.memory is not None and result.memory.estimate.fits is False:
        head += "; the model does not fit in memory"
    return head + ". `rlcompat rule CODE` explains a rule."


# --- json -------------------------------------------------------------------------------------------------------


def to_dict(result: DoctorResult) -> dict:
    from rlcompat.report.json_format import finding_dict

    env, t = result.env, result.target
    findings = []
    for f in result.findings:
        d = finding_dict(f)
        d.update(problem=getattr(f, "problem", f.message), error_id=getattr(f, "error_id", ""),
                 error_text=getattr(f, "error_text", ""), remedy=getattr(f, "remedy", ""))
        findings.append(d)
    tb = env.torch
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "rlcompat", "version": __version__},
        "command": "doctor",
        "target": None if t is None else {"name": t.name, "capability": t.capability_text,
                                          "architecture": t.architecture, "from": result.target_from},
        "machine": {
            "gpus": [{"index": g.index, "name": g.name, "uuid": g.uuid, "capability": g.capability_text,
                      "memory_bytes": g.memory_total, "driver_version": g.driver_version,
                      "cuda_driver_version": g.cuda_driver_version} for g in env.gpus],
            "gpus_total": env.all_gpus,
            "gpu_problem": env.gpu_problem,
            "notes": result.notes,
        },
        "stack": {
            "python": env.python,
            "packages": {n: {"version": p.version, "metadata_path": p.metadata_path} for n, p in sorted(env.packages.items())},
            "torch": None if tb is None else {"version": tb.version, "cuda": tb.cuda, "hip": tb.hip,
                                              "arch_list": list(tb.arches), "arch_list_from": tb.arches_from,
                                              "problem": tb.problem},
            "nvcc": None if not env.nvcc else {"version": env.nvcc, "path": env.nvcc_path},
            "installed_patches": [{"dist": p.dist, "patched_version": p.patched_version,
                                   "installed_version": p.installed_version, "target": p.target, "state": p.state,
                                   "command": p.command, "patched": list(p.patched), "unpatched": list(p.unpatched),
                                   "edited": list(p.edited), "folder": p.folder} for p in env.installed_patches],
        },
        "summary": {
            "findings": len(result.findings),
            "errors": sum(1 for f in result.findings if f.severity == "error"),
            "warnings": sum(1 for f in result.findings if f.severity != "error"),
            "memory_fits": None if result.memory is None else result.memory.estimate.fits,
        },
        "findings": findings,
        "rollout": None if result.rollout is None else {
            "hf_installed": result.rollout.installed, "override": result.rollout.override,
            "registered": list(result.rollout.registered), "advice": result.rollout.text,
            "vllm_pascal": result.rollout.vllm_pascal},
        "memory": None if result.memory is None else _memory_dict(result.memory),
        "memory_problem": result.memory_problem,
    }


def _memory_dict(m: MemoryCheck) -> dict:
    e = m.estimate
    return {
        "algo": e.algo, "params": e.shape.params, "shape": e.shape.name, "dtype": e.dtype, "gpus": e.gpus,
        "seq_len": e.seq_len, "rollout": e.rollout, "micro_batch": e.plan.micro_batch,
        "card_bytes": e.card_bytes, "card_from": m.card_from, "budget_bytes": e.budget,
        "parts_bytes": dict(e.parts), "phases_bytes": dict(e.phases), "peak_bytes": e.peak, "fits": e.fits,
        "changes": m.changes, "verl_overrides": m.overrides, "verl_overrides_from": m.overrides_from,
        "verl_overrides_problem": m.overrides_problem or None, "verl_settings_unnamed": m.unnamed,
        "gpus_needed": m.gpus_needed,
    }


def json_text(result: DoctorResult) -> str:
    return json.dumps(to_dict(result), indent=2, ensure_ascii=False) + "\n"
