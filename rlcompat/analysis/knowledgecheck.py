"""Framework knowledge applied to settings: one checker for every rule backed by rlcompat/knowledge/data/frameworks/ data.

For each setting of a view, the framework keys whose names match it (rlcompat.knowledge.frameworks) decide whether
its value is a hazard on the target (rlcompat/knowledge/data/frameworks/kinds.toml) and what to write instead (the key's spellings,
chosen by its precision role: rlcompat.knowledge.precision). For a command of a known framework version, hazardous
defaults of flags the command does not pass are reported at the command, with the flag to add.
"""

from __future__ import annotations

import ast
import re

from rlcompat.analysis import command_framework, cpu_program, entry_switches
from rlcompat.knowledge import frameworks as fk
from rlcompat.analysis.confighelpers import follows_bf16_switch, is_bf16, remove_flag, where
from rlcompat.lang.settings import ConfigContext, ConfigView, Setting, Span
from rlcompat.lang.textpos import LineIndex
from rlcompat.findings import Edit, FixSafety
from rlcompat.knowledge.versions import release
from rlcompat.knowledge.precision import dtype_for, knowledge_choice

SWITCH_FIXES = ("off", "on")


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
    if value == "" and kind.fix in SWITCH_FIXES:
        if not bare:
            return None
        value = "true"
    if kind.fix in SWITCH_FIXES:
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
    import ast

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


def check(view: ConfigView, ctx: ConfigContext, kinds: frozenset[str]) -> None:
    target = ctx.target
    hazards = []
    cpu_only = view.kind == "python" and cpu_program.runs_on_cpu_only(ctx.source_text)
    candidates = fk.candidates
    for setting in view.settings:
        if cpu_only and setting.origin == "argparse-default":
            continue  # a flag of a program whose models stay on the CPU (analysis/cpu_program.py)
        if not candidates(setting.key):
            continue  # no framework key may describe it (what `resolved_key` and `matching_key` look among): a big
            # table's thousands of keyword arguments cost one look-up each
        value = setting.value
        key = resolved_key(view, ctx, setting, kinds) if value is None else None
        if key is not None:
            match, value = (key, True), key.default
        else:
            match = matching_key(view, ctx, setting, kinds)
        if match is None:
            continue
        key, version_known = match
        if not selected(view, key):
            continue  # another setting of the run leaves this key unread (a strategy that is not selected)
        found = hazard_of(key, value, target, bare=setting.switch)
        if found is not None and any(hazard_of(key, v, target) is None for v in getattr(setting, "alternatives", ())):
            found = None  # a default computed as one of several values (lang/pysettings.py): a hazard only if each is
        if found is not None and is_bf16(value) and follows_bf16_switch(setting):
            continue  # `elif self.bf16: self.mixed_precision = "bf16"` passes a switch on: reported at the switch
        if found is not None and entry_switches.forced_in_no_launch(view, ctx, setting):
            continue  # forced only under a switch the parser leaves off and no launch file of the tree passes
        if found is not None and not _feature_off_by_default(view, setting, key):
            hazards.append((setting, key, version_known, value, *found))
    # A switch the code turns on that only matters through a value the same code then forces (kinds.toml `forces`:
    # OpenRLHF turns packing on for ring attention, then forces flash_attention_2 for packing): one hazard, reported
    # where the forced value is written.
    forced = {key.kind for setting, key, *_ in hazards if setting.origin == "python-forced"}
    for setting, key, version_known, value, hazard, kind in hazards:
        if setting.origin == "python-forced" and kind.forces in forced:
            continue
        if setting.origin in RESOLVED_ORIGINS:
            _report_resolved(ctx, setting, key, value, version_known, hazard, kind)
        else:
            _report(view, ctx, setting, key, version_known, hazard, kind)
    if view.kind == "command":
        _defaults(view, ctx, kinds)
    else:
        _omitted_defaults(view, ctx, kinds)
    if view.kind == "python":
        _unset_parents(view, ctx, kinds)
        _parameter_defaults(view, ctx, kinds)


