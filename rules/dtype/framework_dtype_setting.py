from __future__ import annotations

from rlcompat.analysis.knowledgecheck import DataExamples, check
from rlcompat.contract import Bad, ConfigRule, Good

KINDS = frozenset({"dtype", "bf16-switch", "tf32-switch", "fp8-switch", "fp16-switch"})


class FrameworkDtypeSetting(ConfigRule):
    code = "RLC118"
    name = "framework-dtype-setting"
    title = "A framework's dtype, bf16 or TF32 setting (from rlcompat's framework knowledge) the GPU lacks"
    what = (
        "Reads rlcompat/knowledge/data/frameworks/<framework>/<version>.toml: every key, flag or environment variable whose kind is "
        "`dtype`, `bf16-switch`, `tf32-switch`, `fp8-switch` or `fp16-switch` (OpenRLHF `--ds.param_dtype`, TRL/transformers `bf16`, `tf32`, "
        "`model_init_kwargs.torch_dtype`, accelerate `mixed_precision` and ACCELERATE_MIXED_PRECISION, DeepSpeed "
        "`bf16.enabled` incl. \"auto\", DeepSpeed `fp16.enabled` below 7.0, PyTorch Lightning/Fabric `precision` "
        "(`\"bf16-mixed\"`, `\"bf16-true\"`, `\"bf16\"`; `trainer.precision` in LightningCLI and NeMo configs), vLLM/SGLang `--dtype`, LLaMA-Factory `pure_bf16`/`infer_dtype`, torchtune "
        "`dtype`, ms-swift `torch_dtype`), and reports a value the target cannot run. A command of a known framework "
        "version that leaves such a flag at a hazardous default is reported too (for a framework whose commands take "
        "Hydra overrides, skyrl-train's, such a config key: `trainer.bf16`, the FSDP param dtype), and so is a config file that leaves out "
        "a key whose default is a hazard (a torchtitan train config without `[training] mixed_precision_param`: "
        "bfloat16; a skyrl-train config whose `fsdp_config` leaves out `mixed_precision`: bf16), at the table or "
        "mapping that would carry it; and an Optional nested config field left at None where the framework's code runs "
        "None in bf16 (skyrl's `FSDPConfig.mixed_precision`), at the field. Adding a framework key is one data row "
        "(with its own example) in that file."
    )
    why = (
        "bf16 has no hardware below compute capability 8.0 (emulated, slow; vLLM refuses it) [S1][S6]; TF32 tensor "
        "cores arrive with Ampere [S15]; fp8 needs 8.9 [S20]; DeepSpeed refuses fp16 below 7.0, where it runs at 1/64 "
        "of the fp32 rate (sm61) [S62][S8]. The message names the framework knowledge (version and "
        "file:line) it used."
    )
    fix_safety = (
        "The dtype follows the precision policy for the key's role: training weights fp32 (safe); compute and serving "
        "fp32 on sm5x/sm6x (safe), fp16 on sm70/sm75 (unsafe: smaller range). Switches are turned off (safe). Where a "
        "framework has no spelling for the policy's dtype but one for fp32 (torchtitan's `mixed_precision_param`: bfloat16 "
        "or float32), fp32 is written: no mixed precision, slower, numerically sound. Where it has neither (OpenRLHF's "
        "`--ds.param_dtype` takes bf16 or fp16 only) there is no fix. A command's default is reported with the flag "
        "to pass, not added; a key a config file leaves out is added to its table."
    )
    # "[job]": the table of a torchtitan train config, "fsdp_config:" the mapping of a skyrl-train config, which
    # report a dtype default the file leaves out (a key's `omitted` tables; tests/test_framework_knowledge.py holds
    # each such key to a trigger of its rule); "--hf-checkpoint": the flag every slime launch passes, whose commands
    # leave the bf16 slime writes unless --fp16 is given; "skyrl_train.entrypoints": a skyrl-train launch command,
    # whose Hydra overrides leave every key it does not name at the entry config's default (`overrides = "hydra"`);
    # "[trainer]": the table every verifiers vf-rl config has (its `gpus` is required), whose [trainer.args] may leave
    # out RLConfig's bf16; "training:": a torchforge app config's torchtitan `training` mapping, which may leave out
    # mixed_precision_param; "align_anything.trainers": an align-anything launch command, whose trainer reads the
    # tree's YAML of the module's name (knowledge `module_config`), so the bf16 it leaves there is the run's
    languages = ConfigRule.languages | {"python"}  # its settings written in Python too (lang/pysettings.py)
    names = ("dtype", "bf16", "bfloat16", "precision", "PRECISION", "tf32", "fp8", "fp16", "openrlhf", "trl ", "[job]",
             "fsdp_config:", "--hf-checkpoint", "skyrl_train.entrypoints", "[trainer]", "training:",
             "align_anything.trainers")
    sources = ("S1", "S6", "S8", "S15", "S20", "S62")
    # Not the key words of its `kinds` (a file is read only where it spells one): these mark the statements whose
    # settings every config rule reads, and the key words would mark others. `mixed_precision`: the Optional nested
    # config field a key's `parent` names, whose None default the framework runs in bf16 (skyrl's
    # `FSDPConfig.mixed_precision`); its line spells no dtype (tests/test_framework_knowledge.py holds each `parent`
    # field to a trigger)
    python_triggers = ("bf16", "bfloat16", "tf32", "fp8", "mixed_precision")
    kinds = KINDS
    precedence = 1

    bad = DataExamples("bad", (
        Bad("deepspeed --module openrlhf.cli.train_sft --bf16 --zero_stage 2\n", path="train_sft.sh",
            fixed="deepspeed --module openrlhf.cli.train_sft --zero_stage 2\n"),
        Bad("accelerate launch --mixed_precision bf16 train.py\n", path="run.sh", target="sm75", unsafe=True,
            fixed="accelerate launch --mixed_precision fp16 train.py\n"),
        Bad("python -m vllm.entrypoints.openai.api_server --model m --dtype bfloat16\n", path="serve.sh",
            fixed="python -m vllm.entrypoints.openai.api_server --model m --dtype float32\n"),
    ))
    good = DataExamples("good", (
        Good("deepspeed --module openrlhf.cli.train_sft --zero_stage 2\n", path="train_sft.sh"),
        Good("python train.py --dtype bfloat16\n", path="run.sh", target="sm80"),
        Good("bf16:\n  enabled: false\n", path="ds_config.yaml"),
    ))

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.fp8

    def check_config(self, view, ctx) -> None:
        check(view, ctx, KINDS)
