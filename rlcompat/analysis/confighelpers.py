"""Questions config rules ask again and again: is this value bf16, which dtype replaces it, set-or-add a key,
remove a flag. Nothing here imports a parser, so loading the rule catalog stays cheap."""

from __future__ import annotations

from typing import Callable

from rlcompat.lang.settings import TRUE_WORDS, ConfigContext, ConfigView, Setting, Span
from rlcompat.findings import Edit, FixSafety
from rlcompat.knowledge.spellings import bf16_replacements
from rlcompat.knowledge import verl_layout
from rlcompat.knowledge.verl_config import entry_triggers


def __getattr__(name: str):
    # ENTRY_TRIGGERS: substrings of a verl training command: rules that add missing overrides need one of them (rule
    # `triggers`). Every verl rule set's `[entry_points] triggers` (rlcompat/knowledge/data/verl/<version>.toml):
    # read when a rule first asks, not when a rule module imports this one (it reads every release's knowledge file,
    # about 12 ms, and a scan of one Python file asks for none of them).
    if name == "ENTRY_TRIGGERS":
        return entry_triggers()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def is_bf16(value: str | None) -> bool:
    return value is not None and value.strip().lower() in bf16_replacements()


# Probes that answer yes on pre-Ampere cards by emulation [S3]: a test that calls one picks bf16 by itself
# (axolotl's `elif (cfg.bf16 == "auto" and is_torch_bf16_gpu_available()) or cfg.bf16 is True:`).
_EMULATION_FOOLED_PROBES = frozenset({"is_torch_bf16_gpu_available", "is_torch_bf16_available", "is_bf16_supported"})


def follows_bf16_switch(setting) -> bool:
    """Python under `if self.bf16:` / `elif args.use_bf16:` (the setting's `guards`): a value that switch chose, not a
    selection of its own; the switch is where bf16 is chosen and reported. `torch.bfloat16` in a test (`if x.dtype ==
    torch.bfloat16`) compares a dtype; it is no switch; a test that asks a probe emulation fools decides by itself."""
    if setting.guards & _EMULATION_FOOLED_PROBES:
        return False
    return any("bf16" in g.lower() or ("bfloat16" in g.lower() and g != "bfloat16") for g in setting.guards)


def dtype_replacement(target, value: str, role: str = "weights") -> tuple[str, FixSafety]:
    """What replaces a bf16 spelling for `role` on `target` (the precision policy, rlcompat/knowledge/data/precision.toml), in the
    same spelling family, and whether that is safe: fp32 always is; fp16 is not (a smaller range than bf16)."""
    from rlcompat.knowledge.precision import dtype_for

    fp32, fp16 = bf16_replacements().get(value.strip().lower(), ("float32", "float16"))
    if dtype_for(target, role) == "float16":
        return fp16, FixSafety.UNSAFE
    return fp32, FixSafety.SAFE


def where(setting: Setting) -> str:
    return f" (from {setting.via})" if setting.via else ""


FSDP_ONLY = {"param-dtype", "torch-compile", "model-dtype"}


def training_engine(view: ConfigView, role: str = "actor") -> str:
    """The training engine of a role: `fsdp` (verl's default), `megatron`, `torchtitan`, ..."""
    layout = verl_layout.layout()
    for key in (layout.strategies.get(role, ""), layout.strategies["actor"]):
        setting = view.get(key) if key else None
        if setting is not None and setting.value and "${" not in setting.value and setting.value != "???":
            return "fsdp" if setting.value.startswith("fsdp") else setting.value
    # verl 0.9.1 `model_engine`: dp (FSDP, the default) or megatron, ... (ppo_trainer.yaml:10, :14)
    chosen = view.get("model_engine")
    if chosen is not None and chosen.value and "${" not in chosen.value:
        return layout.engine_named(chosen.value)
    return layout.engine_of_config_name(" ".join(view.command_words)) or "fsdp"


def worker_of(view: ConfigView, knowledge) -> str:
    """The verl worker a run uses: `engine` when `trainer.use_legacy_worker_impl=disable`, else the version's default
    (`legacy` up to 0.7.x, where `auto` picks verl/workers/fsdp_workers.py)."""
    setting = view.get("trainer.use_legacy_worker_impl")
    if setting is not None and setting.value is not None:
        value = setting.value.strip().lower()
        if value == "disable":
            return "engine"
        if value == "enable":
            return "legacy" if knowledge.default_worker == "legacy" else knowledge.default_worker
    return knowledge.default_worker


def rollout_engine(view: ConfigView) -> str | None:
    setting = view.get("actor_rollout_ref.rollout.name")
    return setting.value if setting is not None else None


SGLANG_SERVERS = ("sglang.launch_server", "sglang_router.launch_server")  # `python -m MODULE` starts a server


