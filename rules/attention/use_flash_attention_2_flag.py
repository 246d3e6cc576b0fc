from __future__ import annotations

import libcst as cst

from rlcompat.analysis.pyentry_switches import unpassed_switch_guards
from rlcompat.analysis.pyswitches import switched_on
from rlcompat.contract import Bad, FixSafety, Good, PendingFix, PythonRule
from rlcompat.rules.attention.helpers import is_flash_attn_guard


class UseFlashAttention2Flag(PythonRule):
    code = "RLC202"
    name = "use-flash-attention-2-flag"
    title = "`use_flash_attention_2=True` on a GPU without FlashAttention-2"
    what = (
        "Finds `use_flash_attention_2=True` passed to a call, transformers' older switch for FlashAttention-2. A "
        "keyword under `if args.use_flash_attn:` where that switch is one the file's parser leaves off and the "
        "tree's launch files run the script without passing it is not reported (no shipped run reaches it; a "
        "launch command that passes the switch is what turns it on)."
    )
    why = (
        "It selects FlashAttention-2, which needs compute capability 8.0 or newer (`FlashAttention only supports "
        "Ampere GPUs or newer.`) [S10][S15]. The keyword is also deprecated in favour of `attn_implementation`."
    )
    fix_safety = "The fix writes `attn_implementation=\"sdpa\"` in its place, which is safe (see RLC201)."
    keywords = ("use_flash_attention_2",)
    sources = ("S10", "S15")

    bad = (
        Bad("m = AutoModel.from_pretrained(p, use_flash_attention_2=True)\n",
            fixed='m = AutoModel.from_pretrained(p, attn_implementation="sdpa")\n'),
    )
    good = (
        Good("m = AutoModel.from_pretrained(p, use_flash_attention_2=False)\n"),
        Good("m = AutoModel.from_pretrained(p, use_flash_attention_2=True)\n", target="sm80"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.flash_attn_2

    def visit_Arg(self, node: cst.Arg, ctx) -> None:
        if node.keyword is None or node.keyword.value != "use_flash_attention_2":
            return
        if not switched_on(node.value, ctx.ancestors, guard=is_flash_attn_guard):
            return
        if unpassed_switch_guards(ctx):
            return  # only under a switch the parser leaves off and no launch file of the tree passes
        # not turned off but replaced: attn_implementation is what transformers reads now (see RLC201)
        ctx.report(
            node,
            f"use_flash_attention_2=True selects FlashAttention-2, which needs compute capability 8.0+ "
            f"({self.target.name} is {self.target.capability_text}); use attn_implementation=\"sdpa\"",
            PendingFix([(node.keyword, "attn_implementation"), (node.value, '"sdpa"')], FixSafety.SAFE,
                       'use attn_implementation="sdpa"'),
        )
