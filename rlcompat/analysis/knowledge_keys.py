"""Which framework key a setting stands for, of which release, and whether its value is a hazard on the target.

The matching half of the framework-knowledge checker (analysis/knowledgecheck.py runs it; analysis/knowledge_report.py
words the findings; analysis/knowledge_defaults.py judges what a run leaves out). Keys come from
rlcompat/knowledge/data/frameworks/ through rlcompat.knowledge.frameworks; a value's hazard from its kind
(rlcompat/knowledge/data/frameworks/kinds.toml).
"""

from __future__ import annotations

import ast

from rlcompat.analysis import command_framework
from rlcompat.knowledge import frameworks as fk
from rlcompat.lang.settings import ConfigContext, ConfigView, Setting


SWITCH_FIXES = ("off", "on")


RESOLVED_ORIGINS = ("python-default", "python-forced")  # lang/pysettings.py: values the code itself sets


def is_env(setting: Setting) -> bool:
    """An environment variable: set as one, or a key spelled like one (`VLLM_ATTENTION_BACKEND`), alone or as the
    last part of a mapping that holds a process's environment (Ray's `runtime_env={"env_vars": {...}}`, a YAML
    `env_vars:` block)."""
    if getattr(setting, "env", False):
        return True
    if setting.flag:
        return False
    leaf = setting.key.rsplit(".", 1)[-1]
    return leaf.isupper() and (leaf == setting.key or "_" in leaf)


def form_fits(key: fk.FrameworkKey, setting: Setting) -> bool:
    if is_env(setting):
        return key.form in ("env", "any")
    if setting.flag:
        return key.form in ("flag", "any")
    return key.form in ("key", "any")


def _exact_form(setting: Setting) -> str:
    return "env" if is_env(setting) else "flag" if setting.flag else "key"


def attributed(view: ConfigView, ctx: ConfigContext, framework: fk.Framework, key: fk.FrameworkKey | None = None) -> bool:
    """Whether the view is a command (or the file a config) of `framework` (of `key`'s own commands, if it has any)."""
    if view.kind == "command":
        words = " ".join(view.command_words)
        return any(c in words for c in (key.commands if key is not None and key.commands else framework.commands))
    text = ctx.source_text
    return any(c in text for c in framework.files) or any(c.strip() in text for c in framework.commands if "." in c)


def chosen_version(view: ConfigView, ctx: ConfigContext, framework_name: str) -> tuple[str | None, str]:
    """The release of `framework_name` a view runs when rlcompat has knowledge of exactly that release, and how it
    was found: flags only that release's CLI has ("markers"), else the scanned tree's identity, resolved by the
    caller ("installed", or the pin's file:line, or the package in the tree); (None, "") otherwise."""
    identity = tree_identity(ctx, framework_name)
    if identity is not None and identity.how in ("release", "fork", "pinned") and not identity.exact:
        # The tree says which code runs (its own package, a fork, a pin) and it is no release rlcompat knows:
        # flags another release also has prove nothing about it.
        return None, ""
    versions = [f for f in fk.frameworks() if f.name == framework_name]
    flags = [fk.normalise(s.key) for s in view.settings if s.flag]
    flags += [fk.normalise(w) for w in view.command_words if w.startswith("--")]
    keys = [s.key for s in view.settings if not s.flag] if view.kind != "command" else []
    for fw in versions:  # newest first
        if fw.markers and any(flag.startswith(m) for flag in flags for m in fw.markers):
            return fw.version, "markers"
        if fw.config_markers and any(k.startswith(m) for k in keys for m in fw.config_markers):
            return fw.version, "markers"
    if identity is not None and identity.exact:
        return identity.version, {"installed": "installed", "pinned": identity.evidence}.get(identity.how, identity.package)
    return None, ""


def tree_identity(ctx: ConfigContext, framework_name: str):
    """The scanned tree's identity of a framework (rlcompat/knowledge/identity.py), None where the caller gave none."""
    return ctx.framework(framework_name) if ctx.framework is not None else None


def applies(view: ConfigView, ctx: ConfigContext, setting: Setting, key: fk.FrameworkKey) -> bool:
    """Whether `key`'s knowledge may describe `setting` of `view`: a scoped key only in its framework's commands and
    files; a command's flags and keys (not its environment) only where the command runs the key's framework
    (analysis/command_framework.py): another program's `--vllm_num_engines` is not OpenRLHF's."""
    if key.scoped and not attributed(view, ctx, key.framework, key):
        return False
    if view.kind == "command" and not is_env(setting) and not command_framework.runs(view, ctx, key.framework.name):
        return False
    return True


