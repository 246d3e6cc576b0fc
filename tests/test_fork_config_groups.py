"""A verl fork that carries config groups (LLM360/Reasoning360's 0.4.1.dev: `actor@actor_rollout_ref.actor:
dp_actor` in its ppo_trainer.yaml, as verl 0.5.0 has, while its version names 0.4.1, whose knowledge has no
`[[mount]]` rows): its group files are read where its own defaults list mounts them (verl_config.own_mounts), so
their keys are the run's keys, and the tables its workers' hard-coded hazards stand for carry them."""

from __future__ import annotations

import pytest

from rlcompat.knowledge import verl_config
from tests.test_launch_path import FORK_MIXED, _scan
from tests.verl_trees import verl_package

PPO_TRAINER = """defaults:
  - actor@actor_rollout_ref.actor: dp_actor
  - ref@actor_rollout_ref.ref: ref
  - rollout@actor_rollout_ref.rollout: rollout
  - critic@critic: critic
  - _self_

actor_rollout_ref:
  model:
    path: ~/models/x
    override_config: {}
algorithm:
  adv_estimator: ESTIMATOR
"""
GROUPS = {
    "trainer/config/actor/dp_actor.yaml": "defaults:\n  - actor\n  - _self_\nstrategy: fsdp\nfsdp_config:\n"
                                          "  param_offload: false\n",
    "trainer/config/actor/actor.yaml": "use_torch_compile: true\nuse_kl_loss: false\n",
    "trainer/config/ref/ref.yaml": "use_torch_compile: ${oc.select:actor_rollout_ref.actor.use_torch_compile,true}\n"
                                   "fsdp_config:\n  param_offload: false\n",
    "trainer/config/rollout/rollout.yaml": "name: vllm\ndtype: bfloat16\n",
    "trainer/config/critic/critic.yaml": "model:\n  path: ~/models/x\n  override_config: {}\n",
}


def _fork(tmp_path, estimator="gae", version="0.4.1.dev"):
    return verl_package(tmp_path, version, {"trainer/config/ppo_trainer.yaml": PPO_TRAINER.replace("ESTIMATOR", estimator),
                                            "trainer/main_ppo.py": "pass\n",
                                            "workers/fsdp_workers.py": "import torch\n" + FORK_MIXED, **GROUPS})


def test_a_forks_own_defaults_list_mounts_its_group_files(tmp_path, fresh_verl_detection):
    package = _fork(tmp_path)
    mounts, written = verl_config.own_mounts(str(package), "trainer/config/ppo_trainer.yaml")
    assert mounts["actor/dp_actor.yaml"] == mounts["actor/actor.yaml"] == ("actor_rollout_ref.actor",)
    assert mounts["critic/critic.yaml"] == ("critic",) and "ppo_trainer.yaml" not in mounts
    assert "actor_rollout_ref.actor.use_torch_compile" in written
    # a fork whose config composes no group file keeps the closest release's rows (none for 0.4.1)
    (package / "trainer" / "config" / "ppo_trainer.yaml").write_text("actor_rollout_ref:\n  model:\n    path: x\n")
    verl_config.own_mounts.cache_clear()
    assert verl_config.own_mounts(str(package), "trainer/config/ppo_trainer.yaml") is None


@pytest.mark.parametrize("estimator,critic", [("gae", True), ("grpo", False)])
def test_a_forks_group_files_carry_the_runs_hazards_where_its_defaults_list_mounts_them(
        run_cli, tmp_path, fresh_verl_detection, estimator, critic):
    package = _fork(tmp_path, estimator)
    _, findings = _scan(run_cli, package / "trainer" / "config")
    told = {(f["path"].split("config/")[-1], f["code"], f["line"]) for f in findings}
    assert ("actor/dp_actor.yaml", "RLC101", 5) in told  # its fsdp_config sets no mixed_precision: the code's bf16
    assert ("rollout/rollout.yaml", "RLC104", 2) in told  # actor_rollout_ref.rollout.dtype: bfloat16
    assert ("actor/actor.yaml", "RLC351", 1) in told
    # the reference policy's use_torch_compile follows the actor's, which the composition always sets: judged there
    assert not [t for t in told if t[0] == "ref/ref.yaml"]
    assert (("critic/critic.yaml", "RLC201", 3) in told) is critic  # the critic's model, trained under gae only
    mixed = next(f for f in findings if f["path"].endswith("dp_actor.yaml") and f["code"] == "RLC101")
    assert "`actor_rollout_ref.actor.fsdp_config`" in mixed["message"] and "fsdp_workers.py:" in mixed["message"]


def test_a_release_keeps_its_own_knowledge_rows(tmp_path, fresh_verl_detection):
    """A tree that is exactly a release rlcompat knows reads that release's rows, not its own defaults list."""
    from rlcompat.knowledge import identity

    package = _fork(tmp_path, version="0.5.0")
    release = identity.verl_package(str(package))
    assert release.exact
    assert verl_config.knowledge_of(release).mounts == verl_config.load_version("0.5.0").mounts
