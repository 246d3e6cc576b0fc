"""`rlcompat doctor`: the typer command. Registered in rlcompat/cli/app.py; imports nothing heavy at module level."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, List, Optional

import typer


class DoctorFormat(str, Enum):
    text = "text"
    json = "json"
    sarif = "sarif"
    github = "github"


class Algo(str, Enum):
    ppo = "ppo"
    grpo = "grpo"


class Rollout(str, Enum):
    hf = "hf"
    vllm = "vllm"
    sglang = "sglang"


def doctor_command(
    target: Annotated[Optional[str], typer.Option("--target", "-t", help="GPU to check for: auto (the GPUs here, default), sm61, 7.5, P40, T4, ...")] = None,
    output_format: Annotated[DoctorFormat, typer.Option("--output-format", help="text, json, sarif or github.")] = DoctorFormat.text,
    model_params: Annotated[Optional[str], typer.Option("--model-params", help="Estimate PPO/GRPO memory for a model of this size (0.5B, 1.5B, 7B).")] = None,
    algo: Annotated[Algo, typer.Option("--algo", help="ppo (actor + critic + reference) or grpo (no critic).")] = Algo.ppo,
    gpu_memory: Annotated[Optional[str], typer.Option("--gpu-memory", help="Memory of one target GPU (24GiB) when that GPU is not in this machine.")] = None,
    gpus: Annotated[Optional[int], typer.Option("--gpus", min=1, help="GPUs that share the model through FSDP (default: the matching GPUs here, else 1).")] = None,
    seq_len: Annotated[int, typer.Option("--seq-len", min=1, help="Prompt + response tokens per sequence (verl's default 512 + 512).")] = 1024,
    micro_batch: Annotated[int, typer.Option("--micro-batch", min=1, help="Sequences per micro-batch per GPU to start from.")] = 4,
    rollout: Annotated[Optional[Rollout], typer.Option("--rollout", help="Rollout engine (default: vllm or sglang if installed and supported on the target, else hf).")] = None,
    no_reference: Annotated[bool, typer.Option("--no-reference", help="No reference model (no KL loss or KL penalty).")] = False,
    select: Annotated[Optional[List[str]], typer.Option("--select", help="Only these codes or prefixes (RLC5).")] = None,
    ignore: Annotated[Optional[List[str]], typer.Option("--ignore", help="Skip these codes or prefixes.")] = None,
    exit_zero: Annotated[bool, typer.Option("--exit-zero", help="Exit 0 even when problems are found.")] = False,
    config: Annotated[Optional[str], typer.Option("--config", help="A pyproject.toml to read \\[tool.rlcompat] from.")] = None,
) -> None:
    """Check this machine's GPUs and installed stack (torch build, flash-attn, vLLM, SGLang, nvcc, driver, verl)
    against the target GPU; optionally estimate whether PPO/GRPO fits in its memory."""
    from rlcompat.cli.common import EXIT_CLEAN, EXIT_FINDINGS
    from rlcompat.cli.common import emit as _emit
    from rlcompat.cli.common import fail as _fail
    from rlcompat.cli.common import run_settings as _settings
    from rlcompat.doctor import render
    from rlcompat.doctor.checks import run_checks
    from rlcompat.doctor.environment import collect
    from rlcompat.knowledge.targets import TargetError, resolve_target, target_for_capability

    settings = _settings(["."], config, select, ignore, None, False)
    spec = target or settings.target or "auto"
    auto = spec.strip().lower() == "auto"
    env = collect(stack=False) if auto else None  # without a GPU and a target, nothing else is worth reading
    if env is None or env.gpus:
        env = collect()
    try:
        if auto:
            if not env.gpus:
                _no_gpu(env, output_format, render, _emit)
                raise typer.Exit(EXIT_CLEAN)
            lowest = min(env.gpus, key=lambda g: g.capability)
            tgt, target_from = target_for_capability(*lowest.capability), f"GPU {lowest.index} ({lowest.name})"
        else:
            tgt = resolve_target(spec)
            target_from = "--target" if target else f"target in {settings.config_file or 'pyproject.toml'}"
    except TargetError as exc:
        raise _fail(str(exc))

    result = render.DoctorResult(env, tgt, target_from, findings=run_checks(env, tgt, settings), notes=_notes(env),
                                 rollout=_rollout(env, tgt))
    if model_params:
        _memory(result, model_params, algo.value, gpu_memory, gpus, seq_len, micro_batch, rollout, no_reference, _fail,
                None if auto else spec)

    if output_format is DoctorFormat.text:
        _emit(render.text(result))
    elif output_format is DoctorFormat.json:
        _emit(render.json_text(result))
    else:
        from rlcompat.report import Summary
        from rlcompat.report import render as render_report

        _emit(render_report(output_format.value, Summary("doctor", tgt, result.findings, [], 0)))
    if exit_zero:
        raise typer.Exit(EXIT_CLEAN)
    raise typer.Exit(EXIT_FINDINGS if result.failed else EXIT_CLEAN)


def _no_gpu(env, output_format, render, emit) -> None:
    line = (f"rlcompat doctor: no GPU here: {env.gpu_problem}; pass --target (e.g. --target sm61) to check the "
            "installed stack for a card")
    if output_format is DoctorFormat.json:
        emit(render.json_text(render.DoctorResult(env, None, "")))
        typer.echo(line, err=True)
    elif output_format is DoctorFormat.text:
        typer.echo(line)
    else:
        typer.echo(line, err=True)


def _notes(env) -> list[str]:
    from rlcompat.knowledge import versions
    from rlcompat.knowledge.environment import environment_facts

    notes = []
    for rule in environment_facts()["driver"]["last_branch"]:
        old = [g for g in env.gpus if g.capability < versions.capability(rule["below_capability"])]
        if old:
            notes.append(f"driver R{rule['branch']} is the last branch for {old[0].name} (capability "
                         f"{old[0].capability_text}): keep the driver on it (e.g. apt-mark hold the driver packages)")
    return notes


def _rollout(env, tgt):
    """The rollout advice for the installed verl on the target: where no engine it registers runs there, rlcompat's
    hf rollout, installed or installable, and the override that selects it (the same as RLC401's fix); and where
    that verl release rolls out with a published vllm-pascal build on the card, that build (RLC401's words)."""
    from rlcompat.knowledge import hf_rollout
    from rlcompat.doctor.render import RolloutAdvice
    from rlcompat.knowledge.verl_config import knowledge_for
    from rlcompat.knowledge import precision, vllm_pascal

    pkg = env.package("verl")
    knowledge, _ = knowledge_for(pkg.version if pkg else None)
    if knowledge is None:
        return None
    hf = hf_rollout.supports(knowledge) and hf_rollout.needed(knowledge, tgt)
    pascal = (vllm_pascal.advice(knowledge.version, tgt, precision.dtype_for(tgt, "rollout"),
                                 knowledge.setting("rollout-dtype", "actor").key)
              if pkg.version == knowledge.version else None)  # the installed release exactly, not its closest rule set
    if not hf and pascal is None:
        return None
    installed = hf and hf_rollout.plugin_among(env.verl_plugins, True)
    key = knowledge.setting("rollout-name", "actor").key
    engines = ", ".join(knowledge.rollout_engines)
    usable = hf_rollout.usable_engines(knowledge, tgt)
    if hf:
        text = (f"verl {pkg.version} registers no rollout engine that runs on {tgt.name} ({engines}); "
                f"{hf_rollout.advice(knowledge, installed)}")
    elif usable:
        text = f"verl {pkg.version}'s own {' or '.join(usable)} rollout runs on {tgt.name} ({key}={usable[0]})"
    else:
        text = f"verl {pkg.version} registers no rollout engine that runs on {tgt.name} from its makers' releases ({engines})"
    override = hf_rollout.override(key) if hf else f"{key}={usable[0]}" if usable else f"{key}=vllm"
    if pascal is not None:
        text += f"; or roll out with vLLM ({key}=vllm): {pascal}"
    return RolloutAdvice(installed, override, knowledge.rollout_engines, text, pascal)


def _memory(result, model_params, algo, gpu_memory, gpus, seq_len, micro_batch, rollout, no_reference, fail,
            spec) -> None:
    from rlcompat.knowledge.capabilities import runs
    from rlcompat.doctor import memory, verl_keys
    from rlcompat.doctor.render import MemoryCheck
    from rlcompat.knowledge import verl_config
    from rlcompat.knowledge.targets import card_memory, target_for_capability

    env, tgt = result.env, result.target
    try:
        params = memory.parse_params(model_params)
        card = memory.parse_bytes(gpu_memory) if gpu_memory else None
    except memory.MemoryInputError as exc:
        raise fail(str(exc))
    matching = [g for g in env.gpus if target_for_capability(*g.capability) == tgt]
    card_from = "--gpu-memory"
    if card is None and matching:
        smallest = min(matching, key=lambda g: g.memory_total)
        card, card_from = smallest.memory_total, f"GPU {smallest.index} ({smallest.name})"
    known = card_memory(spec, tgt) if card is None and spec else None
    if known is not None:
        card = int(known.gib * memory.GIB)
        card_from = (f"{known.gib:g} GiB of a {known.gpu}, {'the first card of ' + tgt.name if known.assumed else '--target'}"
                     f" [{', '.join(known.sources)}]; --gpu-memory for another card")
    if card is None:
        result.memory_problem = (f"no {tgt.name} GPU here to read its memory and no known memory for "
                                 f"{spec or tgt.name}: pass --gpu-memory (e.g. --gpu-memory 24GiB for a Tesla P40)")
        card_from = "unknown"
    if rollout is None:
        installed = env.packages
        vllm_runs = "vllm" in installed and runs("vllm", tgt, installed["vllm"].version)  # the installed release's minimum
        engine = "vllm" if vllm_runs else "sglang" if "sglang" in installed and tgt.sglang else "hf"
    else:
        engine = rollout.value
    kwargs = dict(algo=algo, dtype=tgt.training_dtype, gpus=gpus or max(1, len(matching)), seq_len=seq_len,
                  rollout=engine, card_bytes=card, plan=memory.Plan(micro_batch=micro_batch), use_ref=not no_reference)
    try:
        est, changes = memory.suggest(params, **kwargs)
    except memory.MemoryInputError as exc:
        raise fail(str(exc))
    needed = memory.gpus_needed(params, **kwargs) if est.fits is False else None
    pkg = env.package("verl")
    knowledge, why = verl_config.knowledge_for(pkg.version if pkg else None)
    named = verl_keys.name(knowledge, why, est.plan.settings(algo, engine), tgt, algo)
    result.memory = MemoryCheck(est, changes, named.overrides, needed, card_from, named.source, named.problem,
                                named.unnamed)
