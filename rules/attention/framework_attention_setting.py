from __future__ import annotations

from rlcompat.analysis.knowledgecheck import DataExamples, check
from rlcompat.contract import Bad, ConfigRule, Good

KINDS = frozenset({"attention", "flash-switch", "attention-backend", "flash-only-switch", "ring-attention",
                   "megatron-attention-backend", "sglang-attention-backend", "flash3-switch"})
FORCED_BY_PACKING = (
    'parser.add_argument("--ds.attn_implementation", type=str, default="sdpa")\n'
    'parser.add_argument("--ds.packing_samples", action="store_true", default=False)\n'
    'if __name__ == "__main__":\n'
    '    args = parser.parse_args()\n'
    '    if args.ds.packing_samples:\n'
    '        if "flash_attention" not in args.ds.attn_implementation:\n'
    '            args.ds.attn_implementation = "flash_attention_2"\n'
)


class FrameworkAttentionSetting(ConfigRule):
    code = "RLC207"
    name = "framework-attention-setting"
    title = "A framework's attention setting (from rlcompat's framework knowledge) that needs FlashAttention"
    what = (
        "Reads rlcompat/knowledge/data/frameworks/: keys, flags and environment variables of kind `attention`, `flash-switch`, "
        "`attention-backend`, `flash-only-switch` and `ring-attention` (OpenRLHF `--ds.attn_implementation`, "
        "`--flash_attn`, `--packing_samples`, `--ring_attn_size`; LLaMA-Factory `flash_attn: fa2`; ms-swift "
        "`attn_impl`; SGLang `--attention-backend` (and AReaL's `sglang.attention_backend`, fa3 by default); "
        "Megatron-LM's `--attention-backend flash` in slime's launchers; XTuner's XTUNER_USE_FA3=1 (`flash3-switch`); "
        "VLLM_ATTENTION_BACKEND=FLASH_ATTN, exported, set in `os.environ` or "
        "forced in a dict or mapping that holds a process's environment, such as Ray's `runtime_env` `env_vars`, "
        "except where the run's vLLM is a release through 0.9.0 (its pin or image, or a requirement such as "
        "`vllm<=0.6.3` that allows no later one), whose selector replaces FLASH_ATTN with XFormers below 8.0) and "
        "reports values that need "
        "FlashAttention on a GPU without it, and hazardous defaults of a known framework version's flags. A value an "
        "entry point forces under a switch its parser leaves off (`if args.packing_samples: args.flash_attn = True`) "
        "is reported unless the tree's launch files run that entry point and none of them passes the switch."
    )
    why = (
        "FlashAttention-2 needs compute capability 8.0 (`FlashAttention only supports Ampere GPUs or newer.`) [S10]; "
        "FlashAttention-3 needs Hopper [S9]. OpenRLHF's sample packing forces flash_attention_2 and its ring attention "
        "is built on FlashAttention's kernels."
    )
    fix_safety = (
        "An attention choice becomes the key's safe spelling (`sdpa`, vLLM `FLEX_ATTENTION`): the same attention, "
        "safe. Switches are turned off or dropped (packing off: more padding, same result). Ring attention has no fix "
        "(it changes the parallel layout)."
    )
    languages = ConfigRule.languages | {"python"}  # its settings written in Python too (lang/pysettings.py)
    # "actor:", "critic:", "ref:", "sglang:": the mappings of an AReaL experiment YAML that leave out attn_impl or
    # attention_backend, whose defaults (flash_attention_2, fa3) are reported there (the keys' `omitted` tables);
    # "skyrl_train.entrypoints": a skyrl-train launch command that leaves flash_attn or sample packing at its default
    names = ("attn", "attention", "ATTENTION", "flash", "packing", "microbatch_padding", "openrlhf", "actor:", "critic:",
             "ref:", "sglang:", "[orchestrator]", "[data]", "skyrl_train.entrypoints", "USE_FA3")
    sources = ("S9", "S10")
    # Not the key words of its `kinds` (a file is read only where it spells one): these mark the statements whose
    # settings every config rule reads, and the key words would mark others (`microbatch_padding`: skyrl's
    # `remove_microbatch_padding`, packing by another name: it asserts FlashAttention-2)
    python_triggers = ("flash_attn", "flash_attention", "packing", "microbatch_padding", "ring_attn", "FLASH_ATTN")
    kinds = KINDS
    precedence = 1

    bad = DataExamples("bad", (
        Bad("deepspeed --module openrlhf.cli.train_sft --attn_implementation flash_attention_2 --zero_stage 2\n",
            path="train_sft.sh",
            fixed="deepspeed --module openrlhf.cli.train_sft --attn_implementation sdpa --zero_stage 2\n"),
        Bad("deepspeed --module openrlhf.cli.train_ppo_ray --flash_attn --zero_stage 2\n", path="run.sh",
            fixed="deepspeed --module openrlhf.cli.train_ppo_ray --zero_stage 2\n"),
        # OpenRLHF 0.11.2 openrlhf/cli/train_sft.py:324-328: packing forces flash_attention_2 (reported, no autofix)
        Bad(FORCED_BY_PACKING, path="openrlhf/cli/train_sft.py"),
        # an environment variable forced in a dict the code hands a process (Ray's runtime_env), and in YAML
        Bad('ray.init(runtime_env={"env_vars": {"VLLM_ATTENTION_BACKEND": "FLASH_ATTN"}})\n', path="train.py",
            target="sm75", fixed='ray.init(runtime_env={"env_vars": {"VLLM_ATTENTION_BACKEND": "FLEX_ATTENTION"}})\n'),
        Bad("runtime_env:\n  env_vars:\n    VLLM_ATTENTION_BACKEND: FLASH_ATTN\n", path="runtime_env.yaml", target="sm75",
            fixed="runtime_env:\n  env_vars:\n    VLLM_ATTENTION_BACKEND: FLEX_ATTENTION\n"),
    ))
    good = DataExamples("good", (
        Good("deepspeed --module openrlhf.cli.train_sft --attn_implementation sdpa\n", path="train_sft.sh"),
        Good("deepspeed --module openrlhf.cli.train_sft --attn_implementation flash_attention_2\n", path="run.sh",
             target="sm80"),
        Good(FORCED_BY_PACKING, path="openrlhf/cli/train_sft.py", target="sm80"),
        Good('ray.init(runtime_env={"env_vars": {"VLLM_ATTENTION_BACKEND": "FLASH_ATTN"}})\n', path="train.py",
             target="sm80"),
        # a vLLM release whose selector replaces a requested FLASH_ATTN with XFormers below 8.0 (vllm.toml)
        Good('ray.init(runtime_env={"env_vars": {"VLLM_ATTENTION_BACKEND": "FLASH_ATTN"}})\n', path="train.py",
             target="sm75", frameworks={"vllm": "0.6.3"}),
        Good("services:\n  rollout:\n    image: vllm/vllm-openai:v0.8.5\n    environment:\n"
             "      - VLLM_ATTENTION_BACKEND=FLASH_ATTN\n    command: --model m\n", path="compose.yaml", target="sm75"),
    ))

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.flash_attn_3

    def check_config(self, view, ctx) -> None:
        check(view, ctx, KINDS)
