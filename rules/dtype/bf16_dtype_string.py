from __future__ import annotations

import libcst as cst

from rlcompat.knowledge import config_class_defaults, precision
from rlcompat.analysis import pyhelpers as h
from rlcompat.analysis.deadfields import dead_field, enclosing_class
from rlcompat.contract import Bad, FixSafety, Good, PendingFix, PythonRule, VERL_091
from rlcompat.knowledge.spellings import bf16_replacements
from rlcompat.analysis.param_defaults import default_is_dead
from rlcompat.analysis.held_fields import held_only_when_set

_SKYRL_MP = ("from dataclasses import dataclass, field\nfrom typing import Optional\n\nfrom skyrl.train.config import BaseConfig\n\n\n"
             "@dataclass\nclass MixedPrecisionConfig(BaseConfig):\n    param_dtype: str = 'bf16'\n\n\n"
             "@dataclass\nclass FSDPConfig(BaseConfig):\n    mixed_precision: {parent}\n")

# accelerate's `mixed_precision` takes "no" | "fp16" | "bf16" | "fp8": fp32 is spelled "no".
_MIXED_PRECISION = {"float32": "no", "float16": "fp16"}


def _unread_field(keyword: str, ctx) -> bool:
    """Whether `keyword` of the call the string is passed to is a field of a framework config class that no code of
    the release the tree runs reads (XTuner 1.0.0rc0/1.0.1's RolloutConfig.dtype: no rollout backend passes it on)."""
    call = next((a for a in reversed(ctx.ancestors) if isinstance(a, cst.Call)), None)
    if call is None:
        return False
    return config_class_defaults.unread(ctx.qualname(call.func), keyword, config_class_defaults.release_in(ctx))


def _dtype_like(name: str) -> bool:
    low = name.lower()
    return "dtype" in low or "precision" in low


