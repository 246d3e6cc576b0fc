"""Framework knowledge applied to settings: one checker for every rule backed by rules/frameworks/ data.

For each setting of a view, the framework keys whose names match it (rlcompat.framework_knowledge) decide whether
its value is a hazard on the target (rules/frameworks/kinds.toml) and what to write instead (the key's spellings,
chosen by its precision role: rlcompat.precision). For a command of a known framework version, hazardous
defaults of flags the command does not pass are reported at the command, with the flag to add.
"""

from __future__ import annotations

from rlcompat import framework_knowledge as fk
from rlcompat.analysis.confighelpers import remove_flag, where
from rlcompat.lang.settings import ConfigContext, ConfigView, Setting
from rlcompat.model import FixSafety
from rlcompat.precision import knowledge_choice

SWITCH_FIXES = ("off", "on")


def is_env(setting: Setting) -> bool:
    return bool(getattr(setting, "env", False)) or (not setting.flag and setting.key.isupper() and "." not in setting.key)


def form_fits(key: fk.FrameworkKey, setting: Setting) -> bool:
    if is_env(setting):
        return key.form in ("env", "any")
    if setting.flag:
        return key.form in ("flag", "any")
    return key.form in ("key", "any")


def attributed(view: ConfigView, ctx: ConfigContext, framework: fk.Framework, key: fk.FrameworkKey | None = None) -> bool:
    """Whether the view is a command (or the file a config) of `framework` (of `key`'s own commands, if it has any)."""
    if view.kind == "command":
        words = " ".join(view.command_words)
        return any(c in words for c in (key.commands if key is not None and key.commands else framework.commands))
    text = ctx.source_text
    return any(c in text for c in framework.files) or any(c.strip() in text for c in framework.commands if "." in c)


def chosen_version(view: ConfigView, framework_name: str) -> tuple[str | None, str]:
    """The version of `framework_name` a view runs, and how it was found ("markers", "installed", or "")."""
    versions = [f for f in fk.frameworks() if f.name == framework_name]
    flags = [fk.normalise(s.key) for s in view.settings if s.flag]
    flags += [fk.normalise(w) for w in view.command_words if w.startswith("--")]
    for fw in versions:  # newest first
        if fw.markers and any(flag.startswith(m) for flag in flags for m in fw.markers):
            return fw.version, "markers"
    installed = fk.installed_version(versions[0].distribution) if versions else None
    if installed:
        older = [f.version for f in versions if fk.version_key(f.version) <= fk.version_key(installed)]
        return (older[0] if older else versions[-1].version), "installed"
    return None, ""


def matching_key(view: ConfigView, ctx: ConfigContext, setting: Setting, kinds: frozenset[str]):
    """(key, version known) for the framework key a setting stands for, or None."""
    found = [k for k in fk.candidates(setting.key) if k.kind in kinds and fk.name_matches(k, setting.key)
             and form_fits(k, setting) and (not k.scoped or attributed(view, ctx, k.framework, k))
             and (not k.only_with or any(t in ctx.source_text for t in k.only_with))]
    if not found:
        return None
    # A framework the command runs comes first; then the version that command (or the machine) uses.
    found.sort(key=lambda k: (not attributed(view, ctx, k.framework),))
    name = found[0].framework.name
    version, how = chosen_version(view, name)
    same = [k for k in found if k.framework.name == name]
    exact = next((k for k in same if k.framework.version == version), None)
    return (exact, True) if exact else (same[0], False)


def known(view: ConfigView, ctx: ConfigContext, setting: Setting) -> bool:
    """Whether any framework key describes this setting (whatever its kind): the net then stays out of it."""
    return any(fk.name_matches(k, setting.key) and form_fits(k, setting)
               and (not k.scoped or attributed(view, ctx, k.framework, k)) for k in fk.candidates(setting.key))


def hazard_of(key: fk.FrameworkKey, value: str | None, target):
    """(hazard, value as read) when the value is a hazard on the target, else None."""
    kind = fk.kinds().get(key.kind)
    if kind is None or value is None:
        return None
    if value == "" and kind.fix in SWITCH_FIXES:  # a bare switch flag: on
        value = "true"
    if kind.fix in SWITCH_FIXES:
        value = {"1": "true", "yes": "true", "on": "true", "0": "false", "no": "false", "off": "false"}.get(
            value.strip().lower(), value)
        if key.auto and value.strip().lower() == "auto":
            value = "true"
    for hazard in kind.hazards:
        if hazard.matches(value) and not target.fact(hazard.needs):
            return hazard, kind
    return None