def matching_key(view: ConfigView, ctx: ConfigContext, setting: Setting, kinds: frozenset[str]):
    """(key, version known) for the framework key a setting stands for, or None."""
    found = [k for k in fk.candidates(setting.key) if k.kind in kinds and fk.name_matches(k, setting.key)
             and form_fits(k, setting) and applies(view, ctx, setting, k)
             and (not k.only_with or any(t in ctx.source_text for t in k.only_with))]
    if found and view.kind != "command":
        # A file of a framework whose own scoped key names the setting is that framework's: another framework's key
        # of the same last name (OpenRLHF's vllm_num_engines in align-anything's vllm_cfgs) does not describe it
        own = {k.framework.name for k in fk.candidates(setting.key) if k.scoped and fk.name_matches(k, setting.key)
               and form_fits(k, setting) and attributed(view, ctx, k.framework)}
        if own:
            found = [k for k in found if k.framework.name in own]
    if not found:
        return None
    # A framework the command runs comes first, then a key of the setting's own form (a flag's over a key that may be
    # anything); then the version that command (or the machine) uses.
    found.sort(key=lambda k: (not attributed(view, ctx, k.framework), k.form != _exact_form(setting)))
    name = found[0].framework.name
    version, how = chosen_version(view, ctx, name)
    same = [k for k in found if k.framework.name == name]
    exact = next((k for k in same if k.framework.version == version), None)
    return (exact, True) if exact else (same[0], False)


def selected(view: ConfigView, key: fk.FrameworkKey) -> bool:
    """Whether the run this view describes reads `key` at all (its `when` conditions, judged on the view's own
    settings, a setting it leaves out by the condition's default): skyrl-train reads `torch_autocast.dtype` only
    when `trainer.strategy` is deepspeed."""
    if not key.when:
        return True

    def value_of(name: str) -> str | None:
        found = view.get(name)
        return None if found is None else found.value

    return all(c.holds(value_of) for c in key.when)


def known(view: ConfigView, ctx: ConfigContext, setting: Setting) -> bool:
    """Whether any framework key describes this setting (whatever its kind): the net then stays out of it. A field
    of the nested config class a key's `parent` holds (`MixedPrecisionConfig.param_dtype` for skyrl's
    `fsdp_config.mixed_precision.param_dtype`) is that key, in the framework's files."""
    return (any(fk.name_matches(k, setting.key) and form_fits(k, setting) and applies(view, ctx, setting, k)
                for k in fk.candidates(setting.key))
            or (setting.origin == "python-field" and any(
                k.names[0].rsplit(".", 1)[-1] == setting.key and attributed(view, ctx, k.framework)
                for k in fk.held_in(setting.call))))


def hazard_of(key: fk.FrameworkKey, value: str | None, target, bare: bool = False):
    """(hazard, value as read) when the value is a hazard on the target, else None. `bare`: a flag given with no
    value (`--bf16`), which turns a switch on; an empty value anywhere else (YAML `tf32:`, an empty environment
    variable) is null or the empty string, which no switch reads as on."""
    kind = fk.kinds().get(key.kind)
    if kind is None or value is None or key.judged_by:
        return None
    if key.head:
        value = value.strip().strip("'\"").split(key.head, 1)[0]
    if key.values and value.strip().strip("'\"").lower() not in key.values:
        return None  # a value this release does not accept (another release's converter name: an error everywhere)
    # a switch: fixed by turning it off, or with no fix but only "true" a hazard (XTuner's XTUNER_USE_SGLANG=1)
    switch = kind.fix in SWITCH_FIXES or all(v == "true" for h in kind.hazards for v in h.values)
    if value == "" and switch:
        if not bare:
            return None
        value = "true"
    if switch:
        value = {"1": "true", "yes": "true", "on": "true", "0": "false", "no": "false", "off": "false"}.get(
            value.strip().lower(), value)
        if key.auto_follows and value.strip().lower() == "auto":
            # "auto" copies the setting `key.auto_follows` names, which is reported where it is set; writing false
            # here while that setting stays on is its own error (transformers' DeepSpeed "mismatch" ValueError).
            return None
        if key.auto and value.strip().lower() == "auto":  # resolved to on when the framework starts
            value = "true"
    for hazard in kind.hazards:
        if hazard.matches(value) and not target.fact(hazard.needs):
            return hazard, kind
    return None


def _same_expression(a: str, b: str) -> bool:
    try:
        return ast.unparse(ast.parse(a, mode="eval")) == ast.unparse(ast.parse(b, mode="eval"))
    except SyntaxError:
        return False


def resolved_key(view: ConfigView, ctx: ConfigContext, setting: Setting, kinds: frozenset[str]):
    """For a default the scanned code resolves from something it does not declare (`not fp16`): the framework key
    whose knowledge says the same expression (`resolves`), and so what its value is (`default`)."""
    unset = getattr(setting, "unset", "")
    if not unset:
        return None
    return next((k for k in fk.candidates(setting.key) if k.kind in kinds and k.resolves and fk.name_matches(k, setting.key)
                 and form_fits(k, setting) and _same_expression(k.resolves, unset)), None)


def negated_switch(view: ConfigView, ctx: ConfigContext, setting: Setting) -> fk.FrameworkKey | None:
    """The knowledge of a bare switch flag that the command's framework turns on by default and off with a flag of
    its own (tyro's `--no-bf16`), where one applies: then removing the flag leaves the switch on, and the
    knowledge's finding (its off flag as the fix) is the one to make."""
    if view.kind != "command" or not setting.flag or setting.value != "":
        return None
    return next((k for k in fk.candidates(setting.key) if k.negation and fk.name_matches(k, setting.key)
                 and attributed(view, ctx, k.framework)), None)