OFF_VALUES = ("", "none", "null", "0", "false")


def _feature_off_by_default(view: ConfigView, setting: Setting, key: fk.FrameworkKey) -> bool:
    """An argparse default of a key whose default matters only with another flag (`requires`: vLLM's eager mode only
    with `--vllm.num_engines`), in a parser whose own defaults for those flags leave the feature off: a run gets the
    feature only by passing one of them, and such a command is judged where it is given (`_defaults`)."""
    if setting.origin != "argparse-default" or not key.requires:
        return False
    required = [s for s in view.settings if s.origin == "argparse-default" and fk.normalise(s.key) in key.requires]
    return bool(required) and all((s.value or "").strip().lower() in OFF_VALUES for s in required)


def first_proof(proof: str) -> str:
    """The first file:line of a proof list, without its parenthetical note."""
    depth = 0
    for i, ch in enumerate(proof):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and proof.startswith(", ", i):
            proof = proof[:i]
            break
    return proof.split(" (")[0]


def dtype_spelling(key: fk.FrameworkKey, target) -> tuple[str | None, FixSafety, str]:
    """(how the key spells the dtype to use, the fix's safety, a note) by the precision policy for the key's role.
    A key without a spelling for the policy's dtype (torchtitan's mixed_precision_param takes bfloat16 or float32:
    no fp16 on sm75) takes fp32 where it has one: no mixed precision, numerically sound, only slower."""
    wanted, safety = knowledge_choice(key.role or "compute", target)
    if wanted in key.spellings:
        return key.spellings[wanted], safety, ""
    if "fp32" in key.spellings:
        return key.spellings["fp32"], FixSafety.SAFE, (f" ({key.framework.label} takes no {wanted} here; fp32 trains, "
                                                       f"slower than {wanted} would)")
    return None, safety, f"{key.framework.label} has no {wanted} spelling for this key"


def _knowledge(ctx: ConfigContext, key: fk.FrameworkKey, version_known: bool) -> str:
    """The knowledge a message rests on: the release's file:line where the tree runs exactly that release; where it
    runs another (a pin of a release rlcompat has no knowledge of, a fork) no location is cited, and what is used
    is said."""
    proof = first_proof(key.proof)
    if version_known:
        return f"{key.label} knowledge: {proof}"
    identity = tree_identity(ctx, key.framework.name)
    if identity is not None and identity.version is not None and identity.how != "installed":
        where = f"pinned in {identity.evidence}" if identity.how == "pinned" else f"at {identity.package}"
        fork = " fork" if identity.how == "fork" else ""
        return (f"{key.framework.label}{fork} {identity.version} {where}: no knowledge of that release; judged by the "
                f"value with {key.label}'s key, no file:line cited")
    if identity is not None and identity.how == "declared":
        # The tree names the framework without a version: pip resolves one nobody knows here, so no release's file
        # and line is this code's.
        return (f"{key.framework.label} declared without a version ({identity.evidence}); judged by the value with "
                f"{key.label}'s key, no file:line cited")
    return f"{key.framework.label} version not known here; {key.label} knowledge: {proof}"


