from __future__ import annotations

import libcst as cst

from rlcompat.analysis import pyhelpers as h
from rlcompat.contract import Bad, FixSafety, Good, ImportMap, PendingFix, PythonRule
from rlcompat.knowledge.spellings import half_to_fp32

_HALF_ATTRS = {"float16": "float16", "half": "float16", "bfloat16": "bfloat16"}
_WEIGHT_KEYWORDS = ("torch_dtype", "dtype")
_LOADERS = ("from_pretrained", "from_config", "_from_config")
_CASTS = {"half": "float16", "bfloat16": "bfloat16"}
_SCALERS = ("GradScaler", "ShardedGradScaler")

FP16 = "import torch\nm = AutoModelForCausalLM.from_pretrained(p, torch_dtype=torch.{dtype})\nargs = TrainingArguments(output_dir='o', fp16=True)\n"


class Fp16AmpHalfWeights(PythonRule):
    code = "RLC108"
    name = "fp16-amp-half-weights"
    title = "Model weights loaded in fp16 or bf16 in a file that trains with fp16 AMP (a grad scaler)"
    what = (
        "Finds, in a file that switches on fp16 mixed precision (`fp16=True`, `mixed_precision=\"fp16\"`, a "
        "`GradScaler(...)`, `autocast(dtype=torch.float16)`), model weights chosen in half precision: "
        "`from_pretrained(..., torch_dtype=torch.float16 | torch.bfloat16 | \"float16\" | \"bfloat16\")`, "
        "`model.half()`, `model.bfloat16()`, `model.to(torch.float16)`."
    )
    why = (
        "fp16 AMP keeps fp32 master weights: autocast computes in fp16 and the grad scaler unscales fp32 gradients. "
        "With fp16 parameters the gradients are fp16 and `GradScaler.unscale_` raises `ValueError: Attempting to "
        "unscale FP16 gradients.` at the first step [S60]. bf16 weights under fp16 autocast cast every op between "
        "bf16 and fp16, emulate bf16 below sm80 [S1], and a bf16-pretrained model overflows in fp16 [S66]."
    )
    fix_safety = (
        "The weights become `torch.float32` (`.half()`/`.bfloat16()` become `.float()`): safe on every target, it is "
        "what fp16 AMP expects (the precision policy's training-weights dtype below sm80, docs/precision.md) and costs "
        "only weight memory."
    )
    # Every statement the rule reads holds one of these (the AMP switch: fp16, GradScaler, float16; the weights:
    # float16, bfloat16, `.half()`, `torch.half` and the dtype strings of spellings.half_to_fp32, `"half"` and
    # `"bf16"` among them), so the narrowed module keeps them all: no need to parse files whole.
    names = ("fp16", "GradScaler", "float16", "bfloat16", "half", "bf16")
    # nothing is reported without an AMP switch: a grad scaler, `fp16=True`, `mixed_precision="fp16"`, `autocast(dtype=...)`
    # (words of several constructs, which no single declaration names)
    requires = (("GradScaler", "fp16", "autocast"),)
    # the calls it reads: weights loaded or cast (`_half_weights`) and the AMP switches (`_amp_switches`)
    reads_calls = (*_LOADERS, *_CASTS, "to", *_SCALERS, "autocast")
    reads_keywords = ("fp16", "mixed_precision")
    sources = ("S1", "S60", "S66")

    bad = (
        Bad(FP16.format(dtype="float16"), target="sm70", fixed=FP16.format(dtype="float32")),
        Bad(FP16.format(dtype="bfloat16"), target="sm75", fixed=FP16.format(dtype="float32")),
        Bad(FP16.format(dtype="float16"), target="sm86", fixed=FP16.format(dtype="float32")),
        Bad("import torch\nmodel = Net().cuda().half()\nscaler = torch.amp.GradScaler('cuda')\n", target="sm70",
            fixed="import torch\nmodel = Net().cuda().float()\nscaler = torch.amp.GradScaler('cuda')\n"),
        Bad("m = AutoModel.from_pretrained(p, torch_dtype='float16')\nacc = Accelerator(mixed_precision='fp16')\n",
            target="sm75", fixed="m = AutoModel.from_pretrained(p, torch_dtype='float32')\nacc = Accelerator(mixed_precision='fp16')\n"),
        Bad("import torch as th\nmodel.to(th.half)\nwith th.autocast('cuda', dtype=th.float16):\n    loss = model(x)\n"
            "scaler = th.cuda.amp.GradScaler()\n", target="sm70",
            fixed="import torch as th\nmodel.to(th.float32)\nwith th.autocast('cuda', dtype=th.float16):\n    loss = model(x)\n"
            "scaler = th.cuda.amp.GradScaler()\n"),
    )
    good = (
        Good(FP16.format(dtype="float32"), target="sm70"),
        Good("import torch\nm = AutoModelForCausalLM.from_pretrained(p, torch_dtype=torch.float16)\nout = m.generate(x)\n",
             target="sm70"),
        Good("import torch\nm = AutoModelForCausalLM.from_pretrained(p, torch_dtype=torch.float16)\n"
             "args = TrainingArguments(output_dir='o', fp16=False)\n", target="sm70"),
        Good("import torch\nx = batch.half()\nargs = TrainingArguments(output_dir='o', fp16=True)\n", target="sm70"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return True  # the grad scaler refuses fp16 gradients on every GPU

    def visit_Call(self, node: cst.Call, ctx) -> None:
        # One pass: weights seen before the file's AMP switch wait for it; after it they are reported at once.
        state = ctx.__dict__.setdefault("_fp16_amp", {"switch": None, "waiting": []})
        for replaced, new_text, dtype, what in _half_weights(node, ctx.imports):
            if state["switch"] is None:
                state["waiting"].append((replaced, new_text, dtype, what))
            else:
                self._report(ctx, state["switch"], replaced, new_text, dtype, what)
        switches = _amp_switches(node, ctx.imports)
        if switches and state["switch"] is None:
            state["switch"] = switches[0]
            ancestors, ctx.ancestors = ctx.ancestors, []  # earlier nodes: the front end finds their statements
            try:
                for waiting in state["waiting"]:
                    self._report(ctx, state["switch"], *waiting)
            finally:
                ctx.ancestors = ancestors
            state["waiting"].clear()

    @staticmethod
    def _report(ctx, switch, replaced, new_text, dtype, what) -> None:
        ctx.report(
            replaced,
            f"model weights in {dtype} ({what}) in a file that trains with fp16 AMP ({switch}): "
            + ("the grad scaler raises `Attempting to unscale FP16 gradients.`" if dtype == "float16" else
               "bf16 weights under fp16 autocast mix two half formats and can overflow in fp16")
            + "; load the weights in float32 (AMP keeps fp32 master weights)",
            PendingFix([(replaced, new_text)], FixSafety.SAFE, "load the weights in float32"),
        )


def _is_true(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "True"


def _half_attr(expr: cst.BaseExpression, imports: ImportMap) -> str | None:
    """`torch.float16` / `torch.half` / `torch.bfloat16` (however imported) -> float16 | bfloat16."""
    if isinstance(expr, cst.Attribute) and expr.attr.value in _HALF_ATTRS and isinstance(expr.value, (cst.Name, cst.Attribute)):
        base = expr.value
        if isinstance(base, cst.Name) and imports.names.get(base.value) == "torch":
            return _HALF_ATTRS[expr.attr.value]
    if isinstance(expr, cst.Name):
        full = imports.names.get(expr.value, "")
        if full.startswith("torch.") and full[6:] in _HALF_ATTRS:
            return _HALF_ATTRS[full[6:]]
    return None


def _amp_switches(call: cst.Call, imports: ImportMap) -> list[str]:
    name = h.call_name(call)
    found = []
    if name in _SCALERS:
        found.append(f"`{name}(...)`")
    for arg in call.args:
        if arg.keyword is None:
            continue
        key = arg.keyword.value
        if key == "fp16" and _is_true(arg.value):
            found.append("`fp16=True`")
        elif key == "mixed_precision" and h.string_value(arg.value) == "fp16":
            found.append("`mixed_precision=\"fp16\"`")
        elif key == "dtype" and name == "autocast" and _half_attr(arg.value, imports) == "float16":
            found.append("`autocast(dtype=float16)`")
    return found


def _half_weights(call: cst.Call, imports: ImportMap):
    name = h.call_name(call)
    if name in _LOADERS:
        for arg in call.args:
            if arg.keyword is None or arg.keyword.value not in _WEIGHT_KEYWORDS:
                continue
            dtype = _half_attr(arg.value, imports)
            if dtype is not None:
                text = f"{arg.keyword.value}={dtype}"
                if isinstance(arg.value, cst.Attribute):
                    yield arg.value.attr, "float32", dtype, text
                else:
                    torch_name = imports.local_name_for("torch")
                    if torch_name:
                        yield arg.value, f"{torch_name}.float32", dtype, text
                continue
            value = h.string_value(arg.value)
            if value is not None and value.lower() in half_to_fp32():
                dtype = "bfloat16" if "b" in value.lower() else "float16"
                yield arg.value, h.requote(arg.value, half_to_fp32()[value.lower()]), dtype, f"{arg.keyword.value}=\"{value}\""
        return
    func = call.func
    if not isinstance(func, cst.Attribute) or not _names_a_model(func.value):
        return
    if name in _CASTS and not call.args:
        yield func.attr, "float", _CASTS[name], f"`.{name}()`"
    elif name == "to":
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value != "dtype":
                continue
            dtype = _half_attr(arg.value, imports)
            if dtype is not None and isinstance(arg.value, cst.Attribute):
                yield arg.value.attr, "float32", dtype, f"`.to({dtype})`"


def _names_a_model(expr: cst.BaseExpression) -> bool:
    """`model.half()`, `self.model.to(...)`, `Net().cuda().half()`: a module, not a batch tensor."""
    while isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Name):
            return func.value[:1].isupper()  # a class being built: `Net()`
        if not isinstance(func, cst.Attribute):
            return False
        expr = func.value
    name = expr.attr.value if isinstance(expr, cst.Attribute) else expr.value if isinstance(expr, cst.Name) else ""
    return "model" in name.lower() or name in ("net", "module", "policy", "actor", "critic")
