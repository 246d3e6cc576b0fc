"""A fork's entry point may map a role to a worker class of its own under a test of a config key (PRIME's
main_ppo.py:192-205: `reward_model.rm_type == 'prime'` -> PRIMERewardModelWorker); rlcompat/analysis/fork_workers.py
says which class a run's values select, so that the hazards of that class's code are reported at the key that
selects it, not those of the class a release's knowledge names."""

from __future__ import annotations

from rlcompat.analysis.fork_workers import chosen_worker

ENTRY = '''
def main_task(config):
    role_worker_mapping = {}
    if config.reward_model.enable and config.reward_model.rm_coef != 0.:
        if config.reward_model.rm_type == 'normal':
            if config.reward_model.strategy == 'fsdp':
                from verl.workers.fsdp_workers import RewardModelWorker
            else:
                raise NotImplementedError
            role_worker_mapping[Role.RewardModel] = ray.remote(RewardModelWorker)
        elif config.reward_model.rm_type == 'prime':
            from verl.workers.fsdp_workers import PRIMERewardModelWorker
            role_worker_mapping[Role.RewardModel] = ray.remote(PRIMERewardModelWorker)
'''
RUN = {"reward_model.enable": "True", "reward_model.rm_coef": "5", "reward_model.rm_type": "prime",
       "reward_model.strategy": "fsdp"}


def test_the_key_that_maps_the_role_to_the_forks_own_class():
    choice = chosen_worker(ENTRY, "RewardModelWorker", RUN)
    assert (choice.cls, choice.module, choice.line, choice.key, choice.value) == (
        "PRIMERewardModelWorker", "verl.workers.fsdp_workers", 13, "reward_model.rm_type", "prime")


def test_the_releases_class_is_no_other_choice():
    assert chosen_worker(ENTRY, "RewardModelWorker", {**RUN, "reward_model.rm_type": "normal"}) is None


def test_an_enclosing_test_that_fails_or_is_unknown_claims_nothing():
    assert chosen_worker(ENTRY, "RewardModelWorker", {**RUN, "reward_model.rm_coef": "0"}) is None
    assert chosen_worker(ENTRY, "RewardModelWorker", {**RUN, "reward_model.rm_coef": None}) is None
    assert chosen_worker(ENTRY, "RewardModelWorker", {k: v for k, v in RUN.items() if k != "reward_model.enable"}) is None


def test_a_role_the_releases_class_is_not_mapped_to_is_not_read():
    assert chosen_worker(ENTRY, "CriticWorker", RUN) is None


REF_ENTRY = '''
def main_task(config):
    if config.algorithm.use_kl_in_reward or config.actor_rollout_ref.actor.use_kl_loss:
        role_worker_mapping[Role.RefPolicy] = ray.remote(ActorRolloutRefWorker)
'''


def test_a_role_mapped_under_a_failing_test_is_not_built():
    from rlcompat.analysis.fork_workers import role_built

    off = {"algorithm.use_kl_in_reward": "False", "actor_rollout_ref.actor.use_kl_loss": "False"}
    assert not role_built(REF_ENTRY, "RefPolicy", off)
    assert role_built(REF_ENTRY, "RefPolicy", {**off, "actor_rollout_ref.actor.use_kl_loss": "True"})
    assert role_built(REF_ENTRY, "RefPolicy", {"algorithm.use_kl_in_reward": "False"})  # unknown: no claim
    assert not role_built("# role_worker_mapping[Role.RefPolicy] = ray.remote(W)\n", "RefPolicy", off)


def test_a_role_is_surely_built_only_where_every_test_on_its_way_is_known_to_hold():
    from rlcompat.analysis.fork_workers import role_surely_built

    off = {"algorithm.use_kl_in_reward": "False", "actor_rollout_ref.actor.use_kl_loss": "False"}
    assert role_surely_built(REF_ENTRY, "RefPolicy", {**off, "actor_rollout_ref.actor.use_kl_loss": "True"})
    assert not role_surely_built(REF_ENTRY, "RefPolicy", off)
    assert not role_surely_built(REF_ENTRY, "RefPolicy", {"algorithm.use_kl_in_reward": "False"})  # unknown: no claim
    assert not role_surely_built(REF_ENTRY, "RewardModel", {**off, "actor_rollout_ref.actor.use_kl_loss": "True"})
