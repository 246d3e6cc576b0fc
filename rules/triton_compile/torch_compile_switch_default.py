from __future__ import annotations

import libcst as cst

from rlcompat.analysis import pyhelpers as h
from rlcompat.analysis.deadfields import dead_field, enclosing_class
from rlcompat.analysis.pyswitches import is_true, switched_on, turn_off
from rlcompat.contract import Bad, Good, PythonRule, VERL_091

_SWITCHES = ("use_torch_compile", "torch_compile", "use_compile", "enable_torch_compile")


class TorchCompileSwitchDefault(PythonRule):
    code = "RLC306"
    name = "torch-compile-switch-default"
    title = "A `use_torch_compile` switch defaulting to True on a GPU older than Volta"
    what = (
        "Finds a `use_torch_compile`-style switch set to `True` in Python: a dataclass field or class attribute "
        "default (`use_torch_compile: bool = True`), a parameter default, a keyword argument or a config-dict value. "
        "verl 0.9.1's FSDP engine configs default it to True, and the engine then compiles its entropy function "
        "[S40]. An assignment under an `if` that tests another compile setting by name (`if self.torch_compile_mode "
        "is not None ...: self.torch_compile = True`, transformers' TrainingArguments) follows the user's setting, is "
        "not a default, and is not reported."
    )
    why = (
        "The switch turns on torch.compile, whose inductor backend refuses GPUs below compute capability 7.0 with "
        "`GPUTooOldForTriton` on the first call [S17]. Turning the default off keeps every config that does not set "
        "it explicitly off the compiler; YAML and launch-script settings are covered by RLC351."
    )
    fix_safety = "The fix writes `False`: the same computation runs eagerly. It is safe."
    names = _SWITCHES
    sources = ("S17", "S40")

    bad = (
        Bad("@dataclass\nclass FSDPEngineConfig:\n    use_torch_compile: bool = True\n",
            fixed="@dataclass\nclass FSDPEngineConfig:\n    use_torch_compile: bool = False\n"),
        Bad("def build(model, use_torch_compile=True):\n    pass\n",
            fixed="def build(model, use_torch_compile=False):\n    pass\n"),
        Bad("cfg = EngineConfig(use_torch_compile=True)\n", fixed="cfg = EngineConfig(use_torch_compile=False)\n"),
        Bad('overrides = {"use_torch_compile": True}\n', fixed='overrides = {"use_torch_compile": False}\n'),
        # Set unconditionally in __post_init__: every config gets it.
        Bad("class Args:\n    def __post_init__(self):\n        self.torch_compile = True\n",
            fixed="class Args:\n    def __post_init__(self):\n        self.torch_compile = False\n"),
        # axolotl 0.21.0 `torch_compile: auto`: on wherever torch is installed, whatever the GPU.
        Bad('def resolve(data, env):\n    if data.get("torch_compile") == "auto":\n        if env.get("torch_version"):\n'
            '            data["torch_compile"] = True\n',
            fixed='def resolve(data, env):\n    if data.get("torch_compile") == "auto":\n        if env.get("torch_version"):\n'
                  '            data["torch_compile"] = False\n'),
    )
    good = (
        Good("@dataclass\nclass C:\n    use_torch_compile: bool = False\n"),
        Good("@dataclass\nclass C:\n    use_torch_compile: bool = True\n", target="sm70"),
        Good("if cfg.use_torch_compile == True:\n    pass\n"),
        Good("use_torch_compile = torch.cuda.get_device_capability()[0] >= 7\n"),
        Good("@dataclass\nclass ActorConfig(BaseConfig):\n    use_torch_compile: bool = True\n",
             path="verl/workers/config/actor.py", frameworks=VERL_091),
        # transformers' TrainingArguments.__post_init__ (training_args.py, 5.10.4): compile is switched on only when
        # a compile mode or backend was asked for; the field's default stays False.
        Good("class TrainingArguments:\n    def __post_init__(self):\n"
             "        if (self.torch_compile_mode is not None or self.torch_compile_backend is not None) "
             "and not self.torch_compile:\n            self.torch_compile = True\n"),
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
        if role.kind == "assign" and _follows_compile_switch(ctx.ancestors):
            return  # set when another compile setting asks for it: not the default every config starts from
        turn_off(node, ctx, f"`{role.name}` defaults to True: torch.compile's inductor refuses {self.target.name} "
                            f"({self.target.capability_text}; it needs 7.0+); default it to False", "default it to False")


def _follows_compile_switch(ancestors) -> bool:
    """The statement runs only when the innermost `if` of its own function or class body tests a compile setting by
    name (`if self.torch_compile_mode is not None ...:`): the user's setting decides, and is where compile is chosen.
    An `if` that probes the environment (axolotl's `torch_compile: auto` turns compile on wherever torch is
    installed) decides by itself, and a default under it is still one."""
    for parent in reversed(ancestors):
        if isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
        if isinstance(parent, cst.If):
            return any("compile" in n.value.lower() for n in h.nodes_in(parent.test, cst.Name))
    return False


