from __future__ import annotations

import libcst as cst

from rlcompat.knowledge import precision
from rlcompat.analysis import pyhelpers as h
from rlcompat.contract import Bad, FixSafety, Good, PendingFix, PythonRule
from rlcompat.analysis.param_defaults import default_is_dead


def _names_dtype(key: str) -> bool:
    """A keyword-arguments key that chooses a dtype (`torch_dtype`, `dtype`, `param_dtype`, `mixed_precision`)."""
    low = key.lower()
    return "dtype" in low or "precision" in low


class TorchBfloat16Dtype(PythonRule):
    code = "RLC101"
    name = "torch-bfloat16-dtype"
    title = "`torch.bfloat16` selected as a dtype on a GPU without bf16"
    what = (
        "Finds `torch.bfloat16` (however imported or aliased, and through `getattr(torch, \"bfloat16\")`) where it "
        "is chosen as a dtype: passed to a call (`torch_dtype=`, `dtype=`, `.to(...)`, `autocast(dtype=...)`, "
        "`MixedPrecision(param_dtype=...)`), given as a default (`getattr(obj, name, torch.bfloat16)`, a parameter "
        "default), assigned, or the value of a keyword-arguments dict under a key that names a dtype or precision "
        "(`pipeline(..., model_kwargs={\"torch_dtype\": torch.bfloat16})`, "
        "`from_pretrained(p, **{\"torch_dtype\": ...})`; a table keyed by dtype names, `{\"bf16\": torch.bfloat16}`, "
        "is not). Comparisons, dtype tables, subscripts, capability-guarded choices and choices that "
        "follow a bf16 switch (`if args.bf16: dtype = torch.bfloat16`; the switch is reported where it is set) or a "
        "precision option's value (`torch.float16 if args.mixed_precision == \"fp16\" else torch.bfloat16`; the "
        "option is judged where it is set) are not findings."
        " A parameter default no call can leave in force is not a finding: a function (or class) of a script run "
        "as `__main__` outside any package whose every call in its tree passes the argument, by keyword or "
        "position and never through `*args`/`**kwargs` alone (rlcompat/analysis/param_defaults.py); the value "
        "each call passes is judged where it is written. A package's function keeps the finding: users call it "
        "from outside the tree, unless framework knowledge names its package closed (`closed_package`: "
        "align-anything, installed from its checkout and run only through its own modules)."
    )
    why = (
        "GPUs before Ampere (compute capability < 8.0: P40, P100, V100, T4, RTX 20xx) have no bf16 hardware [S1]. "
        "PyTorch emulates some bf16 ops slowly, but vLLM refuses bf16 below 8.0 [S6], no fused SDPA backend "
        "accepts bf16 there [S16], Triton kernels that touch bf16 fail in ptxas (`Feature '.bf16' requires .target "
        "sm_80 or higher`) [S37], and inductor skips bf16 graphs [S5]."
    )
    fix_safety = (
        "The replacement follows the precision policy (rlcompat/knowledge/data/precision.toml, docs/precision.md) for the role the dtype "
        "plays. Training weights (`torch_dtype=`, `.to(...)`, `param_dtype=`, defaults) become `torch.float32` on every "
        "target without bf16: safe, the same computation with more precision and range (fp16 AMP needs fp32 master "
        "weights anyway [S60]). Autocast and compute dtypes (`autocast(dtype=)`, `bnb_4bit_compute_dtype=`) and rollout "
        "dtypes (vLLM's `LLM(dtype=)`) become `torch.float16` on sm70/sm75, which is unsafe: fp16 overflows above "
        "65504 where bf16 did not, and bf16-pretrained models can turn NaN [S66]; `torch.float32` on sm5x/sm6x (safe)."
    )
    names = ("bfloat16",)
    resolves_from = ("torch",)  # `torch.bfloat16`, however imported
    # where it is chosen
    reports_roles = frozenset({"keyword", "positional", "default", "assign", "param-default", "dict-value"})
    sources = ("S1", "S5", "S6", "S8", "S16", "S37", "S60", "S66")

    bad = (
        Bad("import torch\nmodel = AutoModel.from_pretrained(p, torch_dtype=torch.bfloat16)\n",
            fixed="import torch\nmodel = AutoModel.from_pretrained(p, torch_dtype=torch.float32)\n"),
        Bad("import torch as th\nx = y.to(th.bfloat16)\n", fixed="import torch as th\nx = y.to(th.float32)\n"),
        Bad("import torch\nwith torch.autocast(device_type='cuda', dtype=torch.bfloat16):\n    pass\n",
            target="sm75", unsafe=True,
            fixed="import torch\nwith torch.autocast(device_type='cuda', dtype=torch.float16):\n    pass\n"),
        Bad("import torch\nmp = MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)\n",
            fixed="import torch\nmp = MixedPrecision(param_dtype=torch.float32, reduce_dtype=torch.float32)\n"),
        Bad("import torch\nclass E:\n    def __init__(self):\n        self._autocast_dtype = torch.bfloat16\n",
            fixed="import torch\nclass E:\n    def __init__(self):\n        self._autocast_dtype = torch.float32\n"),
        Bad("import torch\ndtype = getattr(self, '_autocast_dtype', torch.bfloat16)\n",
            fixed="import torch\ndtype = getattr(self, '_autocast_dtype', torch.float32)\n"),
        Bad("import torch\ndef load(dtype=torch.bfloat16):\n    pass\n",
            fixed="import torch\ndef load(dtype=torch.float32):\n    pass\n"),
        Bad("import torch\nd = torch.float32 if training else torch.bfloat16\n",
            fixed="import torch\nd = torch.float32 if training else torch.float32\n"),
        Bad("import torch\nx = t.to(getattr(torch, 'bfloat16'))\n", fixed="import torch\nx = t.to(getattr(torch, 'float32'))\n"),
        Bad("import torch\nfrom torch import bfloat16\nx = t.to(bfloat16)\n",
            fixed="import torch\nfrom torch import bfloat16\nx = t.to(torch.float32)\n"),
        Bad("from torch import bfloat16 as bf\nx = t.to(bf)\n"),  # no `torch` name to write the fix with
        Bad("import torch\nif p.dtype != torch.bfloat16:\n    p = p.to(torch.bfloat16)\n",
            fixed="import torch\nif p.dtype != torch.bfloat16:\n    p = p.to(torch.float32)\n"),
        Bad("import torch\nmodel = AutoModelForCausalLM.from_pretrained(p, torch_dtype=torch.bfloat16)\n", target="sm70",
            fixed="import torch\nmodel = AutoModelForCausalLM.from_pretrained(p, torch_dtype=torch.float32)\n"),
        Bad("import torch\nq = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype=torch.bfloat16)\n",
            target="sm75", unsafe=True,
            fixed="import torch\nq = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype=torch.float16)\n"),
        Bad("import torch\npipe = pipeline('text-classification', model=p, model_kwargs={'torch_dtype': torch.bfloat16})\n",
            fixed="import torch\npipe = pipeline('text-classification', model=p, model_kwargs={'torch_dtype': torch.float32})\n"),
        Bad("import torch\nkw = {'torch_dtype': torch.bfloat16, 'device_map': 'auto'}\nm = AutoModel.from_pretrained(p, **kw)\n",
            fixed="import torch\nkw = {'torch_dtype': torch.float32, 'device_map': 'auto'}\nm = AutoModel.from_pretrained(p, **kw)\n"),
        Bad("import torch\nllm = LLM(model=p, dtype=torch.bfloat16)\n", target="sm75", unsafe=True,
            fixed="import torch\nllm = LLM(model=p, dtype=torch.float16)\n"),
    )
    good = (
        Good("import torch\nif args.bf16:\n    dtype = torch.bfloat16\nelif args.fp16:\n    dtype = torch.float16\n"),
        Good("import torch\nm = m.to(dtype=torch.bfloat16) if cfg.bf16_full_eval else m\n"),
        Good("import torch\nd = torch.float16 if args.mixed_precision == 'fp16' else torch.bfloat16\n"),
        Good("import torch\nif precision == 'fp16':\n    d = torch.float16\nelse:\n    d = torch.bfloat16\n"),
        Good("import torch\nif dtype == torch.bfloat16:\n    pass\n"),
        Good("import torch\nBFLOAT_LIST = ['bf16', 'bfloat16', torch.bfloat16]\n"),
        Good("import torch\nNAMES = {torch.bfloat16: 'bf16'}\n"),
        Good("import torch\nDTYPES = {'bf16': torch.bfloat16, 'fp16': torch.float16}\n"),
        Good("import torch\ndef to_dtype(p):\n    return torch.bfloat16\n"),
        Good("import torch\nx = torch.zeros(3, dtype=torch.bfloat16)\n", target="sm80"),
        Good("import torch\nd = torch.bfloat16 if torch.cuda.is_bf16_supported(including_emulation=False) else torch.float32\n"),
        Good("import torch\nd = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16\n", target="sm70"),  # RLC110
        Good("import torch\nif torch.cuda.get_device_capability()[0] >= 8:\n    dtype = torch.bfloat16\n"),
        Good("# torch_dtype=torch.bfloat16 in a comment\nx = 1\n"),
        Good("'''torch.bfloat16 in a docstring'''\n"),
        Good("import torch\nlogger.info('using %s', torch.bfloat16)\n"),
        Good("bfloat16 = 3\nx = t.to(bfloat16)\n"),  # not torch's
        Good("import torch\nprint(torch.finfo(torch.bfloat16).max)\n"),
        Good("import torch\nfor dtype in floating_types_and(torch.half, torch.bfloat16):\n    check(dtype)\n"),
        Good("import torch\n@dtypes(torch.float32, torch.bfloat16)\ndef test_add(self, device, dtype):\n    pass\n"),
        Good("import torch\nSUPPORTED = supported(torch.float16, torch.bfloat16)\n"),
        Good("import torch\nclass T:\n    bfloat16 = _conversion_method_template(dtype=torch.bfloat16)\n"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.bf16_native

    def visit_Attribute(self, node: cst.Attribute, ctx) -> None:
        if node.attr.value == "bfloat16" and ctx.qualname(node) == "torch.bfloat16":
            self._check(node, ctx, fix_node=node.attr, fix_text=lambda dtype: dtype)

    def visit_Name(self, node: cst.Name, ctx) -> None:
        if ctx.imports.names.get(node.value) != "torch.bfloat16":
            return
        parent = ctx.ancestors[-1] if ctx.ancestors else None
        if isinstance(parent, (cst.ImportAlias, cst.AsName, cst.Attribute)):
            return  # the import itself, or `x.bfloat16` (handled by visit_Attribute)
        torch_name = ctx.imports.local_name_for("torch")
        self._check(node, ctx, fix_node=node if torch_name else None, fix_text=lambda dtype: f"{torch_name}.{dtype}")

    def visit_Call(self, node: cst.Call, ctx) -> None:
        if ctx.qualname(node) == "torch.bfloat16":
            literal = node.args[1].value
            self._check(node, ctx, fix_node=literal, fix_text=lambda dtype: h.requote(literal, dtype))

    def _dtype(self, role, ctx) -> str:
        """The policy's dtype for the role this bf16 plays; float32 wherever the policy would keep bf16."""
        name = f"{role.name or h.enclosing_assign_name(ctx.ancestors)} {h.enclosing_class_name(ctx.ancestors)}"
        wanted = precision.dtype_for(self.target, precision.role_of_binding(role.call_name, name))
        return "float16" if wanted == "float16" else "float32"

    def _check(self, node, ctx, fix_node, fix_text) -> None:
        role = h.role_of(node, ctx.ancestors)
        if role.kind not in self.reports_roles:
            return
        if role.kind == "dict-value" and not _names_dtype(role.name):
            return  # a table keyed by dtype names (`{"bf16": torch.bfloat16}`) lists dtypes, it chooses none
        if h.guarded_by(ctx.ancestors, h.is_capability_guard) or h.guarded_by(ctx.ancestors, h.is_bf16_probe) or h.test_mentions(ctx.ancestors, ("bf16", "bfloat16")):
            return
        if h.follows_precision_value(ctx.ancestors):
            return  # `torch.float16 if args.mixed_precision == "fp16" else torch.bfloat16`: judged where the option is set
        if any(w in h.enclosing_assign_name(ctx.ancestors).lower() for w in ("bf16", "bfloat16")):
            return  # defines the bf16 thing itself (`bfloat16 = _conversion_method(torch.bfloat16)`): not a choice
        if role.kind == "param-default" and default_is_dead(ctx):
            return  # no call leaves it in force (analysis/param_defaults.py): what each call passes is judged there
        dtype = self._dtype(role, ctx)
        safety = FixSafety.SAFE if dtype == "float32" else FixSafety.UNSAFE
        where = f" as `{role.name}`" if role.name else ""
        message = (
            f"torch.bfloat16 selected{where}: {self.target.name} ({self.target.architecture}) has no bf16 hardware; "
            f"use torch.{dtype}"
        )
        fix = PendingFix([(fix_node, fix_text(dtype))], safety, f"use torch.{dtype}") if fix_node is not None else None
        ctx.report(node, message, fix)
