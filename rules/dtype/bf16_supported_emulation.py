from __future__ import annotations

import libcst as cst

from rlcompat.contract import Bad, FixSafety, Good, PendingFix, PythonRule


class Bf16SupportedEmulation(PythonRule):
    code = "RLC110"
    name = "bf16-supported-emulation"
    title = "`torch.cuda.is_bf16_supported()` used as a capability test: True on V100/T4/P40 by emulation"
    what = (
        "Finds calls of `torch.cuda.is_bf16_supported()` (however torch is imported) without "
        "`including_emulation=False`: `bf16=torch.cuda.is_bf16_supported()`, `dtype = torch.bfloat16 if "
        "torch.cuda.is_bf16_supported() else torch.float16`."
    )
    why = (
        "Since torch 2.3 the call tries a bf16 tensor as a last resort and says True on GPUs that only emulate bf16 "
        "[S3]; torch 2.4 added `including_emulation`, defaulting to True [S4][S60]. Code that gates bf16 on it picks "
        "bf16 on compute capability < 8.0 [S1], and so do transformers' and DeepSpeed's own checks [S61][S62]."
    )
    fix_safety = (
        "Adds `including_emulation=False`: safe, the call then answers what the hardware has and the code picks its "
        "non-bf16 branch. The keyword needs torch >= 2.4; every torch wheel that still runs on these cards is newer "
        "(2.6+, [S29][S30])."
    )
    names = ("is_bf16_supported",)
    sources = ("S1", "S3", "S4", "S29", "S30", "S60", "S61", "S62")

    bad = (
        Bad("import torch\nargs = TrainingArguments(output_dir='o', bf16=torch.cuda.is_bf16_supported())\n", target="sm70",
            fixed="import torch\nargs = TrainingArguments(output_dir='o', bf16=torch.cuda.is_bf16_supported(including_emulation=False))\n"),
        Bad("import torch\ndtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16\n", target="sm75",
            fixed="import torch\ndtype = torch.bfloat16 if torch.cuda.is_bf16_supported(including_emulation=False) else torch.float16\n"),
        Bad("from torch.cuda import is_bf16_supported\nuse_bf16 = is_bf16_supported()\n",
            fixed="from torch.cuda import is_bf16_supported\nuse_bf16 = is_bf16_supported(including_emulation=False)\n"),
    )
    good = (
        Good("import torch\nok = torch.cuda.is_bf16_supported(including_emulation=False)\n", target="sm70"),
        Good("import torch\nok = torch.cuda.is_bf16_supported()\n", target="sm80"),
        Good("def is_bf16_supported():\n    return False\nok = is_bf16_supported()\n", target="sm70"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.bf16_native

    def visit_Call(self, node: cst.Call, ctx) -> None:
        if ctx.qualname(node.func) != "torch.cuda.is_bf16_supported":
            return
        if any(a.keyword is not None and a.keyword.value == "including_emulation" for a in node.args):
            return
        fix = None
        if not node.args:
            func = cst.Module([]).code_for_node(node.func)
            fix = PendingFix([(node, f"{func}(including_emulation=False)")], FixSafety.SAFE,
                             "add including_emulation=False")
        ctx.report(node, f"is_bf16_supported() says True on {self.target.name} ({self.target.architecture}) by "
                         "emulation since torch 2.3; pass including_emulation=False to test the hardware", fix)
