from __future__ import annotations

import re
from pathlib import Path

from rlcompat.analysis.entry_code import entry_code
from rlcompat.contract import Bad, ConfigRule, Good

_FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "recipes" / "entry_code"
# A flag that sets how many vLLM engines the program builds (OpenRLHF's `--vllm_num_engines`, `--vllm.num_engines`).
_ENGINE_COUNT = re.compile(r"^-{0,2}vllm[._-]?num[._-]?engines$")


def _engine_count(view):
    """The command's setting of the engine count and its integer value (None where computed or absent)."""
    for setting in view.settings:
        if setting.flag and _ENGINE_COUNT.match(setting.key):
            value = setting.value
            return setting, int(value) if value is not None and value.strip().isdigit() else None
    return None, None


class EntryCodeBf16(ConfigRule):
    code = "RLC124"
    name = "entry-code-bf16"
    title = "A launch command runs the tree's own program whose code writes bf16 (the trained model, its vLLM engines)"
    what = (
        "Finds a launch command (`python train.py ...`, `uv run python pkg/train.py ...`, `python -m pkg.cli.train`) "
        "whose entry program is in the scanned tree and writes bf16 in its own code: a literal `bf16=True`, "
        "`dtype=torch.bfloat16` or `torch_dtype=\"bfloat16\"` keyword of a call in the entry module, or such a dtype "
        "entry of a keyword-arguments dict (`model_kwargs={\"torch_dtype\": torch.bfloat16}`) (outside a "
        "compute-capability test), or a vLLM engine builder of the tree it calls (followed through its imports) that "
        "passes `dtype=\"bfloat16\"` to the engines or takes a bf16 dtype default the call leaves. Reported at the "
        "command (the engines at its `--vllm_num_engines` flag where it passes one; an engine builder called under a "
        "test only where it does, with a positive count), citing each file:line."
    )
    why = (
        "No option of the command changes what the program's code writes, so every run of it trains (or generates) "
        "in bf16: bf16 has no hardware below compute capability 8.0 [S1], and vLLM refuses bfloat16 below 8.0 "
        "(`Bfloat16 is only supported on GPUs with compute capability of at least 8.0`) [S6]."
    )
    fix_safety = (
        "No automatic fix: the value is in the program, not in the command. Edit the cited lines (fp32 below 7.0, "
        "fp16 on 7.x: docs/precision.md), or pass the program's own dtype option where it has one."
    )
    names = (".py", "-m ")
    sources = ("S1", "S6")

    bad = (
        Bad("uv run python train.py --model Qwen/Qwen3-0.6B --stage 2\n", path=str(_FIXTURE / "run.sh")),
        Bad("python multi_agent.py --pretrain Qwen/Qwen3-0.6B \\\n    --vllm_num_engines 2\n",
            path=str(_FIXTURE / "run_agents.sh"), target="sm75"),
        # the entry's controller class, in another module of the tree, builds the engines
        Bad("ray job submit -- python -m controller_cli --pretrain Qwen/Qwen3-0.6B \\\n    --vllm_num_engines 2\n",
            path=str(_FIXTURE / "run_controller.sh"), target="sm75"),
        # the program's model is loaded through a keyword-arguments dict (`model_kwargs={"torch_dtype": ...}`)
        Bad("accelerate launch score.py --dataset_name_or_path data.json\n", path=str(_FIXTURE / "run.sh")),
    )
    good = (
        Good("uv run python train.py --model Qwen/Qwen3-0.6B\n", path=str(_FIXTURE / "run.sh"), target="sm80"),
        # bf16 chosen under a capability test, the engines given fp32 by the call
        Good("python safe_train.py --model Qwen/Qwen3-0.6B\n", path=str(_FIXTURE / "run.sh")),
        # the engines are built only for a positive count, and the command passes none (or 0)
        Good("python multi_agent.py --pretrain Qwen/Qwen3-0.6B\n", path=str(_FIXTURE / "run_agents.sh")),
        Good("python multi_agent.py --pretrain Qwen/Qwen3-0.6B --vllm_num_engines 0\n",
             path=str(_FIXTURE / "run_agents.sh")),
        Good("ray job submit -- python -m controller_cli --pretrain Qwen/Qwen3-0.6B --vllm_num_engines 0\n",
             path=str(_FIXTURE / "run_controller.sh")),
        # a dict keyed by dtype names is a table, not a load
        Good("accelerate launch safe_score.py --dataset_name_or_path data.json\n", path=str(_FIXTURE / "run.sh")),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.bf16_native

    def check_config(self, view, ctx) -> None:
        code = entry_code(view, ctx)
        if code is None or view.anchor is None:
            return
        card = f"{ctx.target.name} is {ctx.target.capability_text}"
        if code.learner:
            sites = "; ".join(str(s) for s in code.learner)
            ctx.report(view.anchor, f"this runs {code.entry}, whose own code trains in bf16 ({sites}): no option of "
                       f"the command changes it, and bf16 has no hardware below 8.0 ({card}); edit those lines "
                       "(fp32 below 7.0, fp16 on 7.x)", [None])
        if code.engines is None:
            return
        setting, count = _engine_count(view)
        if setting is not None and count == 0:
            return
        if setting is None and code.engines_guarded:
            return
        span = setting.key_span if setting is not None else view.anchor
        ctx.report(span, f"the vLLM engines {code.entry} starts are built in bf16 whatever the command says "
                   f"({code.engines}): vLLM refuses bfloat16 below compute capability 8.0 ({card}); edit that "
                   "line (fp16 on 7.x; vLLM does not run below 7.0)", [None])
