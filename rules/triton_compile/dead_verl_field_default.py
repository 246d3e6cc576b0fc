from __future__ import annotations

import libcst as cst

from rlcompat.analysis import pyhelpers as h
from rlcompat.analysis.deadfields import dead_field, enclosing_class
from rlcompat.contract import Bad, Good, PythonRule, VERL_091

ACTOR = "verl/workers/config/actor.py"
ENGINE = "verl/workers/config/engine.py"


class DeadVerlFieldDefault(PythonRule):
    code = "RLC356"
    name = "dead-verl-field-default"
    title = "A verl config dataclass default that the scanned verl version never reads"
    what = (
        "Finds the Python declaration of a key that `rlcompat/knowledge/data/verl/<version>.toml` lists as dead for the detected verl "
        "version (`ActorConfig.use_torch_compile` in `verl/workers/config/actor.py`, the Megatron-only "
        "`EngineConfig.dtype` in `verl/workers/config/engine.py` for verl 0.8 and 0.9) [S51]. The YAML and launch-"
        "script rules (RLC106, RLC352) give the same verdict on the same keys; RLC102 and RLC306 leave these "
        "defaults alone."
    )
    why = (
        "Changing a default nothing reads changes nothing: the compile (or bf16) stays on through the key that is "
        "read. Where the scanned tree's verl version is unknown nothing is reported, since the key is read in other "
        "releases (verl 0.7's default worker reads `actor.use_torch_compile`)."
    )
    fix_safety = "No fix: the live key is a different field (named in the message)."
    severity = "warning"
    names = ("use_torch_compile", "dtype: str")
    sources = ("S51",)

    bad = (
        Bad("@dataclass\nclass ActorConfig(BaseConfig):\n    use_torch_compile: bool = True\n", path=ACTOR,
            frameworks=VERL_091),
        Bad("@dataclass\nclass EngineConfig(BaseConfig):\n    dtype: str = \"bfloat16\"\n", path=ENGINE,
            frameworks=VERL_091),
    )
    good = (
        Good("@dataclass\nclass FSDPEngineConfig(EngineConfig):\n    use_torch_compile: bool = True\n", path=ENGINE),
        Good("@dataclass\nclass ActorConfig(BaseConfig):\n    use_torch_compile: bool = True\n", path="my/actor.py"),
        Good("@dataclass\nclass ActorConfig(BaseConfig):\n    use_torch_compile: bool = True\n", path=ACTOR,
             target="sm70"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.bf16_native

    def visit_AnnAssign(self, node: cst.AnnAssign, ctx) -> None:
        self._check(node, h.target_name(node.target), node.value, ctx)

    def _check(self, node, field_name: str, value, ctx) -> None:
        if value is None:
            return
        found = dead_field(ctx.verl, ctx.path, enclosing_class(ctx.ancestors), field_name)
        if found is None:
            return
        dead, knowledge = found
        if "compile" in field_name and self.target.inductor:
            return  # the hazard it looks like it controls is torch.compile's, which this target runs
        shown = h.string_value(value) if isinstance(value, cst.SimpleString) else getattr(value, "value", "")
        ctx.report(node.target, f"{dead.field.split(':')[1]} (`{dead.key}`, default {shown}) does nothing in "
                                f"{knowledge.label} for the FSDP engine ({dead.why}); set {dead.use} instead")
