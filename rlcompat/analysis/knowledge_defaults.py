"""What a run leaves out, judged with the framework knowledge: the hazardous defaults of flags a command of a known
release does not pass (and of the config keys a Hydra command does not override), keys a framework's config file
leaves out (`omitted`), Optional nested configs left at None (`parent`), and a helper's parameter defaults (form
`param`). Called by analysis/knowledgecheck.py after the settings a view writes."""

from __future__ import annotations

import ast
import re

from rlcompat.analysis import command_framework
from rlcompat.analysis.knowledge_keys import (SWITCH_FIXES, attributed, chosen_version, hazard_of, is_env, selected)
from rlcompat.analysis.knowledge_report import NO_REMEDY, dtype_spelling, first_proof, report
from rlcompat.findings import Edit, FixSafety
from rlcompat.knowledge import frameworks as fk
from rlcompat.knowledge.precision import knowledge_choice
from rlcompat.lang.settings import ConfigContext, ConfigView, Setting, Span
from rlcompat.lang.textpos import LineIndex


def command_defaults(view: ConfigView, ctx: ConfigContext, kinds: frozenset[str]) -> None:
    """Hazardous defaults of flags a command of a known framework version leaves out (reported, not added); for a
    framework whose commands take Hydra overrides (`hydra_roots`), of the config keys it leaves out too."""
    if view.anchor is None:
        return
    for fw in fk.frameworks():
        if not (attributed(view, ctx, fw) or command_framework.own_entry(view, ctx, fw.name)):
            continue
        if fw.module_config is not None:
            _module_config_defaults(view, ctx, fw, kinds)
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


def _module_config_defaults(view: ConfigView, ctx: ConfigContext, fw: fk.Framework, kinds: frozenset[str]) -> None:
    """Keys a command running a framework module leaves to the config that module reads in the scanned tree
    (knowledge `module_config`: align-anything's trainers): the file's value is what runs, whatever release the
    checkout is; where the tree does not hold the file nothing is claimed (no release's defaults are known)."""
    from rlcompat.analysis import module_entry_config  # (asked only for a framework that names one)

    own = module_entry_config.tree_module_config(view, ctx, fw)
    if own is None:
        return
    for key in fw.keys:
        if key.kind not in kinds or key.form not in ("key", "any"):
            continue
        name = key.names[0]
        value = own.values.get(name)
        if value is None or module_entry_config.overridden(view, name):
            continue
        found = hazard_of(key, value, ctx.target)
        if found is None:
            continue
        hazard, kind = found
        leaf = name.rsplit(".", 1)[-1]
        advice = f"; pass --{leaf} False" if kind.fix == "off" else (f"; {key.remedy}" if key.remedy else "")
        ctx.report(view.anchor, f"--{leaf} is not passed, so the run takes the tree's {own.shown}, which sets {name} to "
                                f"{value} ({fw.label} knowledge: {first_proof(key.proof)}): {hazard.why}; "
                                f"{ctx.target.name} is {ctx.target.capability_text}{advice}")


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


def omitted_defaults(view: ConfigView, ctx: ConfigContext, kinds: frozenset[str]) -> None:
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


def unset_parents(view: ConfigView, ctx: ConfigContext, kinds: frozenset[str]) -> None:
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


def parameter_defaults(view: ConfigView, ctx: ConfigContext, kinds: frozenset[str]) -> None:
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
                report(view, ctx, setting, key, exact, *found)


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