def check(view: ConfigView, ctx: ConfigContext, kinds: frozenset[str]) -> None:
    target = ctx.target
    for setting in view.settings:
        match = matching_key(view, ctx, setting, kinds)
        if match is None:
            continue
        key, version_known = match
        found = hazard_of(key, setting.value, target)
        if found is None:
            continue
        hazard, kind = found
        _report(view, ctx, setting, key, version_known, hazard, kind)
    if view.kind == "command":
        _defaults(view, ctx, kinds)


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


def _knowledge(key: fk.FrameworkKey, version_known: bool) -> str:
    proof = first_proof(key.proof)
    if version_known:
        return f"{key.label} knowledge: {proof}"
    return f"{key.framework.label} version not known here; {key.label} knowledge: {proof}"


def _report(view, ctx, setting: Setting, key: fk.FrameworkKey, version_known: bool, hazard, kind) -> None:
    target = ctx.target
    shown = setting.label
    value = setting.value if setting.value != "" else "on"
    runtime = f" ({key.auto})" if key.auto and (setting.value or "").lower() == "auto" else ""
    head = (f"{shown} is {value}{runtime}{where(setting)}: {hazard.why}; {target.name} is {target.capability_text} "
            f"({_knowledge(key, version_known)})")
    edits, advice, safety = [], "", FixSafety.SAFE
    if kind.fix == "dtype":
        wanted, safety = knowledge_choice(key.role or "compute", target)
        spelled = key.spellings.get(wanted)
        if spelled is None:
            advice = f"; {key.framework.label} has no {wanted} spelling for this key: train elsewhere or change tool"
        else:
            edits, advice = [setting.rewrite(spelled)], f"; use {spelled}"
    elif kind.fix == "off":
        if setting.flag and setting.value == "" and setting.word_span is not None:
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
        advice = "; no setting makes it work on this GPU"
    if any(e is None for e in edits):
        edits = []
    description = advice.lstrip("; ").split(" (")[0]
    ctx.report(setting.key_span, head + advice, edits, safety, description)


def _defaults(view: ConfigView, ctx: ConfigContext, kinds: frozenset[str]) -> None:
    """Hazardous defaults of flags a command of a known framework version leaves out (reported, not added)."""
    if view.anchor is None:
        return
    for fw in fk.frameworks():
        if not attributed(view, ctx, fw):
            continue
        version, how = chosen_version(view, fw.name)
        if version != fw.version:
            continue
        given = {fk.normalise(s.key).lower() for s in view.settings}
        for key in fw.keys:
            if key.kind not in kinds or key.form not in ("flag", "any") or key.scoped:
                continue
            if key.commands and not attributed(view, ctx, fw, key):
                continue
            if key.requires and not any(w.lstrip("-").split("=")[0] in key.requires for w in view.command_words):
                continue  # the default matters only with the feature it belongs to
            if any(n.lower() in given for n in key.names) or key.default in ("", "None", "auto"):
                continue
            found = hazard_of(key, key.default, ctx.target)
            if found is None:
                continue
            hazard, kind = found
            flag = "--" + key.names[0]
            suggestion = _suggest(key, kind, ctx.target)
            resolved = " (resolved at run time)" if key.default_at == "runtime" else ""
            ctx.report(view.anchor, f"{flag} is not passed, so {fw.label} {fw.version} uses its default, {key.default}{resolved} "
                                    f"({fw.label} {fw.version} knowledge: {first_proof(key.proof)}; version from {how}): {hazard.why}; "
                                    f"{ctx.target.name} is {ctx.target.capability_text}{suggestion}")


def _suggest(key: fk.FrameworkKey, kind, target) -> str:
    if kind.fix == "dtype":
        wanted, _ = knowledge_choice(key.role or "compute", target)
        spelled = key.spellings.get(wanted)
        return f"; pass --{key.names[0]} {spelled}" if spelled else f"; {key.framework.label} offers no {wanted} here"
    if kind.fix == "value" and key.safe:
        return f"; pass --{key.names[0]} {key.safe}"
    return ""


class DataExamples:
    """A rule's `bad`/`good` examples: the ones written in the rule plus the rows of the framework keys of its
    kinds (`bad = [{text, fixed, path, target, unsafe}]` in rules/frameworks/*/*.toml), read on first use."""

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
                        extra = {"target": row.get("target", "sm61"), "path": row.get("path", "config.yaml")}
                        if which == "bad":
                            rows.append(Bad(row["text"], fixed=row.get("fixed"), unsafe=row.get("unsafe", False), **extra))
                        else:
                            rows.append(Good(row["text"], **extra))
            self._cache[cls] = tuple(self.written) + tuple(rows)
        return self._cache[cls]
