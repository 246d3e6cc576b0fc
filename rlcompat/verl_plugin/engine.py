"""A batched token-in/token-out generator on plain transformers: what the `hf` rollout serves verl with.

No verl and no Ray here, so it can be tested on its own. One decode loop with a static KV cache
(rlcompat/verl_plugin/decode.py: a CUDA graph per batch shape on a GPU, kept for the next batches of that shape)
serves a batch of requests whose sampling settings may differ row by row (temperature, top-p, top-k, max tokens,
stop ids).
Prompts are left-padded and positions follow the attention mask, as `transformers.generate` does, so greedy
decoding gives the same tokens as `generate` (tests/test_verl_plugin.py, tests/test_verl_plugin_decode_reuse.py).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Iterable, Optional

import torch

from rlcompat.verl_plugin.decode import StaticDecode
from rlcompat.verl_plugin.watch_grain import WatchGrain


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


class HFGenerator:
    """Owns one causal LM; generates for batches of `Request`s; can drop its device memory and take new weights."""

    def __init__(self, model: torch.nn.Module, device: str | torch.device, pad_token_id: int,
                 cuda_graphs: bool = True):
        self.model = model.eval()
        self.cuda_graphs = cuda_graphs  # decode steps replayed from a CUDA graph (on a GPU; decode.py says why)
        self._stream = None
        self.device = torch.device(device)
        self.pad_token_id = pad_token_id
        self.asleep = False
        self._host: Optional[list[torch.Tensor]] = None  # pinned host copies of the weights while asleep
        self.tokens_generated = 0
        self.model.to(self.device)
        # Decoders (cache, buffers, captured graph) by (batch, length, graphed), most recent last; see `_decoder`.
        self._decoders: "OrderedDict[tuple[int, int, bool], StaticDecode]" = OrderedDict()
        self._grain = WatchGrain(self.device, next(self.model.parameters()).dtype)

    @classmethod
    def from_pretrained(cls, path: str, device: str, dtype: torch.dtype, attn_implementation: str = "sdpa",
                        trust_remote_code: bool = False) -> "HFGenerator":
        from transformers import AutoConfig, AutoModelForCausalLM

        config = AutoConfig.from_pretrained(path, trust_remote_code=trust_remote_code)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, attn_implementation=attn_implementation,
                                                     trust_remote_code=trust_remote_code)
        pad = config.pad_token_id if getattr(config, "pad_token_id", None) is not None else 0
        return cls(model, device, pad)

    def _graph_stream(self) -> "torch.cuda.Stream | None":
        """The one stream every batch's decode graph is warmed up and captured on (decode.py says why one)."""
        if not self.cuda_graphs or self.device.type != "cuda":
            return None
        if self._stream is None:
            self._stream = torch.cuda.Stream(self.device)
        return self._stream

    # ---- memory ------------------------------------------------------------------------------------------
    def _tensors(self) -> list[torch.Tensor]:
        """Every parameter and buffer once (a tied embedding is one Parameter shared by both modules)."""
        return [*self.model.parameters(), *self.model.buffers()]

    @torch.no_grad()
    def sleep(self) -> None:
        """Move the weights to host memory so the trainer can use the device; a no-op for memory on a CPU.

        The host copies are page-locked buffers made at the first sleep and reused: verl sleeps and wakes the
        rollout every step, and a pageable copy of 2 GB took 0.6 s each way on an H200 (about 4 GB/s) where
        pinned memory moves at the link's speed (bench/results/rollout_speed.json, `sleep_wake`)."""
        if self.asleep or self.device.type == "cpu":
            self.asleep = True
            return
        self._decoders.clear()  # their graphs read the weights where they are now; their caches go too
        tensors = self._tensors()
        if self._host is None:
            try:
                self._host = [torch.empty(t.shape, dtype=t.dtype, pin_memory=True) for t in tensors]
            except RuntimeError:  # the host cannot lock that much memory: pageable copies, slower but they fit
                self._host = [torch.empty(t.shape, dtype=t.dtype) for t in tensors]
        for host, t in zip(self._host, tensors):
            host.copy_(t, non_blocking=True)
        torch.cuda.synchronize(self.device)
        for host, t in zip(self._host, tensors):
            t.data = host
        _empty_cache(self.device)
        self.asleep = True

    def release_decoders(self) -> None:
        """Free the kept decoders' KV caches and graphs (verl's `release_kv_cache`); the next batch makes new ones."""
        self._decoders.clear()
        _empty_cache(self.device)

    @torch.no_grad()
    def wake_up(self) -> None:
        if self.asleep and self.device.type != "cpu":
            for t in self._tensors():
                t.data = t.data.to(self.device, non_blocking=True)
            torch.cuda.synchronize(self.device)
        self.asleep = False

    @torch.no_grad()
    def load_weights(self, named_tensors: Iterable[tuple[str, torch.Tensor]]) -> int:
        """Copy (name, tensor) pairs into the model's parameters and buffers; returns how many were copied.

        Names are the Hugging Face state-dict names that verl's engines export (`get_per_tensor_param`).
        A tied output embedding is exported once and shared by the model, so a missing `lm_head.weight` is fine.
        """
        state = dict(self.model.named_parameters(remove_duplicate=False))
        state.update(dict(self.model.named_buffers(remove_duplicate=False)))
        copied = 0
        unknown = []
        for name, tensor in named_tensors:
            target = state.get(name)
            if target is None:
                unknown.append(name)
                continue
            if target.shape != tensor.shape:
                raise ValueError(f"weight {name}: shape {tuple(tensor.shape)} from the actor, "
                                 f"{tuple(target.shape)} in the rollout model")
            target.copy_(tensor.to(dtype=target.dtype))
            copied += 1
        if unknown:
            raise ValueError(f"the rollout model has no weights named {unknown[:5]} (of {len(unknown)} unknown)")
        return copied

    # ---- generation --------------------------------------------------------------------------------------
    @torch.no_grad()
    def generate(self, requests: list[Request]) -> list[Completion]:
        if not requests:
            return []
        if self.asleep:
            raise RuntimeError("the hf rollout is asleep (its weights are off the device); wake_up() first")
        device = self.device
        batch = len(requests)
        width = max(len(r.prompt_ids) for r in requests)
        input_ids = torch.full((batch, width), self.pad_token_id, dtype=torch.long)
        mask = torch.zeros((batch, width), dtype=torch.long)
        for row, r in enumerate(requests):
            n = len(r.prompt_ids)
            input_ids[row, width - n:] = torch.tensor(r.prompt_ids, dtype=torch.long)
            mask[row, width - n:] = 1
        input_ids, mask = input_ids.to(device), mask.to(device)
        rows = _Rows(requests, device)
        longest = int(max(r.max_tokens for r in requests))
        decode = self._decoder(batch, width + longest)
        decode.begin(mask)
        grain = self._grain

        # Every row's tokens, log-probs and state stay on the device: the host learns them once at the end, and
        # whether all rows finished every few steps, so the decode loop never waits for the GPU token by token.
        tokens = torch.zeros((batch, longest), dtype=torch.long, device=device)
        logprobs = torch.zeros((batch, longest), dtype=torch.float32, device=device)
        lengths = torch.zeros(batch, dtype=torch.long, device=device)
        stopped = torch.zeros(batch, dtype=torch.bool, device=device)
        done = torch.zeros(batch, dtype=torch.bool, device=device)
        with grain.part("prefill") as part:
            logits = decode.prefill(input_ids, mask)
            part.check(logits, *decode.cache_tensors())
        for step in range(longest):
            with grain.part("sample") as part:
                scaled = logits.float() / rows.divisor
                logp = torch.log_softmax(scaled, dim=-1) if rows.needs_log_softmax else None
                next_ids = _pick(scaled, rows, logp)
                tokens[:, step] = next_ids
                if rows.want_logprobs:
                    logprobs[:, step] = logp.gather(-1, next_ids.unsqueeze(-1)).squeeze(-1)
                live = ~done
                lengths += live.long()
                hit = live & (next_ids.unsqueeze(-1) == rows.stop_ids).any(-1)
                stopped |= hit
                done |= hit | (lengths >= rows.max_tokens)
                part.check(scaled, logp, next_ids, done)
            if step + 1 == longest or ((step + 1) % _CHECK_EVERY == 0 and bool(done.all())):
                break
            with grain.part("decode") as part:
                # Watched, the step is captured again: the graph may have been captured unwatched (or on another
                # thread). Its warm-up and capture run the forward where the watch sees every operator.
                logits = decode.step(next_ids, recapture=part.watched)
                part.check(logits)
        counts, stops = lengths.tolist(), stopped.tolist()
        token_rows, logprob_rows = tokens.tolist(), logprobs.tolist()
        self.tokens_generated += sum(counts)
        return [
            Completion(token_rows[i][: counts[i]], logprob_rows[i][: counts[i]] if r.want_logprobs else None,
                       "stop" if stops[i] else "length")
            for i, r in enumerate(requests)
        ]

    def _decoder(self, batch: int, needed: int) -> StaticDecode:
        """A decoder for `batch` rows and at least `needed` positions, kept for the next batches of that shape.

        Lengths are rounded up to a multiple of `_LENGTH_STEP`, so prompts of nearby widths share one decoder and
        its captured graph (the extra slots are masked). At most `_DECODERS_KEPT` are kept, the least recently used
        dropped first, so memory stays bounded; all are dropped on `sleep`, which moves the weights the graphs
        read."""
        length = -(-needed // _LENGTH_STEP) * _LENGTH_STEP
        stream = self._graph_stream()
        key = (batch, length, stream is not None)
        decode = self._decoders.pop(key, None)
        if decode is None:
            while len(self._decoders) >= _DECODERS_KEPT:
                self._decoders.popitem(last=False)
            decode = StaticDecode(self.model, batch, length, self.device, stream)
        self._decoders[key] = decode
        return decode


_CHECK_EVERY = 16  # decode steps between the host's looks at whether every row finished
_LENGTH_STEP = 64  # decoder lengths are multiples of this
_DECODERS_KEPT = 2  # decoders (KV cache + graph) kept between batches


class _Rows:
    """The batch's sampling settings as device tensors, and which rows sample (a host fact, known up front)."""

    def __init__(self, requests: list[Request], device: torch.device):
        temperature = [r.temperature for r in requests]
        greedy = [t <= 0 for t in temperature]
        self.divisor = torch.tensor([1.0 if g else t for g, t in zip(greedy, temperature)],
                                    dtype=torch.float32, device=device).unsqueeze(-1)
        self.top_p = torch.tensor([r.top_p for r in requests], dtype=torch.float32, device=device)
        self.top_k = torch.tensor([r.top_k if r.top_k and r.top_k > 0 else 0 for r in requests], device=device)
        self.max_tokens = torch.tensor([r.max_tokens for r in requests], device=device)
        widest = max([len(r.stop_ids) for r in requests] + [1])
        self.stop_ids = torch.tensor([sorted(r.stop_ids) + [-1] * (widest - len(r.stop_ids)) for r in requests],
                                     dtype=torch.long, device=device)
        sampled = [i for i, g in enumerate(greedy) if not g]
        self.any_sampled = bool(sampled)
        # verl's default sampling (top_k -1, top_p 1) filters nothing: the vocabulary-wide sort is then skipped.
        self.filters = any((requests[i].top_k or 0) > 0 or requests[i].top_p < 1.0 for i in sampled)
        self.want_logprobs = any(r.want_logprobs for r in requests)
        self.needs_log_softmax = self.want_logprobs or (self.any_sampled and not self.filters)
        # Seeded rows draw from their own generator, one call each; the others draw together in one call.
        self.seeded = [(i, _generator(requests[i].seed, device)) for i in sampled if requests[i].seed is not None]
        unseeded = [i for i in sampled if requests[i].seed is None]
        self.unseeded = torch.tensor(unseeded, dtype=torch.long, device=device) if unseeded else None


def _generator(seed: int, device: torch.device) -> torch.Generator:
    g = torch.Generator(device=device)
    g.manual_seed(int(seed))
    return g


def _pick(scaled: torch.Tensor, rows: _Rows, logp: Optional[torch.Tensor]) -> torch.Tensor:
    """Greedy rows take the argmax; sampled rows draw from the top-k / top-p filtered distribution (`logp`, the
    rows' log-softmax, where nothing is filtered)."""
    chosen = scaled.argmax(dim=-1)
    if not rows.any_sampled:
        return chosen
    if rows.filters:
        probs = _filtered_probs(scaled, rows)
    else:
        probs = logp.exp()
    if rows.unseeded is not None:
        chosen[rows.unseeded] = torch.multinomial(probs[rows.unseeded], 1).squeeze(-1)
    for row, generator in rows.seeded:
        chosen[row] = torch.multinomial(probs[row], 1, generator=generator).squeeze(-1)
    return chosen


def _filtered_probs(scaled: torch.Tensor, rows: _Rows) -> torch.Tensor:
    """The top-k / top-p filtered distribution of each row (a row with neither keeps every token)."""
    vocab = scaled.shape[-1]
    k = torch.where(rows.top_k > 0, rows.top_k.clamp(max=vocab), torch.full_like(rows.top_k, vocab))
    sorted_logits, order = scaled.sort(dim=-1, descending=True)
    ranks = torch.arange(vocab, device=scaled.device).unsqueeze(0)
    drop = ranks >= k.unsqueeze(-1)
    probs = torch.softmax(sorted_logits.masked_fill(drop, float("-inf")), dim=-1)
    before = probs.cumsum(-1) - probs  # mass of the tokens ranked above each token
    drop |= before >= rows.top_p.unsqueeze(-1)
    drop[:, 0] = False  # the most likely token always stays
    sorted_logits = sorted_logits.masked_fill(drop, float("-inf"))
    return torch.softmax(torch.full_like(scaled, float("-inf")).scatter(-1, order, sorted_logits), dim=-1)


def _empty_cache(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.empty_cache()
