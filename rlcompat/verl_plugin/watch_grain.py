"""How closely the target guard watches the hf rollout: each part of the decode loop op by op once, then by results.

The guard's dtype watch passes every ATen operator through Python (rlcompat/verify/guard.py). Under it a prefill,
a graph capture or a decode step costs several times its unwatched time, which on 64-token responses was +19% to
+56% of the whole call (bench/results/rollout_speed.json, 2026-11-27). What the watch looks for, a bfloat16 tensor,
follows from the dtypes going in and the code that runs, not from token values or how many rows or positions there
are: the rollout's code is rlcompat's own and transformers' forward, its weights keep the dtype it was built with
(`HFGenerator.load_weights` casts every tensor it is given), and its inputs are token ids. So each part of the loop
(the prefill, the decode step with its graph capture, the sampling) runs under the per-operator watch the first
time it runs on a thread for a given (weight dtype, autocast) setting, and afterwards without it, the watch then
checking the part's results (logits, KV cache, tokens, log-probs). The trainer and everything else of the tree
under test stay watched operator by operator.
"""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator

import torch

from rlcompat.verify.guard import active_dtype_watch, paused_dtype_watch

class Part:
    """One part's run: `watched` says whether this is its first run under the watch, which sees its every operator
    (a decode step then captures its graph again); `check` is what to call on the tensors it produced (a no-op
    then, or where no guard is on)."""

    def __init__(self, watched: bool, check: Callable[..., None] | None = None):
        self.watched = watched
        self._check = check

    def check(self, *tensors) -> None:
        if self._check is not None:
            self._check([t for t in tensors if t is not None])


def _autocast_state(device_type: str) -> tuple:
    try:
        return (torch.is_autocast_enabled(device_type), torch.get_autocast_dtype(device_type))
    except (AttributeError, TypeError, RuntimeError):  # torch < 2.4 has no per-device queries
        return (torch.is_autocast_enabled(),)


class WatchGrain:
    def __init__(self, device: torch.device, weight_dtype: torch.dtype):
        self.device_type = device.type
        self.weight_dtype = weight_dtype

    @contextlib.contextmanager
    def part(self, name: str) -> Iterator[Part]:
        """Run one part of the loop under the watch (its first run on this thread's watch), or without it."""
        watch = active_dtype_watch()
        if watch is None:
            yield Part(watched=False)
            return
        key = (name, self.weight_dtype, _autocast_state(self.device_type))
        seen = watch.__dict__.setdefault("_rlcompat_rollout_parts", set())  # per watch: one per thread and guard
        if key not in seen:
            yield Part(watched=True)
            seen.add(key)  # only once it ran through without a violation
            return
        with paused_dtype_watch() as paused:
            # Not paused (another dispatch mode is on the stack): the watch still sees each operator run eagerly,
            # and a kept graph is replayed as it was captured under it.
            yield Part(watched=False,
                       check=(lambda tensors: watch.check(tensors, f"hf rollout {name}")) if paused else None)