def sglang_server(words: tuple[str, ...]) -> bool:
    """`python -m sglang.launch_server ...` (and SGLang's router, which starts the same server per worker)."""
    return any(w == "-m" and words[i + 1] in SGLANG_SERVERS for i, w in enumerate(words[:-1]))


def set_or_add(view: ConfigView, ctx: ConfigContext, setting_id: str, is_bad: Callable[[str], bool],
               new_value: Callable[[str], tuple[str | bool, FixSafety]], describe: Callable[[str, str, str], str],
               roles: tuple[str, ...] = ("actor", "ref", "critic")) -> None:
    """The "this key's value is bad -> set it, or add it when absent" skeleton: report a known verl setting whose
    value (set, or left at verl's default) is bad on the target.

    `setting_id` names the rows of rlcompat/knowledge/data/verl/<version>.toml (`[[setting]] id = ...`), one per role; `roles` picks
    the roles checked. Set in the file: the value is rewritten in place. Left at the default in a launch script: the
    override is added. `is_bad(value)` decides, `new_value(value) -> (value, FixSafety)` is the fix (a bool is
    written the Hydra way, True/False), `describe(key, value, origin)` words the finding; `origin` says where the
    value came from. A new config rule over a verl key is these three callables (docs/architecture.md, "Write a
    rule"; rules/triton_compile/fsdp_torch_compile.py is a complete one).
    """
    from rlcompat.analysis.launch_path import set_in_users_config
    from rlcompat.analysis.interpolation import followed_key, select_default
    from rlcompat.analysis.verlengines import critic_trained, runs_sft_trainer, takes_ppo_keys

    reported: set[int] = set()  # a config-group file mounted for several roles: one finding per line
    for known in ctx.verl.by_id(setting_id):
        if known.role not in roles or (known.role == "critic" and not critic_trained(view)):
            continue
        if known.role == "sft" and view.kind == "command" and not runs_sft_trainer(view):
            continue  # the SFT trainer's own keys (`engine.*`, `model.*`): not a PPO command's
        if setting_id in FSDP_ONLY and training_engine(view, known.role) != "fsdp":
            continue
        if known.worker and known.worker != worker_of(view, ctx.verl):
            continue
        setting = view.get(known.key)
        if setting is not None and known.follows_always_set and view.mounts != ("",) and (
                followed_key(setting) == known.follows):
            continue  # verl's own config file: the followed key is always set, its line is the one judged
        if setting is not None:
            setting = select_default(view, setting)  # `${oc.select:KEY,DEFAULT}`: judged by its default
            if setting is None or setting.value is None or not is_bad(setting.value) or setting.key_span.start in reported:
                continue
            value, safety = new_value(setting.value)
            message = describe(key_name(view, setting, known.key) if view.kind == "yaml" else known.key, setting.value,
                               where(setting))
            ctx.report(setting.key_span, message, [setting.rewrite(value)], safety, f"set it to {value}")
            if view.kind == "yaml":
                reported.add(setting.key_span.start)
        elif known.role == "reward":
            continue  # the reward model's engine only runs when it is enabled: never add its settings
        elif not ctx.verl.version_known:
            continue  # a default (and its file:line) is a claim about one release: not this tree's (fork, unknown)
        elif view.kind == "yaml" and known.omitted_in:
            left_out(view, ctx, known, is_bad, new_value, describe)
        elif known.follows and view.get(known.follows) is not None:
            continue  # unset, it takes the value of the key it follows, which the script sets
        elif view.kind == "command" and view.is_verl and view.can_add and is_bad(known.default) and takes_ppo_keys(view):
            if any(view.get(alias) is not None for alias in ctx.verl.dead_aliases_of(known.key)):
                continue  # the dead-key rule renames the user's key to this one: adding it too would duplicate it
            if set_in_users_config(view, ctx, known.key):
                continue  # the config of the user's own that the command names sets it: judged at that line
            value, safety = new_value(known.default)
            value = value if isinstance(value, str) else str(value)  # Hydra spells booleans True/False
            origin = f" (not set here, so {ctx.verl.label} uses its default, {known.proof.split(' (')[0]})"
            message = describe(known.key, known.default, origin)
            ctx.report(view.anchor, message, [view.add(known.add_prefix + known.key, value)], safety,
                       f"add {known.add_prefix}{known.key}={value}")