def _report(view, ctx, setting: Setting, key: fk.FrameworkKey, version_known: bool, hazard, kind) -> None:
    target = ctx.target
    shown = setting.label
    value = setting.value if setting.value != "" else "on"
    runtime = f" ({key.auto})" if key.auto and (setting.value or "").lower() == "auto" else ""
    head = (f"{shown} is {value}{runtime}{where(setting)}: {hazard.why}; {target.name} is {target.capability_text} "
            f"({_knowledge(ctx, key, version_known)})")
    edits, advice, safety = [], "", FixSafety.SAFE
    if kind.fix == "dtype":
        spelled, safety, note = dtype_spelling(key, target)
        if spelled is None:
            advice = f"; {note}: train elsewhere or change tool"
        else:
            edits, advice = [setting.rewrite(spelled)], f"; use {spelled}{note}"
    elif kind.fix == "off":
        if setting.flag and setting.value == "" and setting.word_span is not None:
            if key.negation:  # on by default: without the flag it stays on, so the off flag takes its place
                edits = [Edit(setting.word_span.start, setting.word_span.end, "--" + key.negation)]
                advice = f"; pass --{key.negation} instead (it is on by default)"
            else:
                edits, advice = [remove_flag(ctx.source_text, setting.word_span)], "; drop the flag"
        else:
            edits, advice = [setting.rewrite(False)], "; set it to false"
        if key.kind == "bf16-switch" and target.training_dtype == "float16":
            advice += " (fp16 mixed precision is the fast path here)"
    elif kind.fix == "on":
        edits, advice = [setting.rewrite(True)] if setting.value else [], "; set it to true"
    elif kind.fix == "value" and key.safe:
        edits, advice = [setting.rewrite(key.safe)], f"; use {key.safe}"
    else:
        advice = f"; {key.remedy or NO_REMEDY}"
    if any(e is None for e in edits):
        edits = []
    description = advice.lstrip("; ").split(" (")[0]
    ctx.report(setting.key_span, head + advice, edits, safety, description)


NO_REMEDY = "no setting makes it work on this GPU"
RESOLVED_ORIGINS = ("python-default", "python-forced")  # lang/pysettings.py: values the code itself sets


def _report_resolved(ctx, setting: Setting, key: fk.FrameworkKey, value: str, version_known: bool, hazard, kind) -> None:
    """A value the framework's own code gives a key (a config class' default, a flag another flag forces): reported
    where it is written, with no fix there (a library default changes every caller); the advice names the setting
    to write where a config is built or a command is given."""
    target = ctx.target
    unset = getattr(setting, "unset", "")
    how = f"; {_knowledge(ctx, key, version_known)}: `{unset}` is {value}" if unset else f"; {_knowledge(ctx, key, version_known)}"
    if setting.origin == "python-forced":
        head = f"{setting.label} is set to {value} {setting.via}{how}"
        advice = "; the code forces it when that condition holds (no autofix here): leave off what the condition asks for"
    else:
        head = f"{setting.label} defaults to {value} when unset ({setting.via}{how})"
        advice = f"; this is the code's default for every caller (no autofix here): {_caller_fix(setting, key, kind, target)}"
    ctx.report(setting.key_span, f"{head}: {hazard.why}; {target.name} is {target.capability_text}{advice}")


def _caller_fix(setting: Setting, key: fk.FrameworkKey, kind, target) -> str:
    """What to write where the config is built, following the precision policy."""
    name = setting.key
    if kind.fix == "dtype":
        wanted, _ = knowledge_choice(key.role or "compute", target)
        spelled = key.spellings.get(wanted)
        return f"pass {name}={spelled} where the config is built" if spelled else f"{key.framework.label} has no {wanted} spelling for {name}"
    if kind.fix == "off":
        if key.kind == "bf16-switch" and dtype_for(target, "autocast") == "float16":
            return (f"pass {name}=False, fp16=True where the config is built (fp16 mixed precision with fp32 weights; "
                    f"unsafe: fp16's smaller range, docs/precision.md)")
        return f"pass {name}=False where the config is built"
    if kind.fix == "value" and key.safe:
        return f"pass {name}={key.safe} where the config is built"
    return key.remedy or NO_REMEDY


