from __future__ import annotations

from rlcompat.analysis.knowledgecheck import DataExamples, check
from rlcompat.knowledge.capabilities import min_capability
from rlcompat.contract import Bad, ConfigRule, Good

KINDS = frozenset({"rollout-engine", "sglang-switch", "vllm-switch", "vllm-load-switch", "vllm-engines", "vllm-engines-bf16",
                   "quantization", "kv-cache-dtype", "eager-switch"})


class FrameworkRolloutSetting(ConfigRule):
    code = "RLC404"
    name = "framework-rollout-setting"
    title = "A framework's generation-engine setting (from rlcompat's framework knowledge) the GPU cannot run"
    what = (
        "Reads rlcompat/knowledge/data/frameworks/: keys and flags of kind `rollout-engine`, `vllm-switch`, `vllm-engines`, "
        "`quantization`, `kv-cache-dtype` and `eager-switch` (TRL `use_vllm`, OpenRLHF `--vllm.num_engines` and "
        "`--vllm_num_engines`, Unsloth's `fast_inference` (`vllm-load-switch`: no fix, Unsloth switches it off below 7.0), whose engines OpenRLHF builds in bfloat16 (`vllm-engines-bf16`: refused below 8.0), ms-swift `infer_backend`, XTuner's XTUNER_USE_SGLANG=1 (`sglang-switch`, no fix) and XTUNER_USE_VLLM=1, SGLang `--quantization`, `--kv-cache-dtype`, vLLM/SGLang "
        "`--enforce-eager`, and in a Python file that imports vLLM an engine option read with a default, "
        "`cfg.get(\"enforce_eager\", False)`) and reports what the target cannot run. vLLM's `--quantization` and `--kv-cache-dtype` "
        "are RLC405's and RLC406's, judged per method from rlcompat/knowledge/data/vllm.toml."
    )
    why = (
        f"{min_capability('vllm').by_release()} [S7], and refuses bfloat16 below 8.0 [S6] (OpenRLHF's engines are "
        "always bfloat16 [S162]); SGLang refuses < 7.5 [S35]; fp8 "
        "weights and KV caches need 8.9 [S6][S20]; without eager mode vLLM compiles with Inductor, which refuses "
        "< 7.0 [S17][S52]."
    )
    fix_safety = (
        "An fp8 KV cache becomes `auto` and eager mode is switched on (safe). Engines and quantization have no fix: "
        "switching either changes the run (and on sm6x/sm70 there is no vLLM to switch to)."
    )
    languages = ConfigRule.languages | {"python"}  # its settings written in Python too (lang/pysettings.py)
    # "skyrl_train.entrypoints": a skyrl-train launch command that leaves generator.backend at its default (vllm)
    names = ("vllm", "VLLM", "sglang", "SGLANG", "quantization", "kv_cache", "kv-cache", "eager", "infer_backend", "fast_inference",
             "skyrl_train.entrypoints")
    sources = ("S6", "S7", "S17", "S20", "S35", "S52", "S162")
    # Not the key words of its `kinds` (a file is read only where it spells one): these mark the statements whose
    # settings every config rule reads, and the key words would mark others
    # (`fast_inference`: Unsloth's switch that loads the model into vLLM; a statement holding it need not say vllm)
    python_triggers = ("vllm", "VLLM", "sglang", "kv_cache", "quantization", "enforce_eager", "fast_inference")
    kinds = KINDS
    precedence = 1

    bad = DataExamples("bad", (
        Bad("python -m sglang.launch_server --model-path m --quantization fp8\n", path="serve.sh", target="sm86"),
        Bad("python -m vllm.entrypoints.openai.api_server --model m --enforce_eager False\n", path="serve.sh",
            fixed="python -m vllm.entrypoints.openai.api_server --model m --enforce_eager True\n"),
        # an engine option read with a default that compiles (a Pascal build of vLLM runs; Inductor does not)
        Bad('from vllm import LLM\nengine = LLM(model=p, enforce_eager=cfg.get("enforce_eager", False))\n',
            path="rollout.py",
            fixed='from vllm import LLM\nengine = LLM(model=p, enforce_eager=cfg.get("enforce_eager", True))\n'),
        # OpenRLHF builds its vLLM engines in bfloat16 whatever --ds.param_dtype says: vLLM runs on a T4 but refuses it
        Bad("python3 -m openrlhf.cli.train_ppo_ray --vllm.num_engines 2 --ds.param_dtype fp16\n", path="train.sh",
            target="sm75"),
    ))
    good = DataExamples("good", (
        Good("python -m sglang.launch_server --model-path m --quantization fp8\n", path="serve.sh", target="sm89"),
        # vLLM 0.33.0 runs fp8 weights from 7.5 (Marlin, 16-bit activations): RLC405 judges it, not this rule
        Good("python -m vllm.entrypoints.openai.api_server --model m --quantization fp8\n", path="serve.sh",
             target="sm86"),
        Good("python train.py --quantization fp8\n", path="run.sh", target="sm86"),
        Good('from vllm import LLM\nengine = LLM(model=p, enforce_eager=cfg.get("enforce_eager", False))\n',
             path="rollout.py", target="sm75"),
        Good('engine = build(model=p, enforce_eager=cfg.get("enforce_eager", False))\n', path="rollout.py"),
        # OpenRLHF 0.11.2 openrlhf/cli/train_ppo_ray.py:231-243: eager mode's default matters only with vLLM engines,
        # which the parser's own default leaves off (a command passing --vllm.num_engines is judged where it is given)
        Good('parser.add_argument("--vllm.num_engines", type=int, default=None)\n'
             'parser.add_argument("--vllm.enforce_eager", action="store_true", default=False)\n',
             path="openrlhf/cli/train_ppo_ray.py"),
    ))

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.fp8

    def check_config(self, view, ctx) -> None:
        check(view, ctx, KINDS)
