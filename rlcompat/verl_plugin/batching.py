"""Continuous batching: requests fill the decoder's rows as rows free up, while the other rows keep decoding.

A row holds one request from its prefill until it finishes (a stop id, or its max tokens); it is then handed back
and filled by the next waiting request, whose prompt is prefilled into that row alone (with any others admitted at
the same step, as one left-padded group) while the rows around it stay where they are in their own sequences
(decode.py: a cache slot per row). So a batch no longer waits for its longest response, and a request that arrives
during a decode starts at the next step if a row is free instead of after the whole batch.

The host never waits for the GPU token by token: tokens, log-probs, lengths and stop state stay on the device. The
host looks at them (one synchronisation) every `CHECK_EVERY` steps, and at the step where a row reaches its max
tokens (known on the host from the step it was filled at), to hand finished rows back and fill them; a row that
stopped on a stop id in between decodes on, ignored, until then.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

import torch

from rlcompat.verl_plugin.sampling import Rows, pick, seeded_generator

CHECK_EVERY = 8  # decode steps between the host's looks at which rows finished
LENGTH_STEP = 64  # decoder lengths are multiples of this


@dataclass
class Request:
    prompt_ids: list[int]
    max_tokens: int
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1  # -1 or 0: no top-k cut, as verl's rollout config says it
    stop_ids: frozenset = frozenset()
    want_logprobs: bool = False
    seed: Optional[int] = None


@dataclass
class Completion:
    token_ids: list[int]
    log_probs: Optional[list[float]]
    finish_reason: str  # "stop" (a stop id was produced) or "length"
    extra: dict = field(default_factory=dict)


@dataclass
class Job:
    """A request and where its result goes: `finish(completion)`, or `fail(exception)` if decoding failed."""

    request: object
    finish: Callable
    fail: Optional[Callable] = None


def rows_for(waiting: int, max_rows: int) -> int:
    """Rows of a new decoder: the waiting requests rounded up to a power of two (spare rows let late arrivals start
    at once, and few distinct sizes keep few captured graphs), at most `max_rows`."""
    rows = 1
    while rows < waiting:
        rows *= 2
    return max(1, min(rows, max_rows))


def serve(generator, take: Callable[[int], list], on_group: Optional[Callable[[int], None]] = None) -> None:
    """Decode every job `take` hands out until it has no more and every row finished.

    `take(n)` is called once per decode step with how many more jobs the decoder could hold (0 included; up to the
    generator's `max_rows`) and returns at most that many waiting jobs, without blocking. `on_group(k)` is called
    for each prefill of k jobs."""
    waiting: list[Job] = list(take(generator.max_rows))
    try:
        while waiting:
            _Session(generator, waiting, take, on_group).run()
            waiting += take(generator.max_rows)
    except BaseException as exc:
        for job in waiting:
            if job.fail is not None:
                job.fail(exc)
        raise


def _length_for(jobs) -> int:
    need = max(len(j.request.prompt_ids) + j.request.max_tokens for j in jobs)
    return -(-need // LENGTH_STEP) * LENGTH_STEP


class _Session:
    """One decoder's rows, filled and refilled until none is busy and none is waiting. When more jobs wait than
    rows are free, or a job needs more slots than the rows have, it moves to a larger decoder (`_grow`): the busy
    rows' cache and state are copied over and they decode on where they were."""

    def __init__(self, generator, waiting: list, take, on_group):
        self.gen, self.waiting, self.take, self.on_group = generator, waiting, take, on_group
        device = generator.device
        self.batch = b = rows_for(len(waiting), generator.max_rows)
        self.length = length = _length_for(waiting)
        self.decode = generator._decoder(b, length)
        self.jobs: list[Optional[Job]] = [None] * b
        self.generators: dict[int, torch.Generator] = {}
        self.left = [0] * b  # steps until the row surely finished (its max tokens)
        self.tokens = torch.zeros((b, length + 1), dtype=torch.long, device=device)
        self.logprobs = torch.zeros((b, length + 1), dtype=torch.float32, device=device)
        self.lengths = torch.zeros(b, dtype=torch.long, device=device)
        self.stopped = torch.zeros(b, dtype=torch.bool, device=device)
        self.done = torch.ones(b, dtype=torch.bool, device=device)  # empty rows count as done
        self.rows: Optional[Rows] = None
        self.logits: Optional[torch.Tensor] = None

    def run(self) -> None:
        grain = self.gen._grain
        try:
            since_check = 0
            while True:
                busy = sum(j is not None for j in self.jobs)
                self.waiting += self.take(max(0, self.gen.max_rows - busy - len(self.waiting)))
                if self.waiting:
                    free = self.batch - busy
                    rows = rows_for(busy + len(self.waiting), self.gen.max_rows)
                    length = max(self.length, _length_for(self.waiting))
                    if (len(self.waiting) > free and rows > self.batch) or length > self.length:
                        self._grow(max(rows, self.batch), length)
                    free_rows = [i for i, j in enumerate(self.jobs) if j is None]
                    if free_rows:
                        self._fill(free_rows)
                if all(j is None for j in self.jobs):
                    return  # nothing decoding and nothing waiting
                next_ids = self._sample(grain)
                since_check += 1
                busy_rows = [i for i, j in enumerate(self.jobs) if j is not None]
                for i in busy_rows:
                    self.left[i] -= 1
                if since_check >= CHECK_EVERY or any(self.left[i] <= 0 for i in busy_rows):
                    since_check = 0
                    self._hand_back()
                    if all(j is None for j in self.jobs):
                        continue  # the next pass fills the rows or ends the session
                self.gen.steps_decoded += 1
                with grain.part("decode") as part:
                    # Watched, the step is captured again: the graph may have been captured unwatched (or on
                    # another thread). Its warm-up and capture run the forward where the watch sees every operator.
                    self.logits = self.decode.step(next_ids, ~self.done, recapture=part.watched)
                    part.check(self.logits)
        except BaseException as exc:
            for job in self.jobs:
                if job is not None and job.fail is not None:
                    job.fail(exc)
            self.jobs = [None] * self.batch
            raise

    def _grow(self, rows: int, length: int) -> None:
        """Move to a decoder of `rows` x `length`, the busy rows first and unchanged (their cache, slots, tokens)."""
        old, b, old_length = self.decode, self.batch, self.length
        new = self.gen._decoder(rows, length)
        new.take_rows_of(old)
        device = self.gen.device

        def wider(t, fill):
            out = torch.full((rows, length + 1), fill, dtype=t.dtype, device=device)
            out[:b, : old_length + 1] = t
            return out

        def longer(t, fill):
            return torch.cat([t, torch.full((rows - b,), fill, dtype=t.dtype, device=device)])

        self.tokens, self.logprobs = wider(self.tokens, 0), wider(self.logprobs, 0)
        self.lengths, self.stopped = longer(self.lengths, 0), longer(self.stopped, False)
        self.done = longer(self.done, True)
        if self.logits is not None:
            logits = self.logits.new_zeros((rows, self.logits.shape[-1]))
            logits[:b] = self.logits
            self.logits = logits
        self.jobs += [None] * (rows - b)
        self.left += [0] * (rows - b)
        self.decode, self.batch, self.length = new, rows, length
        self.rows = Rows([j.request if j is not None else None for j in self.jobs], self.generators, device)

    def _fill(self, free: list[int]) -> None:
        """Prefill waiting jobs into free rows, as one left-padded group whose width leaves each its max tokens."""
        group, width = [], 0
        for job in list(self.waiting):
            if len(group) == len(free):
                break
            r = job.request
            wider = max(width, len(r.prompt_ids))
            if all(wider + j.request.max_tokens <= self.length for j in group + [job]):
                group.append(job)
                width = wider
                self.waiting.remove(job)
        if not group:
            return
        gen, device = self.gen, self.gen.device
        ids = torch.full((len(group), width), gen.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(group), width), dtype=torch.long)
        for k, job in enumerate(group):
            n = len(job.request.prompt_ids)
            ids[k, width - n:] = torch.tensor(job.request.prompt_ids, dtype=torch.long)
            mask[k, width - n:] = 1
        slots = free[: len(group)]
        for slot, job in zip(slots, group):
            self.jobs[slot] = job  # in a row from here: a failure below reaches it
        rows = torch.tensor(slots, dtype=torch.long, device=device)
        with gen._grain.part("prefill") as part:
            first = self.decode.prefill(rows, ids.to(device), mask.to(device))
            part.check(first, *self.decode.cache_tensors())
        if self.logits is None:
            self.logits = first.new_zeros((self.batch, first.shape[-1]))
        self.logits.index_copy_(0, rows, first.to(self.logits.dtype))
        self.done.index_fill_(0, rows, False)
        self.stopped.index_fill_(0, rows, False)
        self.lengths.index_fill_(0, rows, 0)
        for slot, job in zip(slots, group):
            self.left[slot] = job.request.max_tokens
            g = seeded_generator(job.request.seed, device)
            if g is None:
                self.generators.pop(slot, None)
            else:
                self.generators[slot] = g
        self.rows = Rows([j.request if j is not None else None for j in self.jobs], self.generators, device)
        if self.on_group is not None:
            self.on_group(len(group))

    def _sample(self, grain) -> torch.Tensor:
        rows = self.rows
        with grain.part("sample") as part:
            scaled = self.logits.float() / rows.divisor
            logp = torch.log_softmax(scaled, dim=-1) if rows.needs_log_softmax else None
            next_ids = pick(scaled, rows, logp)
            at = self.lengths.unsqueeze(-1)  # a finished row writes past its tokens, which are kept
            self.tokens.scatter_(1, at, next_ids.unsqueeze(-1))
            if rows.want_logprobs:
                self.logprobs.scatter_(1, at, logp.gather(-1, next_ids.unsqueeze(-1)))
            live = ~self.done
            self.lengths += live.long()
            hit = live & (next_ids.unsqueeze(-1) == rows.stop_ids).any(-1)
            self.stopped |= hit
            self.done |= hit | (self.lengths >= rows.max_tokens)
            part.check(scaled, logp, next_ids, self.done)
        return next_ids

    def _hand_back(self) -> None:
        """Hand finished rows' results to their jobs and free the rows (one look at the device's state)."""
        done, lengths, stopped = torch.stack([self.done.long(), self.lengths, self.stopped.long()]).tolist()
        finished = [i for i, j in enumerate(self.jobs) if j is not None and done[i]]
        if not finished:
            return
        index = torch.tensor(finished, dtype=torch.long, device=self.gen.device)
        token_rows = self.tokens.index_select(0, index).tolist()
        want = any(self.jobs[i].request.want_logprobs for i in finished)
        logprob_rows = self.logprobs.index_select(0, index).tolist() if want else None
        for k, i in enumerate(finished):
            job, count = self.jobs[i], lengths[i]
            self.jobs[i] = None
            self.gen.tokens_generated += count
            job.finish(Completion(token_rows[k][:count],
                                       logprob_rows[k][:count] if job.request.want_logprobs else None,
                                       "stop" if stopped[i] else "length"))