def _defaults(view: ConfigView, ctx: ConfigContext, kinds: frozenset[str]) -> None:
    """Hazardous defaults of flags a command of a known framework version leaves out (reported, not added); for a
    framework whose commands take Hydra overrides (`hydra_roots`), of the config keys it leaves out too."""
    if view.anchor is None:
        return
    for fw in fk.frameworks():
        if not (attributed(view, ctx, fw) or command_framework.own_entry(view, ctx, fw.name)):
            continue
        version, how = chosen_version(view, ctx, fw.name)
        if version != fw.version:
            continue
        hydra = bool(fw.hydra_roots)
        if hydra and _composes_other_config(view):
            continue  # the run composes a config of the user's: what it leaves unset is not known here
        own = None
        if hydra:  # (imported here: a framework with Hydra commands is rare among scanned files)
            from rlcompat.analysis import hydra_entry_config

            own = hydra_entry_config.tree_entry_config(view, ctx, fw)
        given = {fk.normalise(s.key).lower() for s in view.settings}
        for key in fw.keys:
            if key.kind not in kinds:
                continue
            if hydra and key.form in ("key", "any") and key.names[0].startswith(fw.hydra_roots):
                if not selected(view, key) or (key.only_with and not any(t in ctx.source_text for t in key.only_with)):
                    continue  # the run does not read it (another strategy, no KL term, a plugin it does not load)
            elif key.form not in ("flag", "any") or key.scoped or key.omitted:
                continue  # (a key with `omitted` is judged in the config file that would carry it)
            if key.commands and not attributed(view, ctx, fw, key):
                continue
            if key.requires and not any(w.lstrip("-").split("=")[0] in key.requires for w in view.command_words):
                continue  # the default matters only with the feature it belongs to
            hydra_key = hydra and key.form in ("key", "any") and key.names[0].startswith(fw.hydra_roots)
            if hydra_key and own is not None and key.names[0] in own.values:
                # the tree's own entry config: its value, not the release's, is what the command runs with
                default, set_by = own.values[key.names[0]], own.shown
            else:
                default, set_by = key.default, ""
            if any(n.lower() in given for n in key.names) or default in ("", "None", "auto", None):
                continue
            if key.resolves.startswith("not ") and fk.normalise(key.resolves[4:].strip()).lower() in given:
                continue  # `bf16 = not fp16`: the flag it is resolved from is passed
            found = hazard_of(key, default, ctx.target)
            if found is None:
                continue
            hazard, kind = found
            if hydra_key:
                _hydra_default(view, ctx, key, hazard, kind, how, default, set_by)
                continue
            flag = "--" + key.names[0]
            suggestion = _suggest(key, kind, ctx.target)
            resolved = " (resolved at run time)" if key.default_at == "runtime" else ""
            uses = f"uses its default, {key.default}{resolved}"
            if key.resolves.startswith("not "):  # `bf16 = not fp16`: only the other flag turns it off
                other = "--" + key.resolves[4:].strip()
                flag, uses = other, f"sets {key.names[0]} = {key.resolves}, {key.default}"
                suggestion = (f"; pass {other} (mixed precision with tensor cores here)"
                              if ctx.target.fact("fp16_tensor_cores") else
                              f"; {other} is the only other choice and runs at a fraction of the fp32 rate here: "
                              f"train elsewhere or change tool")
            ctx.report(view.anchor, f"{flag} is not passed, so {fw.label} {fw.version} {uses} "
                                    f"({fw.label} {fw.version} knowledge: {first_proof(key.proof)}; version from {how}): {hazard.why}; "
                                    f"{ctx.target.name} is {ctx.target.capability_text}{suggestion}")


def _composes_other_config(view: ConfigView) -> bool:
    """Whether the command passes one of Hydra's config flags (run_config.FLAGS: `--config-name`, `-cp`, ...), so the
    run composes another config than the entry point's own."""
    from rlcompat.analysis.run_config import FLAGS  # (asked only for a framework with Hydra commands)

    return any(w.split("=", 1)[0] in FLAGS for w in view.command_words)