class Bf16DtypeString(PythonRule):
    code = "RLC102"
    name = "bf16-dtype-string"
    title = "`\"bfloat16\"` / `\"bf16\"` chosen as a dtype by name on a GPU without bf16"
    what = (
        "Finds the strings `\"bfloat16\"`, `\"bf16\"` and `\"torch.bfloat16\"` where code picks a dtype by name: as the "
        "default of `.get(...)`/`getattr(...)`, as a keyword whose name says dtype or precision (`torch_dtype=`, "
        "`dtype=`, `param_dtype=`, `mixed_precision=`), as the argument of a `*dtype*` converter "
        "(`PrecisionType.to_dtype(\"bf16\")`), or as the default of a dtype-named parameter, field or variable. "
        "Comparisons, name tables, log strings, docstrings and choices that follow a bf16 switch "
        "(`elif self.bf16: mixed_precision = \"bf16\"`) are not findings."
        " A parameter default no call can leave in force is not a finding: a function (or class) of a script run "
        "as `__main__` outside any package whose every call in its tree passes the argument, by keyword or "
        "position and never through `*args`/`**kwargs` alone (rlcompat/analysis/param_defaults.py); the value "
        "each call passes is judged where it is written. A package's function keeps the finding: users call it "
        "from outside the tree, unless framework knowledge names its package closed (`closed_package`: "
        "align-anything, installed from its checkout and run only through its own modules). A field default of a nested config class that a run reads only where it sets the "
        "Optional field holding it (framework knowledge `parent`: skyrl's `MixedPrecisionConfig.param_dtype` under "
        "`FSDPConfig.mixed_precision = None`, for the release the tree runs) is not a finding: the None is reported "
        "at that field (RLC118)."
    )
    why = (
        "The name is turned into `torch.bfloat16` later, far from the line a person would grep for; on compute "
        "capability < 8.0 that dtype has no hardware [S1] and is refused by vLLM [S6] and Triton kernels [S37]."
    )
    fix_safety = (
        "As RLC101, by the precision policy (docs/precision.md): a training dtype (`torch_dtype=`, `param_dtype`, a "
        "default) becomes `fp32`/`float32`, safe; autocast (`mixed_precision=`, `*compute_dtype`) and rollout (vLLM "
        "`LLM(dtype=)`) dtypes become `fp16`/`float16` on sm70/sm75, unsafe (fp16's smaller range [S66]). The spelling "
        "follows the original (`bf16` -> `fp32`, `bfloat16` -> `float32`); accelerate's `mixed_precision` gets `\"no\"`."
    )
    names = ("bf16", "bfloat16")
    sources = ("S1", "S6", "S37", "S66")

    bad = (
        Bad("dtype = config.get('dtype', 'bfloat16')\n", fixed="dtype = config.get('dtype', 'float32')\n"),
        Bad('p = PrecisionType.to_dtype(mp.get("param_dtype", "bf16"))\n',
            fixed='p = PrecisionType.to_dtype(mp.get("param_dtype", "fp32"))\n'),
        Bad('x = PrecisionType.to_dtype("bf16")\n', fixed='x = PrecisionType.to_dtype("fp32")\n'),
        Bad("@dataclass\nclass C:\n    mp_param_dtype: str = 'bf16'\n",
            fixed="@dataclass\nclass C:\n    mp_param_dtype: str = 'fp32'\n"),
        Bad("def build(model, dtype='bfloat16'):\n    pass\n", target="sm70",
            fixed="def build(model, dtype='float32'):\n    pass\n"),
        Bad("acc = Accelerator(mixed_precision='bf16')\n", target="sm75", unsafe=True,
            fixed="acc = Accelerator(mixed_precision='fp16')\n"),
        Bad("llm = LLM(model=p, dtype='bfloat16')\n", target="sm70", unsafe=True, fixed="llm = LLM(model=p, dtype='float16')\n"),
        Bad('m = AutoModel.from_pretrained(p, torch_dtype="bfloat16")\n',
            fixed='m = AutoModel.from_pretrained(p, torch_dtype="float32")\n'),
        Bad('acc = Accelerator(mixed_precision="bf16")\n', fixed='acc = Accelerator(mixed_precision="no")\n'),
        Bad('kwargs = {"torch_dtype": "bfloat16"}\n', fixed='kwargs = {"torch_dtype": "float32"}\n'),
        Bad("class C:\n    dtype: str = field(default='bf16')\n", fixed="class C:\n    dtype: str = field(default='fp32')\n"),
        Bad("@dataclass\nclass RolloutConfig:\n    dtype: str = 'bfloat16'\n", target="sm70", unsafe=True,
            fixed="@dataclass\nclass RolloutConfig:\n    dtype: str = 'float16'\n"),
        # every run builds the class with its defaults
        Bad(_SKYRL_MP.format(parent="MixedPrecisionConfig = field(default_factory=MixedPrecisionConfig)"),
            fixed=_SKYRL_MP.format(parent="MixedPrecisionConfig = field(default_factory=MixedPrecisionConfig)").replace("'bf16'", "'fp32'"),
            path="skyrl/train/config/config.py", frameworks={"skyrl": "0.4.0"}),
    )
    good = (
        Good("if self.bf16:\n    self.mixed_precision = 'bf16'\n"),
        Good("if dtype == 'bf16':\n    pass\n"),
        Good("BFLOAT_LIST = ['bf16', 'bfloat16']\n"),
        Good("class PrecisionType:\n    BFLOAT = 'bf16'\n"),
        Good("logger.info('bf16 is not supported')\n"),
        Good("x = config.get('dtype', 'bfloat16')\n", target="sm90"),
        Good("NAMES = {'bf16': torch.bfloat16}\n"),
        Good("help_text = 'bf16'\n"),
        Good("x = f'{dtype}bf16'\n"),
        Good("@dataclass\nclass EngineConfig(BaseConfig):\n    dtype: str = 'bfloat16'\n", path="verl/workers/config/engine.py",
             frameworks=VERL_091),
        # read only by a run that sets FSDPConfig.mixed_precision (default None: RLC118 reports that, skyrl's knowledge)
        Good(_SKYRL_MP.format(parent="Optional[MixedPrecisionConfig] = None"), path="skyrl/train/config/config.py",
             frameworks={"skyrl": "0.4.0"}),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.bf16_native

    def visit_SimpleString(self, node: cst.SimpleString, ctx) -> None:
        value = h.string_value(node)
        if value not in bf16_replacements():  # the bf16 spellings dtype-parsing code accepts (rlcompat/knowledge/data/spellings.toml)
            return
        role = h.role_of(node, ctx.ancestors)
        if not self._selects(role, ctx):
            return
        if h.guarded_by(ctx.ancestors, h.is_capability_guard) or h.guarded_by(ctx.ancestors, h.is_bf16_probe) or h.test_mentions(ctx.ancestors, ("bf16", "bfloat16")):
            return
        if role.kind == "assign" and dead_field(ctx.verl, ctx.path, enclosing_class(ctx.ancestors), role.name):
            return  # a default the scanned verl version never reads: RLC356 says so instead of "fixing" it
        if role.kind == "assign" and held_only_when_set(ctx, enclosing_class(ctx.ancestors), role.name):
            return  # read only where a run sets the Optional field holding the class: its None is judged there
        if role.kind == "keyword" and _unread_field(role.name, ctx):
            return  # a field no code of the tree's release reads (config_class_defaults.toml [[unread]])
        if role.kind == "param-default" and default_is_dead(ctx):
            return  # no call leaves it in force (analysis/param_defaults.py): what each call passes is judged there
        name = role.name if role.name not in ("", "default") else h.enclosing_assign_name(ctx.ancestors)
        name = f"{name} {h.enclosing_class_name(ctx.ancestors)}"  # `dtype` of a `RolloutConfig` is a rollout dtype
        wanted = precision.dtype_for(self.target, precision.role_of_binding(role.call_name, name))
        dtype = "float16" if wanted == "float16" else "float32"
        new = _MIXED_PRECISION[dtype] if role.name == "mixed_precision" else bf16_replacements()[value][dtype != "float32"]
        safety = FixSafety.SAFE if dtype == "float32" else FixSafety.UNSAFE
        where = f" for `{role.name}`" if role.name else ""
        ctx.report(
            node,
            f'"{value}" chosen{where}: {self.target.name} ({self.target.architecture}) has no bf16 hardware; use "{new}"',
            PendingFix([(node, h.requote(node, new))], safety, f'use "{new}"'),
        )

    @staticmethod
    def _selects(role, ctx) -> bool:
        if role.kind == "default":
            return True
        if role.kind == "keyword":
            if role.name == "default":
                return _dtype_like(h.enclosing_assign_name(ctx.ancestors))
            return _dtype_like(role.name)
        if role.kind == "positional":
            return "dtype" in role.call_name.lower()
        if role.kind in ("assign", "param-default", "dict-value"):
            return _dtype_like(role.name)
        return False
