from __future__ import annotations

from pathlib import Path

from rlcompat.analysis.recipe_defaults import append_option, left_defaults
from rlcompat.contract import Bad, ConfigRule, FixSafety, Good
from rlcompat.knowledge.spellings import flash_attention

_FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "recipes" / "dataclass_defaults"
_CMD = "python src/recipe/train.py --learning_rate 1e-6{extra}\n"
ATTENTION_FIELDS = ("attn_implementation", "attention_implementation", "attn_impl")


class RecipeAttentionDefault(ConfigRule):
    code = "RLC211"
    name = "recipe-attention-default"
    title = "A recipe dataclass defaults to FlashAttention and the launch command leaves it"
    what = (
        "Finds a launch command whose entry point in the scanned tree parses its options with HfArgumentParser/"
        "TrlParser over the tree's own dataclasses (or merges `OmegaConf.from_cli()` into a structured one), where "
        "`attn_implementation` defaults to `flash_attention_2`/`flash_attention_3` and the command (and its "
        "`--config` YAML) does not set it. Reported at the command, citing the field's file:line."
    )
    why = (
        "The default selects FlashAttention for every run that does not set the field [S156][S157]. FlashAttention-2 "
        "needs compute capability 8.0 [S10], FlashAttention-3 Hopper [S9]; the model fails at its first forward pass."
    )
    fix_safety = (
        "Adds `--attn_implementation sdpa` where the field is a `str` (or a `Literal` listing sdpa) [S156], "
        "`attn_implementation=sdpa` for an `OmegaConf.from_cli` merge [S157]: PyTorch's scaled-dot-product attention "
        "computes the same attention [S16], safe. The fixed command is parsed again with the schema before it is "
        "written (rlcompat/schema/loadcheck.py)."
    )
    names = (".py", "-m ")
    sources = ("S9", "S10", "S16", "S156", "S157")

    bad = (
        Bad(_CMD.format(extra=""), path=str(_FIXTURE / "train.sh"),
            fixed=_CMD.format(extra=" --attn_implementation sdpa")),
    )
    good = (
        Good(_CMD.format(extra=" --attn_implementation sdpa"), path=str(_FIXTURE / "train.sh")),
        Good(_CMD.format(extra=""), path=str(_FIXTURE / "train.sh"), target="sm80"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.flash_attn_3

    def check_config(self, view, ctx) -> None:
        target = ctx.target
        for left in left_defaults(view, ctx):
            if left.field not in ATTENTION_FIELDS:
                continue
            if left.value in flash_attention(3).implementations:
                needs = "FlashAttention-3 needs Hopper (9.0)"
            elif left.value in flash_attention(2).implementations and not target.flash_attn_2:
                needs = "FlashAttention-2 needs compute capability 8.0+"
            else:
                continue
            edit = append_option(view, ctx.source_text, left, "sdpa") if left.accepts("sdpa") else None
            spelled = left.option("sdpa")
            message = (f"{left.label} defaults to {left.value} ({left.where}), and this command does not "
                       f"set it: {needs}, {target.name} is {target.capability_text}")
            message += f"; add {spelled}" if edit else f"; no fix: {left.why_no_fix('sdpa')}"
            ctx.report(view.anchor, message, [edit] if edit else [], FixSafety.SAFE, f"add {spelled}")
