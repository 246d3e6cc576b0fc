from __future__ import annotations

from pathlib import Path

from rlcompat.analysis.entry_code import forced_values
from rlcompat.analysis.recipe_defaults import append_option, left_defaults
from rlcompat.contract import Bad, ConfigRule, FixSafety, Good
from rlcompat.knowledge.spellings import flash_attention
from rlcompat.rules.attention.helpers import FLASH_SWITCH_FIELDS

_FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "recipes" / "dataclass_defaults"
_CMD = "python src/recipe/train.py --learning_rate 1e-6{extra}\n"
_ENTRY = Path(__file__).resolve().parents[2] / "fixtures" / "recipes" / "entry_code"
_AGENTS = "python multi_agent.py --pretrain Qwen/Qwen3-0.6B{extra}\n"
_CONTROLLER = "python -m controller_cli --pretrain Qwen/Qwen3-0.6B{extra}\n"
ATTENTION_FIELDS = ("attn_implementation", "attention_implementation", "attn_impl")


class RecipeAttentionDefault(ConfigRule):
    code = "RLC211"
    name = "recipe-attention-default"
    title = ("A recipe's entry point defaults to FlashAttention and the launch command leaves it, or forces it under a "
             "switch the command passes")
    what = (
        "Finds a launch command whose entry point in the scanned tree parses its options with HfArgumentParser/"
        "TrlParser over the tree's own dataclasses (or merges `OmegaConf.from_cli()` into a structured one), where "
        "`attn_implementation` defaults to `flash_attention_2`/`flash_attention_3` and the command (and its "
        "`--config` YAML) does not set it. Reported at the command, citing the field's file:line. Also a switch the "
        "command passes under which the entry's own code assigns FlashAttention to such a field (`if "
        "args.packing_samples: args.attn_implementation = \"flash_attention_2\"`) or turns on its FlashAttention-2 "
        "switch (`args.flash_attn = True`, OpenRLHF's `--flash_attn`), reported at the switch."
    )
    why = (
        "The default selects FlashAttention for every run that does not set the field [S156][S157]. FlashAttention-2 "
        "needs compute capability 8.0 [S10], FlashAttention-3 Hopper [S9]; the model fails at its first forward pass."
    )
    fix_safety = (
        "Adds `--attn_implementation sdpa` where the field is a `str` (or a `Literal` listing sdpa) [S156], "
        "`attn_implementation=sdpa` for an `OmegaConf.from_cli` merge [S157]: PyTorch's scaled-dot-product attention "
        "computes the same attention [S16], safe. The fixed command is parsed again with the schema before it is "
        "written (rlcompat/schema/loadcheck.py). A switch that forces FlashAttention gets no fix: what else it "
        "turns on (sample packing) is the program's, and only dropping it drops the forced value."
    )
    names = (".py", "-m ")
    sources = ("S9", "S10", "S16", "S156", "S157")

    bad = (
        Bad(_CMD.format(extra=""), path=str(_FIXTURE / "train.sh"),
            fixed=_CMD.format(extra=" --attn_implementation sdpa")),
        Bad(_AGENTS.format(extra=" --packing_samples"), path=str(_ENTRY / "run_agents.sh")),
        # the switch turns the program's own FlashAttention-2 switch on (`args.flash_attn = True`)
        Bad(_CONTROLLER.format(extra=" --packing_samples"), path=str(_ENTRY / "run_controller.sh")),
    )
    good = (
        Good(_CMD.format(extra=" --attn_implementation sdpa"), path=str(_FIXTURE / "train.sh")),
        Good(_CMD.format(extra=""), path=str(_FIXTURE / "train.sh"), target="sm80"),
        Good(_AGENTS.format(extra=""), path=str(_ENTRY / "run_agents.sh")),
        Good(_AGENTS.format(extra=" --packing_samples"), path=str(_ENTRY / "run_agents.sh"), target="sm80"),
        Good(_CONTROLLER.format(extra=""), path=str(_ENTRY / "run_controller.sh")),
        Good(_CONTROLLER.format(extra=" --packing_samples"), path=str(_ENTRY / "run_controller.sh"), target="sm80"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.flash_attn_3

    def check_config(self, view, ctx) -> None:
        target = ctx.target
        for left in left_defaults(view, ctx):
            needs = _needs(left.value, target) if left.field in ATTENTION_FIELDS else None
            if needs is None:
                continue
            edit = append_option(view, ctx.source_text, left, "sdpa") if left.accepts("sdpa") else None
            spelled = left.option("sdpa")
            message = (f"{left.label} defaults to {left.value} ({left.where}), and this command does not "
                       f"set it: {needs}, {target.name} is {target.capability_text}")
            message += f"; add {spelled}" if edit else f"; no fix: {left.why_no_fix('sdpa')}"
            ctx.report(view.anchor, message, [edit] if edit else [], FixSafety.SAFE, f"add {spelled}")
        self._forced(view, ctx)

    def _forced(self, view, ctx) -> None:
        target = ctx.target
        switches = {s.key.lstrip("-").replace("-", "_"): s for s in view.settings if s.flag and s.switch}
        for forced in forced_values(view, ctx, ATTENTION_FIELDS + FLASH_SWITCH_FIELDS):
            if forced.field in FLASH_SWITCH_FIELDS:  # a switch set True turns FlashAttention-2 on
                needs = _needs(flash_attention(2).implementations[0], target) if forced.value == "True" else None
            else:
                needs = _needs(forced.value, target)
            if needs is None:
                continue
            for name in sorted(forced.switches & set(switches)):
                switch = switches[name]
                ctx.report(switch.key_span, f"{switch.label} makes the program set {forced.field} to {forced.value} "
                           f"({forced.where}) whatever its attention option says: {needs}, {target.name} is "
                           f"{target.capability_text}; drop {switch.label} (no fix: the program ties it to "
                           "FlashAttention)", [None])
                return


def _needs(value: str, target) -> str | None:
    """What the FlashAttention an attention value selects needs that `target` lacks; None where it runs there."""
    if value in flash_attention(3).implementations:
        return "FlashAttention-3 needs Hopper (9.0)"
    if value in flash_attention(2).implementations and not target.flash_attn_2:
        return "FlashAttention-2 needs compute capability 8.0+"
    return None
