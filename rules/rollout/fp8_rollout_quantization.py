from __future__ import annotations

from rlcompat.contract import Bad, ConfigRule, FixSafety, Good
from rlcompat.analysis.confighelpers import remove_flag
from rlcompat.rules.rollout.helpers import vllm_command

CMD = "python3 -m verl.trainer.main_ppo \\\n    actor_rollout_ref.rollout.quantization={q} \\\n    trainer.n_gpus_per_node=1\n"

YAML = "actor_rollout_ref:\n  rollout:\n    name: vllm\n    quantization: {q}\n"


class Fp8RolloutQuantization(ConfigRule):
    code = "RLC403"
    name = "fp8-rollout-quantization"
    title = "fp8 quantization asked of the rollout engine on a GPU without fp8"
    what = (
        "Finds `actor_rollout_ref.rollout.quantization: fp8` (verl [S51]) and `--quantization fp8` of other "
        "command lines (SGLang); `vllm serve` lines are RLC405's."
    )
    why = "vLLM supports fp8 from compute capability 8.9 (`supports_fp8`) [S6]; Triton's fp8e4nv type needs 8.9 too [S20]."
    fix_safety = (
        "Turning quantization off (`null`, or dropping the flag) runs the rollout unquantized: more memory, which may "
        "not fit; unsafe."
    )
    names = ("fp8",)
    languages = ConfigRule.languages | {"python"}  # its settings written in Python too (lang/pysettings.py)
    sources = ("S6", "S20", "S51")

    bad = (
        Bad(CMD.format(q="fp8"), path="run.sh", unsafe=True, fixed=CMD.format(q="null")),
        # quoted, the value's quotes go too: "null" would be the string null
        Bad(YAML.format(q='"fp8"'), path="rollout.yaml", unsafe=True, fixed=YAML.format(q="null")),
        Bad('{"actor_rollout_ref": {"rollout": {"quantization": "fp8"}}}\n', path="c.json", unsafe=True,
            fixed='{"actor_rollout_ref": {"rollout": {"quantization": null}}}\n'),
    )
    good = (
        Good(CMD.format(q="fp8"), path="run.sh", target="sm89"),
        Good("vllm serve m --quantization awq\n", path="run.sh", target="sm86"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.fp8

    def check_config(self, view, ctx) -> None:
        # `vllm serve --quantization` is RLC405's, from vLLM's own per-method minimums (rlcompat/knowledge/data/vllm.toml).
        flags = [] if vllm_command(view.command_words) else view.flags("--quantization")
        found = [s for s in (view.get("actor_rollout_ref.rollout.quantization"),) if s] + flags
        for s in found:
            if s.value is None or s.value.strip().lower() != "fp8":
                continue
            edit = remove_flag(ctx.source_text, s.word_span) if s.flag and s.word_span else s.rewrite_null(ctx.source_text)
            ctx.report(s.key_span, f"{s.label} is fp8: fp8 needs compute capability 8.9+, {ctx.target.name} is "
                                   f"{ctx.target.capability_text}; turn quantization off", [edit],
                       FixSafety.UNSAFE, "turn quantization off")