def _hydra_default(view: ConfigView, ctx: ConfigContext, key: fk.FrameworkKey, hazard, kind, how: str,
                   value: str, set_by: str) -> None:
    """A config key a Hydra command of a known release leaves out: the run gets the entry config's value (`set_by`:
    the tree's own entry config that sets it; "" for the release's default). Reported at the command with the
    override to add (a key the entry config does not write, `omitted`, needs Hydra's `+`)."""
    fw, name = key.framework, key.names[0]
    add = "+" if key.omitted is not None else ""
    override = ""
    if kind.fix == "dtype":
        spelled, _, note = dtype_spelling(key, ctx.target)
        override = f"; pass {add}{name}={spelled}{note}" if spelled is not None else ""
    elif kind.fix == "off":
        override = f"; pass {name}=false"
    elif kind.fix == "value" and key.safe:
        override = f"; pass {name}={key.safe}"
    if set_by:
        uses = f"the run takes the tree's {set_by}, which sets it to {value}"
    else:
        proof = first_proof(key.omitted.proof if key.omitted is not None else key.proof)
        uses = (f"{fw.label} {fw.version} uses its default, {value} ({fw.label} {fw.version} knowledge: {proof}; "
                f"version from {how})")
    ctx.report(view.anchor, f"{name} is not overridden, so {uses}: {hazard.why}; "
                            f"{ctx.target.name} is {ctx.target.capability_text}{override}")


def _omitted_defaults(view: ConfigView, ctx: ConfigContext, kinds: frozenset[str]) -> None:
    """A config file of a framework that leaves out a key whose default is a hazard (rlcompat/knowledge/data/frameworks: `omitted`):
    reported at the table that would carry the key (the view's anchor, its first line, when the table is absent),
    with the key added where the knowledge has a value for the target."""
    done: set[tuple[str, str]] = set()
    for fw in fk.frameworks():  # newest first: one finding per framework and key, from its newest knowledge
        for key in fw.keys:
            spec = key.omitted
            if (spec is None or key.kind not in kinds or spec.format != view.kind or (fw.name, key.names[0]) in done
                    or not attributed(view, ctx, fw) or not all(_has_table(view, t) for t in spec.tables)):
                continue
            done.add((fw.name, key.names[0]))
            if any(fk.name_matches(key, s.key) for s in view.settings if not s.flag and not is_env(s)):
                continue
            if not selected(view, key):
                continue
            found = hazard_of(key, key.default, ctx.target)
            if found is None:
                continue
            hazard, kind = found
            anchor, where_, to_add = _left_out(view, key.names[0], spec.at)
            if anchor is None:
                continue
            head = (f"{where_}, so {fw.label} ({spec.releases}) uses the default of {key.names[0]}, {key.default} "
                    f"({first_proof(spec.proof)}): {hazard.why}; {ctx.target.name} is {ctx.target.capability_text}")
            edits, safety, advice = [], FixSafety.SAFE, f"; {key.remedy}" if key.remedy else "; no value of this key avoids it"
            if kind.fix == "dtype":
                spelled, safety, note = dtype_spelling(key, ctx.target)
                if spelled is None:
                    advice = f"; {note}: train elsewhere or change tool"
                else:
                    edits, advice = [view.add(key.names[0], spelled)], f"; {to_add(spelled)}{note}"
            elif kind.fix == "value" and key.safe:
                edits, advice = [view.add(key.names[0], key.safe)], f"; {to_add(key.safe)}"
            elif kind.fix in SWITCH_FIXES:
                # the framework's own spelling of the switch's safe state where it is no boolean (prime-rl's
                # `compile = "None"` for a sub-config that is on by default)
                value = key.safe or ("false" if kind.fix == "off" else "true")
                edits, advice = [view.add(key.names[0], value)], f"; {to_add(value)}"
            if any(e is None for e in edits):
                edits = []
            ctx.report(anchor, head + advice, edits, safety, advice.lstrip("; ").split(" (")[0])


