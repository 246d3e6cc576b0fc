from __future__ import annotations

import libcst as cst

from rlcompat.analysis import pyhelpers as h
from rlcompat.contract import Bad, Good, PythonRule
from rlcompat.knowledge import config_class_defaults
from rlcompat.knowledge import frameworks as fk

# The keywords the table's rows name: narrowing keeps them in a call (lang/pyspeed/narrow.py _READ_KEYWORDS), or a
# call that sets one would read here as built without it.
RLC134_KINDS = frozenset({"bf16-switch"})  # those rows are RLC134's, which writes the precision switches
FIELDS = config_class_defaults.fields_of(but=RLC134_KINDS)

_FSDP = "from xtuner.v1.config import FSDPConfig\n"
_QWEN3 = "from xtuner.v1.model.dense.qwen3 import Qwen3Dense8BConfig\n"


class FrameworkConfigClassDefault(PythonRule):
    code = "RLC125"
    name = "framework-config-class-default"
    title = "A framework config class built without the field whose default the GPU cannot run"
    what = (
        "Finds calls of framework config classes that rlcompat/knowledge/data/config_class_defaults.toml names (but its `bf16-switch` rows, RLC134's) "
        "(XTuner V1's `FSDPConfig`, whose param_dtype defaults to bfloat16; its sized model configs such as "
        "`Qwen3Dense8BConfig`, whose attention defaults to FlashAttention) built without any keyword that sets that "
        "field and without `**kwargs` that could, in the Python config files those frameworks load. The default is "
        "judged as a framework key of the same kind is (rlcompat/knowledge/data/frameworks/kinds.toml)."
    )
    why = (
        "A Python config file that builds the class without the field runs with the class' default: bf16 FSDP "
        "mixed precision, which has no hardware below 8.0 [S1], or FlashAttention kernels, which refuse cards below "
        "8.0 [S10] (and flex_attention, compiled, below 7.0 [S17]) [S440]."
    )
    fix_safety = (
        "No fix: the table's rows say what the release allows instead (`remedy`): XTuner 1.0.0rc0's FSDPConfig "
        "accepts no dtype but bfloat16, and its attention is set through a whole `MHAConfig` with the model's sizes."
    )
    calls = config_class_defaults.class_names(but=RLC134_KINDS)
    sources = ("S1", "S10", "S17", "S440")

    bad = (
        Bad(_FSDP + "fsdp_cfg = FSDPConfig(torch_compile=False, ep_size=1)\n"),
        Bad(_QWEN3 + "model_cfg = Qwen3Dense8BConfig()\n", target="sm75"),
    )
    good = (
        Good(_FSDP + "fsdp_cfg = FSDPConfig(param_dtype=dtype, ep_size=1)\n"),
        # a value that spells no trigger word: the keyword itself is what says the field is set
        Good(_FSDP + "fsdp_cfg = FSDPConfig(ep_size=1, param_dtype=p)\n"),
        Good(_FSDP + "fsdp_cfg = FSDPConfig(**cfg)\n"),
        Good(_FSDP + "fsdp_cfg = FSDPConfig(ep_size=1)\n", target="sm80"),
        Good(_QWEN3 + "model_cfg = Qwen3Dense8BConfig(attention=attention)\n"),
        # another project's class of the same name
        Good("class FSDPConfig:\n    pass\nfsdp_cfg = FSDPConfig()\n"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.bf16_native

    def visit_Call(self, node: cst.Call, ctx) -> None:
        name = h.call_name(node)
        if name not in self.calls:
            return
        known = config_class_defaults.called(ctx.qualname(node.func), but=RLC134_KINDS,
                                             release_of=config_class_defaults.release_in(ctx))
        if known is None:
            return
        given = {a.keyword.value for a in node.args if a.keyword is not None and a.keyword.value in FIELDS}
        if any(a.star for a in node.args) or given & set(known.fields):
            return
        kind = fk.kinds().get(known.kind)
        hazard = next((hz for hz in (kind.hazards if kind else ()) if hz.matches(known.default)
                       and not self.target.fact(hz.needs)), None)
        if hazard is None:
            return
        fields = " or ".join(f"`{f}`" for f in known.fields)
        head = (f"{name} is built without {fields}, so its default" if known.fields else
                f"{name} builds its config itself (no argument sets it), so the default")
        whose = known.release if known.known else f"the tree's release not known; as in {known.release}"
        ctx.report(node, f"{head} {known.default} ({whose}: {known.proof}) is what the run uses: {hazard.why}; "
                         f"{self.target.name} is {self.target.capability_text}. No fix is written: {known.remedy}")
