"""verl's replay buffer with a short poll, and when `verify --trainer` puts it in place of verl's own."""

from __future__ import annotations

import pytest

from rlcompat.verify.trainer import replay_poll_overrides

HF = {"actor_rollout_ref.rollout.name": "hf"}
PATH = "trainer.v1.sampler.custom_sampler.path=pkg://rlcompat.verl_plugin.replay_poll"


def test_an_hf_run_with_verls_default_sampler_gets_the_short_poll():
    assert replay_poll_overrides(HF) == [PATH, "trainer.v1.sampler.custom_sampler.name=PromptPollReplayBuffer"]
    assert replay_poll_overrides({**HF, "trainer.v1.trainer_mode": "async"})[1].endswith("=PromptPollReplayBufferAsync")


@pytest.mark.parametrize("setting", [
    {"actor_rollout_ref.rollout.name": "vllm"},  # not the hf rollout: the run is left as the script has it
    {**HF, "trainer.use_v1": "False"},  # the legacy trainer has no replay buffer
    {**HF, "algorithm.filter_groups.enable": "True"},  # verl passes a custom sampler no DAPO filter
    {**HF, "trainer.v1.sampler.sync_refill_failed_groups": "true"},
    {**HF, "trainer.v1.sampler.custom_sampler.path": "pkg://mine.sampler"},  # the user's own sampler stays
])
def test_runs_the_short_poll_would_change_are_left_alone(setting):
    assert replay_poll_overrides(setting) == []


def test_the_buffers_are_verls_with_only_the_interval_changed():
    pytest.importorskip("verl")
    from omegaconf import OmegaConf
    from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer, ReplayBufferAsync

    from rlcompat.verl_plugin.replay_poll import PromptPollReplayBuffer, PromptPollReplayBufferAsync

    def build(cls, **sampler_kwargs):
        # the arguments verl 0.9.1 gives a custom sampler (verl/trainer/ppo/v1/trainer_base.py:155-162)
        return cls(trainer_mode="sync", trainer_config=OmegaConf.create({}), max_off_policy_threshold=8,
                   max_off_policy_strategy="drop", sampler_kwargs=OmegaConf.create(sampler_kwargs), refill_fn=None)

    assert build(ReplayBuffer).poll_interval == 2.0  # verl's own, the wait this replaces
    assert build(PromptPollReplayBuffer).poll_interval == 0.05
    assert build(PromptPollReplayBuffer, poll_interval=0.2).poll_interval == 0.2
    assert issubclass(PromptPollReplayBufferAsync, ReplayBufferAsync)
    assert build(PromptPollReplayBufferAsync).poll_interval == 0.05
    # nothing else differs from verl's class: no method is overridden
    assert set(vars(PromptPollReplayBuffer)) - {"__init__", "__doc__", "__module__", "__qualname__"} == set()