def _unset_parents(view: ConfigView, ctx: ConfigContext, kinds: frozenset[str]) -> None:
    """An Optional nested config field left at None (`mixed_precision: Optional[MixedPrecisionConfig] = None`) where
    the framework's code gives None a meaning (a key's `parent`: skyrl's FSDP strategy then computes in bf16):
    reported at the field, for the release the tree runs exactly (what None means is that release's code). The fix
    builds the nested config with the key at the precision policy's spelling
    (`field(default_factory=lambda: MixedPrecisionConfig(param_dtype="fp32"))`), where the module imports
    dataclasses' `field`."""
    for setting in view.settings:
        holds = getattr(setting, "holds", "")
        if not holds or setting.origin != "python-field" or setting.value != "None":
            continue
        for key in fk.under_parent(setting.call, setting.key):
            fw = key.framework
            if (key.kind not in kinds or key.parent.holds != holds or not attributed(view, ctx, fw)
                    or chosen_version(view, ctx, fw.name)[0] != fw.version or not selected(view, key)):
                continue
            found = hazard_of(key, key.default, ctx.target)
            if found is None:
                break
            hazard, kind = found
            leaf = key.names[0].rsplit(".", 1)[-1]
            head = (f"{key.parent.field} defaults to None, so {key.label} uses {leaf} {key.default}: {hazard.why}; "
                    f"{ctx.target.name} is {ctx.target.capability_text} ({key.label} knowledge: "
                    f"{first_proof(key.parent.proof)})")
            edits, safety, advice = [], FixSafety.SAFE, f"; {key.remedy or NO_REMEDY}"
            if kind.fix == "dtype":
                spelled, safety, note = dtype_spelling(key, ctx.target)
                if spelled is None:
                    advice = f"; {note}: train elsewhere or change tool"
                else:
                    built = f'field(default_factory=lambda: {holds}({leaf}="{spelled}"))'
                    if setting.value_span is not None and _imports_field(ctx.source_text):
                        edits = [Edit(setting.value_span.start, setting.value_span.end, built)]
                        advice = f"; default it to {built}{note}"
                    else:
                        advice = (f"; set {setting.key}.{leaf}={spelled} where the config is built (no autofix: the "
                                  f"module does not import dataclasses.field){note}")
            ctx.report(setting.key_span, head + advice, edits, safety, advice.lstrip("; ").split(" (")[0])
            break


def _parameter_defaults(view: ConfigView, ctx: ConfigContext, kinds: frozenset[str]) -> None:
    """A function's parameter whose literal default switches a hazard on, for keys of form `param` (a framework's
    helper that callers use without the argument: verifiers' `get_model(model_name, use_liger: bool = True)`, which
    its trainer calls with the model name only), in a file that holds one of the key's `only_with` texts. Read here
    and not as a setting of the view: no other rule should take a parameter of any function for a config key."""
    text = ctx.source_text
    keys = [k for fw in fk.frameworks() for k in fw.keys if k.form == "param" and k.kind in kinds
            and any(n in text for n in k.names) and (not k.only_with or any(t in text for t in k.only_with))]
    if not keys:
        return
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return
    offset = LineIndex(text).ast_offset
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        args = node.args
        positional = args.posonlyargs + args.args
        pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
        pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
        for arg, default in pairs:
            key = next((k for k in keys if arg.arg in k.names), None)
            if key is None or not isinstance(default, ast.Constant) or isinstance(default.value, bytes):
                continue
            start, value_start = offset(arg.lineno, arg.col_offset), offset(default.lineno, default.col_offset)
            value_end = offset(default.end_lineno, default.end_col_offset)
            setting = Setting(arg.arg, text[value_start:value_end], Span(start, start + len(arg.arg)),
                              Span(value_start, value_end), origin="python-param", call=node.name)
            found = hazard_of(key, setting.value, ctx.target)
            if found is not None:
                exact = chosen_version(view, ctx, key.framework.name)[0] == key.framework.version
                _report(view, ctx, setting, key, exact, *found)


_FIELD_IMPORT = re.compile(r"^from\s+dataclasses\s+import\s+(?:\([^)]*|[^\n]*)\bfield\b", re.MULTILINE)