def left_out(view: ConfigView, ctx: ConfigContext, known, is_bad, new_value, describe) -> None:
    """verl's own config-group file `known.omitted_in` leaves the key out (model/hf_model.yaml's `override_config:
    {}`; engine/fsdp.yaml writes no `mixed_precision` at all): verl's default applies to every run that composes the
    file as written, so the key is reported at the deepest mapping of the file on its path (the root mapping's first
    key where there is none) and added there."""
    if not ctx.path.replace("\\", "/").endswith("trainer/config/" + known.omitted_in) or not is_bad(known.default):
        return
    mount = next((m for m in view.mounts if m and known.key.startswith(m + ".")), None)
    if mount is None:
        return
    path = known.key[len(mount) + 1:]
    parent, _, leaf = path.rpartition(".")
    holder = parent
    while holder and holder not in view.sections:
        holder = holder.rpartition(".")[0]
    span = view.sections.get(holder)
    if span is None:
        return
    value, safety = new_value(known.default)
    value = value if isinstance(value, str) else str(value).lower()  # YAML spells booleans true/false
    missing = path[len(holder) + 1:] if holder else path
    if holder == parent:
        where_, advice = f"{parent} in this file does not set {leaf}", f"add {leaf}: {value} to {parent}"
    else:
        where_, advice = f"this file does not set {missing}", f"add {missing}: {value}" + (f" under {holder}" if holder else "")
    origin = f" ({where_}, so {ctx.verl.label} uses its default, {known.proof.split(' (')[0]})"
    ctx.report(span, describe(known.key, known.default, origin), [view.add(path, value)], safety, advice)


def key_name(view: ConfigView, setting: Setting, key: str) -> str:
    """How a finding in a config-group file names a verl key: its full path, with the file's other mount points
    (`view.full_key`), the path of `key` first: engine/fsdp.yaml's `use_torch_compile` is named as the SFT engine
    trainer's `engine.use_torch_compile` where that is the key found live."""
    paths = view.paths_of(setting)
    if key not in paths or key == paths[0]:
        return view.full_key(setting)
    others = [mount for mount, path in zip(view.mounts, paths) if path != key]
    return f"{key} (this file is also mounted at {', '.join(others)})"


def turn_off(settings: list[Setting], ctx: ConfigContext, flag_message: Callable[[Setting], str],
             true_message: Callable[[Setting], str],
             removal: Callable[[Setting], str] = lambda s: f"remove {s.label}") -> None:
    """The "a switch set to true -> turn it off" skeleton for configs and commands: a bare flag (`--use_liger_kernel`)
    is removed, a value that reads as true (`use_liger: true`, `--bf16 True`, `model.use_liger=True`) becomes false,
    any other value is left alone. Both fixes are safe: each rule's fix_safety says why its switch's off position
    trains. Which settings are the switch is the rule's (`view.flags(...)`, `view.by_name(...)`, verl keys by id);
    `flag_message(s)` and `true_message(s)` word the findings, `removal(s)` the flag's fix. RLC107's `--bf16` and
    RLC354 are written this way (rules/triton_compile/liger_kernel.py)."""
    for s in settings:
        if s.flag and s.value == "" and s.word_span is not None:
            ctx.report(s.key_span, flag_message(s), [remove_flag(ctx.source_text, s.word_span)], FixSafety.SAFE,
                       removal(s))
        elif s.as_bool() is True:
            ctx.report(s.key_span, true_message(s), [s.rewrite(False)], FixSafety.SAFE, "set it to false")


def keys_at_every_mount(knowledge, known) -> tuple[str, ...]:
    """A verl setting's key under every prefix where the config file its proof cites is mounted (rlcompat/knowledge/data/verl/<version>
    .toml `[[mount]]`): verl 0.9.1 mounts model/hf_model.yaml at `actor_rollout_ref.model` and `critic.model`, so the
    actor's `use_liger` proven at hf_model.yaml:58 is the critic's too. Just its own key where no mount of that file
    holds it."""
    for file, prefixes in knowledge.mounts.items():
        if f"config/{file}:" not in known.proof:
            continue
        for prefix in prefixes:
            if known.key.startswith(prefix + "."):
                rest = known.key[len(prefix):]
                return tuple(p + rest for p in prefixes)
    return (known.key,)


def remove_flag(text: str, span: Span) -> Edit:
    """An edit removing a flag (and its value): the whole line when the flag stands alone on a continued line."""
    line_start = text.rfind("\n", 0, span.start) + 1
    line_end = text.find("\n", span.end)
    line_end = len(text) if line_end < 0 else line_end
    newline_end = line_end
    if line_end > span.end and text[line_end - 1] == "\r":
        line_end -= 1  # a CRLF line: its CR belongs to the line ending, which stays
    before, after = text[line_start:span.start], text[span.end:line_end]
    if not before.strip() and after.strip() in ("\\", ""):
        if after.strip() == "\\":
            return Edit(line_start, min(newline_end + 1, len(text)), "")
        # the last line of a continued command: drop it and the `\` that continued the line before
        prev_end = line_start - 1
        cont = text.rfind("\\", 0, prev_end)
        if cont >= 0 and not text[cont + 1:prev_end].strip():
            head = cont
            while head > 0 and text[head - 1] in " \t":
                head -= 1
            return Edit(head, line_end, "")
    start = span.start
    while start > 0 and text[start - 1] in " \t":
        start -= 1
    return Edit(start, span.end, "")
