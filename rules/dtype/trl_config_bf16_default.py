from __future__ import annotations

import libcst as cst

from rlcompat.knowledge import precision, trl_paths
from rlcompat.analysis import pyhelpers as h
from rlcompat.contract import Bad, FixSafety, Good, PendingFix, PythonRule

TRL_CONFIGS = trl_paths.bf16_unset_configs()  # rlcompat/knowledge/data/trl_paths.toml [bf16_unset] [S63]


class TrlConfigBf16Default(PythonRule):
    code = "RLC111"
    name = "trl-config-bf16-default"
    title = "A TRL config that sets neither `bf16` nor `fp16` trains in bf16 by default"
    what = (
        "Finds TRL trainer configs (`GRPOConfig`, `SFTConfig`, `DPOConfig`, `KTOConfig`, `RLOOConfig`, `AsyncGRPOConfig`, ...) built "
        "without a `bf16=` or `fp16=` keyword (and without `**kwargs` that could carry one). transformers' own "
        "`TrainingArguments` defaults both to False [S61] and is not reported."
    )
    why = (
        "TRL resolves an unset `bf16` to `not fp16`, i.e. True, with no capability test (trl v0.19.0 "
        "`trl/trainer/grpo_config.py:530`, trl 1.10 `trl/trainer/base_config.py:105`) [S63]. transformers then accepts "
        "it because `torch.cuda.is_bf16_supported()` says True by emulation [S61][S1], so the run trains in emulated "
        "bf16 on compute capability < 8.0 without the script ever saying bf16."
    )
    fix_safety = (
        "Adds the precision policy's autocast choice (docs/precision.md): `bf16=False` on sm5x/sm6x (fp32 training, "
        "safe); `fp16=True` on sm70/sm75, unsafe: fp16 autocast under the loss scaler has a smaller range than bf16 "
        "[S66] and needs fp32 weights (RLC108)."
    )
    calls = tuple(sorted(TRL_CONFIGS))  # the config class called (`GRPOConfig(...)`)
    sources = ("S1", "S61", "S63", "S66")

    bad = (
        Bad("from trl import GRPOConfig\ncfg = GRPOConfig(output_dir='o', learning_rate=1e-6)\n",
            fixed="from trl import GRPOConfig\ncfg = GRPOConfig(output_dir='o', learning_rate=1e-6, bf16=False)\n"),
        Bad("from trl import SFTConfig\ncfg = SFTConfig(\n    output_dir='o',\n)\n", target="sm75", unsafe=True,
            fixed="from trl import SFTConfig\ncfg = SFTConfig(\n    output_dir='o', fp16=True,\n)\n"),
        Bad("import trl\ncfg = trl.DPOConfig()\n", target="sm70", unsafe=True,
            fixed="import trl\ncfg = trl.DPOConfig(fp16=True)\n"),
        # TRL's async GRPO config is a _BaseConfig too: bf16 defaults to True (async_grpo_config.py:123) [S63]
        Bad("from trl.experimental.async_grpo import AsyncGRPOConfig\ncfg = AsyncGRPOConfig(output_dir='o')\n",
            fixed="from trl.experimental.async_grpo import AsyncGRPOConfig\ncfg = AsyncGRPOConfig(output_dir='o', bf16=False)\n"),
    )
    good = (
        Good("from trl import GRPOConfig\ncfg = GRPOConfig(output_dir='o', fp16=True)\n", target="sm70"),
        Good("from trl import GRPOConfig\ncfg = GRPOConfig(output_dir='o', bf16=False)\n"),
        Good("from trl import GRPOConfig\ncfg = GRPOConfig(**kwargs)\n"),
        Good("from trl import GRPOConfig\ncfg = GRPOConfig(output_dir='o')\n", target="sm80"),
        Good("args = TrainingArguments(output_dir='o')\n", target="sm70"),
        Good("class GRPOConfig:\n    pass\ncfg = GRPOConfig()\n"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.bf16_native

    def visit_Call(self, node: cst.Call, ctx) -> None:
        name = h.call_name(node)
        if name not in TRL_CONFIGS or not (ctx.qualname(node.func) or "").startswith("trl."):
            return
        if any(a.star or (a.keyword is not None and a.keyword.value in ("bf16", "fp16")) for a in node.args):
            return
        fp16 = precision.dtype_for(self.target, "autocast") == "float16"
        keyword, value = ("fp16", "True") if fp16 else ("bf16", "False")
        text = h.with_keywords(node, [(keyword, value)])
        ctx.report(node, f"{name} sets neither bf16 nor fp16: TRL then defaults bf16 to True, which {self.target.name} "
                         f"({self.target.architecture}) only emulates; set {keyword}={value}",
                   PendingFix([(node, text)], FixSafety.UNSAFE if fp16 else FixSafety.SAFE, f"add {keyword}={value}"))