def _imports_field(text: str) -> bool:
    """Whether the module binds dataclasses' `field` at its top (the fix's default factory uses it)."""
    return _FIELD_IMPORT.search(text) is not None


def _left_out(view: ConfigView, name: str, at: str = ""):
    """(where to report a key the file leaves out, how to say so, how to say what to add). A TOML key belongs to
    its table (`[training]`; without it the table `at` names, where the file has it, else the file's first line); a
    YAML key to the deepest mapping of the file on its path (`trainer.policy.fsdp_config` for its
    `mixed_precision.param_dtype`)."""
    if view.kind == "yaml":
        parts = name.split(".")
        depth = next((n for n in range(len(parts) - 1, 0, -1) if ".".join(parts[:n]) in view.sections), 0)
        if not depth:
            return None, "", None
        section, rest = ".".join(parts[:depth]), ".".join(parts[depth:])
        return (view.sections[section], f"{section} does not set {rest}",
                lambda value: f"add {rest}: {value} under {section}")
    table, _, leaf = name.rpartition(".")
    where_ = f"[{table}] does not set {leaf}" if _has_table(view, table) else f"this file has no [{table}] table"
    anchor = view.sections.get(table) or (view.sections.get(at) if at else None) or view.anchor
    return anchor, where_, lambda value: f"add {leaf} = {value} to [{table}]"


def _has_table(view: ConfigView, table: str) -> bool:
    return table in view.sections or any(s.key.startswith(table + ".") for s in view.settings)


def _suggest(key: fk.FrameworkKey, kind, target) -> str:
    if kind.fix == "dtype":
        spelled, _, note = dtype_spelling(key, target)
        if spelled is None:
            return f"; {key.framework.label} offers no {knowledge_choice(key.role or 'compute', target)[0]} here"
        return f"; pass --{key.names[0]} {spelled}{note}"
    if kind.fix == "value" and key.safe:
        return f"; pass --{key.names[0]} {key.safe}"
    if kind.fix == "off" and key.negation:
        return f"; pass --{key.negation}"
    return ""


def negated_switch(view: ConfigView, ctx: ConfigContext, setting: Setting) -> fk.FrameworkKey | None:
    """The knowledge of a bare switch flag that the command's framework turns on by default and off with a flag of
    its own (tyro's `--no-bf16`), where one applies: then removing the flag leaves the switch on, and the
    knowledge's finding (its off flag as the fix) is the one to make."""
    if view.kind != "command" or not setting.flag or setting.value != "":
        return None
    return next((k for k in fk.candidates(setting.key) if k.negation and fk.name_matches(k, setting.key)
                 and attributed(view, ctx, k.framework)), None)


class DataExamples:
    """A rule's `bad`/`good` examples: the ones written in the rule plus the rows of the framework keys of its
    kinds (`bad = [{text, fixed, path, target, unsafe}]` in rlcompat/knowledge/data/frameworks/*/*.toml), read on first use."""

    def __init__(self, which: str, written: tuple = ()) -> None:
        self.which, self.written = which, written
        self._cache: dict[type, tuple] = {}

    def __get__(self, obj, cls):
        if cls not in self._cache:
            from rlcompat.rule import Bad, Good

            rows = []
            for fw in fk.frameworks():
                for key in fw.keys:
                    if key.kind not in cls.kinds:
                        continue
                    for which, row in key.examples:
                        if which != self.which:
                            continue
                        extra = {"target": row.get("target", "sm61"), "path": row.get("path", "config.yaml"),
                                 "frameworks": dict(row.get("frameworks", {}))}  # the releases the example runs
                        if which == "bad":
                            rows.append(Bad(row["text"], fixed=row.get("fixed"), unsafe=row.get("unsafe", False), **extra))
                        else:
                            rows.append(Good(row["text"], **extra))
            self._cache[cls] = tuple(self.written) + tuple(rows)
        return self._cache[cls]
