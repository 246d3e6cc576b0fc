from __future__ import annotations

import libcst as cst

from rlcompat.analysis import pyhelpers as h
from rlcompat.analysis.deadfields import dead_field, enclosing_class
from rlcompat.analysis.pyswitches import is_true, switched_on, turn_off
from rlcompat.lang.python import PythonRule
from rlcompat.rule import VERL_091, Bad, Good

_SWITCHES = ("use_torch_compile", "torch_compile", "use_compile", "enable_torch_compile")


class TorchCompileSwitchDefault(PythonRule):
    code = "RLC306"
    name = "torch-compile-switch-default"
    title = "A `use_torch_compile` switch defaulting to True on a GPU older than Volta"
    what = (
        "Finds a `use_torch_compile`-style switch set to `True` in Python: a dataclass field or class attribute "
        "default (`use_torch_compile: bool = True`), a parameter default, a keyword argument or a config-dict value. "
        "verl 0.9.1's FSDP engine configs default it to True, and the engine then compiles its entropy function "
        "[S40]."
    )
    why = (
        "The switch turns on torch.compile, whose inductor backend refuses GPUs below compute capability 7.0 with "
        "`GPUTooOldForTriton` on the first call [S17]. Turning the default off keeps every config that does not set "
        "it explicitly off the compiler; YAML and launch-script settings are covered by RLC351."
    )
    fix_safety = "The fix writes `False`: the same computation runs eagerly. It is safe."
    triggers = _SWITCHES
    sources = ("S17", "S40")

    bad = (
        Bad("@dataclass\nclass FSDPEngineConfig:\n    use_torch_compile: bool = True\n",
            fixed="@dataclass\nclass FSDPEngineConfig:\n    use_torch_compile: bool = False\n"),
        Bad("def build(model, use_torch_compile=True):\n    pass\n",
            fixed="def build(model, use_torch_compile=False):\n    pass\n"),
        Bad("cfg = EngineConfig(use_torch_compile=True)\n", fixed="cfg = EngineConfig(use_torch_compile=False)\n"),
        Bad('overrides = {"use_torch_compile": True}\n', fixed='overrides = {"use_torch_compile": False}\n'),
    )
    good = (
        Good("@dataclass\nclass C:\n    use_torch_compile: bool = False\n"),
        Good("@dataclass\nclass C:\n    use_torch_compile: bool = True\n", target="sm70"),
        Good("if cfg.use_torch_compile == True:\n    pass\n"),
        Good("use_torch_compile = torch.cuda.get_device_capability()[0] >= 7\n"),
        Good("@dataclass\nclass ActorConfig(BaseConfig):\n    use_torch_compile: bool = True\n",
             path="verl/workers/config/actor.py", frameworks=VERL_091),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.inductor

    def visit_Name(self, node: cst.Name, ctx) -> None:
        if not is_true(node):
            return
        role = h.role_of(node, ctx.ancestors)
        if role.kind not in ("assign", "param-default", "keyword", "dict-value") or role.name not in _SWITCHES:
            return
        if not switched_on(node, ctx.ancestors):
            return
        if role.kind == "assign" and dead_field(ctx.verl, ctx.path, enclosing_class(ctx.ancestors), role.name):
            return  # a default the scanned verl version never reads: RLC356 says so instead of "fixing" it
        turn_off(node, ctx, f"`{role.name}` defaults to True: torch.compile's inductor refuses {self.target.name} "
                            f"({self.target.capability_text}; it needs 7.0+); default it to False", "default it to False")
