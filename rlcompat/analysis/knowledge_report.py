"""How a framework key's finding is worded and fixed: the knowledge it rests on (a release's file:line, or what is
used instead where the tree runs a release rlcompat has not read), and the edit the precision policy asks for
(rlcompat.knowledge.precision)."""

from __future__ import annotations

from rlcompat.analysis.confighelpers import remove_flag, where
from rlcompat.analysis.knowledge_keys import tree_identity
from rlcompat.findings import Edit, FixSafety
from rlcompat.knowledge import frameworks as fk
from rlcompat.knowledge.precision import dtype_for, knowledge_choice
from rlcompat.lang.settings import ConfigContext, Setting


NO_REMEDY = "no setting makes it work on this GPU"


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


def knowledge_note(ctx: ConfigContext, key: fk.FrameworkKey, version_known: bool) -> str:
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


def report(view, ctx, setting: Setting, key: fk.FrameworkKey, version_known: bool, hazard, kind) -> None:
    target = ctx.target
    shown = setting.label
    value = setting.value if setting.value != "" else "on"
    runtime = f" ({key.auto})" if key.auto and (setting.value or "").lower() == "auto" else ""
    head = (f"{shown} is {value}{runtime}{where(setting)}: {hazard.why}; {target.name} is {target.capability_text} "
            f"({knowledge_note(ctx, key, version_known)})")
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


def report_resolved(ctx, setting: Setting, key: fk.FrameworkKey, value: str, version_known: bool, hazard, kind) -> None:
    """A value the framework's own code gives a key (a config class' default, a flag another flag forces): reported
    where it is written, with no fix there (a library default changes every caller); the advice names the setting
    to write where a config is built or a command is given."""
    target = ctx.target
    unset = getattr(setting, "unset", "")
    how = f"; {knowledge_note(ctx, key, version_known)}: `{unset}` is {value}" if unset else f"; {knowledge_note(ctx, key, version_known)}"
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
