"""verl 0.9.1's replay buffers, looking for finished rollouts every 50 ms instead of every 2 s.

verl's v1 trainer (the default, `trainer.use_v1: true`) takes each step's batch from its replay buffer, whose
`sample` checks TransferQueue for finished rollouts and, until enough are there, sleeps `poll_interval` seconds
(`verl/trainer/ppo/v1/replay_buffer.py:144` `poll_interval: float = 2.0`, `:409` `time.sleep(self.poll_interval)`).
verl builds the buffer without passing it (`verl/trainer/ppo/v1/trainer_base.py:155-185`), so every step's "gen"
phase lasts a whole number of 2 s polls: with the hf rollout decoding 8 x 64 tokens in about 0.6 s on an H200,
the phase read 2.07 s in every step (docs/verify.md). verl's own extension point for the buffer is
`trainer.v1.sampler.custom_sampler.{path,name}` (`trainer_base.py:146-151`); these subclasses change nothing but
the interval (`trainer.v1.sampler.sampler_kwargs.poll_interval`, else 50 ms).

verl passes a custom sampler only the base arguments (`trainer_base.py:163-164`: no DAPO group filter, no refill of
failed groups), so they stand in for verl's own buffer only where those are off; `sampler_overrides` says when.
"""

from __future__ import annotations

from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer, ReplayBufferAsync

POLL_SECONDS = 0.05


def _interval(sampler_kwargs) -> float:
    try:
        value = (sampler_kwargs or {}).get("poll_interval")
    except AttributeError:
        value = None
    return POLL_SECONDS if value is None else float(value)


class PromptPollReplayBuffer(ReplayBuffer):
    """verl's synchronous replay buffer (`trainer.v1.trainer_mode=sync`) with a short poll."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.poll_interval = _interval(self.sampler_kwargs)


class PromptPollReplayBufferAsync(ReplayBufferAsync):
    """verl's asynchronous replay buffer (any other trainer mode) with a short poll."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.poll_interval = _interval(self.sampler_kwargs)
