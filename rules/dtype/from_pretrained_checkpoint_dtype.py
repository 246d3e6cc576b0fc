from __future__ import annotations

import libcst as cst

from rlcompat.analysis import pyhelpers as h
from rlcompat.contract import Bad, FixSafety, Good, PendingFix, PythonRule
from rlcompat.knowledge import precision, versions

_NOT_MODELS = ("Peft",)
# The model classes whose `from_pretrained` loads weights, by how their names end (`AutoModelForCausalLM`,
# `Qwen2ForCausalLM`, `AutoModel`, TRL's `AutoModelForCausalLMWithValueHead`); the triggers are these names'
# calls, so statements with any other `from_pretrained` (tokenizers, configs) are never parsed for this rule.
_MODEL_SUFFIXES = ("Model", "ForCausalLM", "ForConditionalGeneration", "ForSequenceClassification",
                   "ForTokenClassification", "ForImageTextToText", "ForVision2Seq", "WithValueHead")
_SKIP_KEYWORDS = {"dtype", "torch_dtype", "quantization_config", "load_in_4bit", "load_in_8bit"}


class FromPretrainedCheckpointDtype(PythonRule):
    code = "RLC121"
    name = "from-pretrained-checkpoint-dtype"
    title = "`from_pretrained` without a dtype loads a bf16 checkpoint in bf16 under transformers 5"
    what = (
        "Finds a model class's `from_pretrained(...)` call (`AutoModelForCausalLM`, `Qwen2ForCausalLM`, ...) with no "
        "`dtype`/`torch_dtype` argument and no `**kwargs` that could carry one, in a tree whose transformers release "
        f"(its pin, package or the installed one) is {precision.loader_default_since()} or newer. Quantized loads "
        "(`quantization_config=`, `load_in_4bit=`) and loads under a capability check are left alone; where the "
        "transformers version is not known nothing is reported (4.x loads float32)."
    )
    why = (
        "From transformers 5.0 a load without a dtype takes the checkpoint's own dtype (`\"auto\"`), bfloat16 for "
        "most current models, where 4.x loaded float32 [S104]: the same script silently trains or evaluates bf16 "
        "weights, which compute capability < 8.0 only emulates [S1]."
    )
    fix_safety = "Adds `dtype=\"float32\"`, the weights 4.x loaded and the precision policy's training weights: safe."
    names = tuple(f"{suffix}.from_pretrained" for suffix in _MODEL_SUFFIXES)
    # Words, not a declaration: the receiver is matched by its name as written, and a file loading a model either
    # imports from transformers or names its Auto/CausalLM classes (held by tests/test_trigger_gates.py)
    requires = (("transformers", "ForCausalLM", "AutoModel"),)
    sources = ("S1", "S104")

    bad = (
        Bad("from transformers import AutoModelForCausalLM\nm = AutoModelForCausalLM.from_pretrained(path)\n",
            target="sm75", frameworks={"transformers": "5.0.0"},
            fixed="from transformers import AutoModelForCausalLM\n"
                  "m = AutoModelForCausalLM.from_pretrained(path, dtype=\"float32\")\n"),
        Bad("from transformers import AutoModelForCausalLM\n"
            "m = AutoModelForCausalLM.from_pretrained(\n    path,\n    device_map='auto',\n)\n",
            frameworks={"transformers": "5.2.0"},
            fixed="from transformers import AutoModelForCausalLM\n"
                  "m = AutoModelForCausalLM.from_pretrained(\n    path,\n    device_map='auto', dtype=\"float32\",\n)\n"),
    )
    good = (
        Good("from transformers import AutoModelForCausalLM\nm = AutoModelForCausalLM.from_pretrained(path)\n",
             target="sm75", frameworks={"transformers": "4.57.1"}),
        Good("from transformers import AutoModelForCausalLM\nm = AutoModelForCausalLM.from_pretrained(path)\n",
             target="sm75"),
        Good("from transformers import AutoModelForCausalLM\nm = AutoModelForCausalLM.from_pretrained(path)\n",
             target="sm80", frameworks={"transformers": "5.0.0"}),
        Good("from transformers import AutoModelForCausalLM\n"
             "m = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)\n",
             target="sm75", frameworks={"transformers": "5.0.0"}),
        Good("from transformers import AutoModelForCausalLM\n"
             "m = AutoModelForCausalLM.from_pretrained(path, **model_kwargs)\n",
             target="sm75", frameworks={"transformers": "5.0.0"}),
        Good("from transformers import AutoTokenizer\nt = AutoTokenizer.from_pretrained(path)\n",
             target="sm75", frameworks={"transformers": "5.0.0"}),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.bf16_native

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "from_pretrained":
            return
        receiver = func.value
        owner = (receiver.value if isinstance(receiver, cst.Name)
                 else receiver.attr.value if isinstance(receiver, cst.Attribute) else "")
        if not owner.endswith(_MODEL_SUFFIXES) or any(n in owner for n in _NOT_MODELS):
            return
        if not node.args or any(a.star for a in node.args):
            return
        if any(a.keyword is not None and a.keyword.value in _SKIP_KEYWORDS for a in node.args):
            return
        release = ctx.release("transformers")
        since = precision.loader_default_since()
        if release is None or versions.release(release) < versions.release(since):
            return
        if h.guarded_by(ctx.ancestors, h.is_capability_guard):
            return
        last = node.args[-1].value
        code = cst.Module([]).code_for_node(last)
        ctx.report(node, f"{owner}.from_pretrained(...) names no dtype: transformers {release} (>= {since}) then "
                         f"loads the checkpoint's dtype, bf16 for most current models, which {self.target.name} "
                         f"({self.target.architecture}) only emulates; pass dtype=\"float32\"",
                   PendingFix([(last, f'{code}, dtype="float32"')], FixSafety.SAFE, 'add dtype="float32"'))
