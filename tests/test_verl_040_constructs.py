"""What verl 0.4.x's trainer configs needed (issue 28 recall round 2, the verl-0.4.0 dev corpus, a sibling of the
holdout verl-0.4.1): main_generation's rollout engine in generation.yaml. Each test builds a small verl package (its
version file and the config files the test needs)."""

from __future__ import annotations

import pytest

from rlcompat.api import scan_paths
from rlcompat.knowledge.targets import resolve_target
from tests.verl_trees import verl_package

SM61, SM75 = resolve_target("sm61"), resolve_target("sm75")

pytestmark = pytest.mark.usefixtures("fresh_verl_detection")


def _found(package, target):
    return [(f.path.split("config/")[-1], f.location.line, f.code) for f in scan_paths([str(package)], target).findings]


@pytest.mark.parametrize("version", ["0.4.1", "0.4.0"])
def test_main_generation_rollout_engine(tmp_path, version):
    package = verl_package(tmp_path, version, {"trainer/config/generation.yaml":
                                               "rollout:\n  name: vllm\n  dtype: bfloat16\n"})
    assert ("generation.yaml", 2, "RLC401") in _found(package, SM61)
    assert "RLC401" not in [code for _, _, code in _found(package, SM75)]  # vLLM runs on a T4 (fp16)


SFT_TRAINER = '''import torch
from torch.distributed.fsdp import MixedPrecision


class FSDPSFTTrainer:
    def _build_model_optimizer(self):
        model = AutoModelForCausalLM.from_pretrained(self.path, attn_implementation="flash_attention_2")
        mixed_precision = MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        return model, mixed_precision
'''
MEGATRON_WORKERS = '''import torch


class ActorRolloutRefWorker:
    def init_model(self):
        self.param_dtype = torch.bfloat16
'''
SFT_CONFIG = "model:\n  partial_pretrain: m\n  fsdp_config:\n    model_dtype: fp32\n"
MEGATRON_CONFIG = ("actor_rollout_ref:\n  actor:\n    strategy: megatron\n    megatron:\n"
                   "      override_transformer_config: {}\n")


@pytest.mark.parametrize("version, whose", [("0.4.1", "verl 0.4.1's code"), ("0.4.0", "the fork's code")])
def test_entry_configs_whose_own_code_writes_the_hazard(tmp_path, version, whose):
    """sft_trainer.yaml stands for the model fsdp_sft_trainer loads with FlashAttention-2 and wraps in bf16 mixed
    precision written in its code; ppo_megatron_trainer.yaml's override_transformer_config for the bfloat16 the
    Megatron workers write. Reported on those tables, citing the package's own file:line, on sm61 and sm75."""
    package = verl_package(tmp_path, version, {
        "trainer/config/sft_trainer.yaml": SFT_CONFIG, "trainer/fsdp_sft_trainer.py": SFT_TRAINER,
        "trainer/config/ppo_megatron_trainer.yaml": MEGATRON_CONFIG, "workers/megatron_workers.py": MEGATRON_WORKERS})
    for target in (SM61, SM75):
        report = scan_paths([str(package / "trainer" / "config")], target)
        told = {(f.path.split("config/")[-1], f.location.line, f.code) for f in report.findings
                if whose + " decides it" in f.message}
        assert told == {("sft_trainer.yaml", 1, "RLC201"), ("sft_trainer.yaml", 3, "RLC101"),
                        ("ppo_megatron_trainer.yaml", 5, "RLC101")}, report.findings
        sft = next(f for f in report.findings if f.location.line == 1 and f.path.endswith("sft_trainer.yaml"))
        assert "fsdp_sft_trainer.py:7 (FSDPSFTTrainer._build_model_optimizer)" in sft.message


def test_a_megatron_mapping_that_sets_bf16_is_the_codes_input(tmp_path):
    config = MEGATRON_CONFIG.replace("{}", "\n        bf16: false\n        params_dtype: float32")
    package = verl_package(tmp_path, "0.4.1", {"trainer/config/ppo_megatron_trainer.yaml": config,
                                               "workers/megatron_workers.py": MEGATRON_WORKERS})
    report = scan_paths([str(package / "trainer" / "config")], SM75)
    assert not [f for f in report.findings if "decides it" in f.message]


def test_a_command_running_a_forks_sft_trainer_is_judged_by_the_forks_code_not_a_releases(tmp_path):
    """RLC123 cites what a verl release's fsdp_sft_trainer writes; a fork's trainer is its own code, which the rules
    that read the fork's code judge (at the fork's own lines), so RLC123 says nothing about a command that runs the
    fork's module."""
    package = verl_package(tmp_path, "0.4.0", {"trainer/config/sft_trainer.yaml": SFT_CONFIG,
                                               "trainer/fsdp_sft_trainer.py": SFT_TRAINER})
    script = tmp_path / "run_sft.sh"
    script.write_text("torchrun --nproc_per_node=2 -m verl.trainer.fsdp_sft_trainer \\\n"
                      "    model.partial_pretrain=Qwen/Qwen2.5-0.5B-Instruct\n")
    for target in (SM61, SM75):
        report = scan_paths([str(tmp_path)], target)
        assert not [f for f in report.findings if f.code == "RLC123"], report.findings
        assert {(f.location.line, f.code) for f in report.findings
                if f.path.endswith("verl/trainer/fsdp_sft_trainer.py")} == {(7, "RLC201"), (8, "RLC101")}
    # The same command in a tree without the fork is judged with the release the tree pins.
    pinned = tmp_path / "pinned"
    pinned.mkdir()
    (pinned / "run_sft.sh").write_text(script.read_text())
    (pinned / "requirements.txt").write_text("verl==0.4.1\n")
    report = scan_paths([str(pinned)], SM75)
    assert [f.location.line for f in report.findings if f.code == "RLC123"] == [1]
