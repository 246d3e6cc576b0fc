"""A recipe's own worker beside the verl package (verl 0.4.0's recipe/prime: main_prime maps the reward model to
PRIMERewardModelWorker when reward_model.enable is set, and that worker writes FlashAttention-2 and bf16 FSDP mixed
precision itself): the recipe config's reward-model tables carry those hazards (verl/0.4.1.toml `[[handle]]` rows
whose `config` and `code` sit beside the package), only where the recipe's module builds that role."""

from __future__ import annotations

import pytest

from tests.test_recipe_entry import _scan, _tree

PRIME_MAIN = """import hydra


@hydra.main(config_path="config", config_name="prime_trainer", version_base=None)
def main(config):
    from verl.workers.fsdp_workers import ActorRolloutRefWorker
    role_worker_mapping = {Role.ActorRollout: ray.remote(ActorRolloutRefWorker)}
    if config.reward_model.enable:
        from .prime_fsdp_workers import PRIMERewardModelWorker
        role_worker_mapping[Role.RewardModel] = ray.remote(PRIMERewardModelWorker)
"""
PRIME_WORKERS = """import torch
from transformers import AutoModelForCausalLM


class PRIMERewardModelWorker:
    def _build_reward_ref_model_optimizer(self, config):
        module = AutoModelForCausalLM.from_pretrained(config.path, attn_implementation="flash_attention_2")
        mixed_precision_config = config.fsdp_config.get("mixed_precision", None)
        if mixed_precision_config is not None:
            param_dtype = mixed_precision_config.get("param_dtype", "fp32")
        else:
            param_dtype = torch.bfloat16
        return module, param_dtype
"""
PRIME_CONFIG = """hydra:
  searchpath:
    - file://verl/trainer/config

defaults:
  - ppo_trainer
  - _self_

actor_rollout_ref:
  model:
    use_remove_padding: True
reward_model:
  enable: ENABLE
  model:
    ref_path: ${reward_model.model.path}
    fsdp_config:
      param_offload: False
"""


@pytest.mark.parametrize("enable", [True, False])
def test_a_recipe_configs_reward_model_tables_carry_what_its_own_worker_writes(run_cli, tmp_path,
                                                                               fresh_verl_detection, enable):
    tree = _tree(tmp_path)
    prime = tree / "recipe" / "prime"
    (prime / "config").mkdir(parents=True)
    (prime / "main_prime.py").write_text(PRIME_MAIN)
    (prime / "prime_fsdp_workers.py").write_text(PRIME_WORKERS)
    (prime / "config" / "prime_trainer.yaml").write_text(PRIME_CONFIG.replace("ENABLE", str(enable)))
    found = [f for f in _scan(run_cli, tree, "recipe/prime/config/prime_trainer.yaml")
             if f["path"].endswith("prime_trainer.yaml") and "decides it" in f["message"]]
    assert {(f["code"], f["line"]) for f in found} == ({("RLC201", 14), ("RLC101", 16)} if enable else set())
    if enable:
        assert all("recipe/prime/prime_fsdp_workers.py:" in f["message"] for f in found)
    # the same config, with no module of the tree composing it, maps no worker
    (prime / "main_prime.py").unlink()
    assert not [f for f in _scan(run_cli, tree, "recipe/prime/config/prime_trainer.yaml") if "decides it" in f["message"]]
