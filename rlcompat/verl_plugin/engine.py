"""A batched token-in/token-out generator on plain transformers: what the `hf` rollout serves verl with.

No verl and no Ray here, so it can be tested on its own. One decode loop with a KV cache serves a batch of
requests whose sampling settings may differ row by row (temperature, top-p, top-k, max tokens, stop ids).
Prompts are left-padded and positions follow the attention mask, as `transformers.generate` does, so greedy
decoding gives the same tokens as `generate` (tests/test_verl_plugin_engine.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional

import torch


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

    def __init__(self, model: torch.nn.Module, device: str | torch.device, pad_token_id: int):
        self.model = model.eval()
        self.device = torch.device(device)
        self.pad_token_id = pad_token_id
        self.asleep = False
        self.tokens_generated = 0
        self.model.to(self.device)

    @classmethod
    def from_pretrained(cls, path: str, device: str, dtype: torch.dtype, attn_implementation: str = "sdpa",
                        trust_remote_code: bool = False) -> "HFGenerator":
        from transformers import AutoConfig, AutoModelForCausalLM

        config = AutoConfig.from_pretrained(path, trust_remote_code=trust_remote_code)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, attn_implementation=attn_implementation,
                                                     trust_remote_code=trust_remote_code)
        pad = config.pad_token_id if getattr(config, "pad_token_id", None) is not None else 0
        return cls(model, device, pad)

    # ---- memory ------------------------------------------------------------------------------------------
    def sleep(self) -> None:
        """Move the weights to host memory so the trainer can use the device; a no-op for memory on a CPU."""
        if not self.asleep and self.device.type != "cpu":
            self.model.to("cpu")
            _empty_cache(self.device)
        self.asleep = True

    def wake_up(self) -> None:
        if self.asleep and self.device.type != "cpu":
            self.model.to(self.device)
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
        position_ids = (mask.cumsum(-1) - 1).clamp(min=0)

        temperature = torch.tensor([r.temperature for r in requests], dtype=torch.float32, device=device)
        greedy = temperature <= 0
        top_p = torch.tensor([r.top_p for r in requests], dtype=torch.float32, device=device)
        top_k = torch.tensor([r.top_k if r.top_k and r.top_k > 0 else 0 for r in requests], device=device)
        max_tokens = torch.tensor([r.max_tokens for r in requests], device=device)
        generators = _row_generators(requests, device)

        out_tokens: list[list[int]] = [[] for _ in requests]
        out_logprobs: list[list[float]] = [[] for _ in requests]
        finished = [False] * batch
        reasons = ["length"] * batch
        past = None
        step_ids, step_positions = input_ids, position_ids
        longest = int(max_tokens.max())
        for step in range(longest):
            out = self.model(input_ids=step_ids, attention_mask=mask, position_ids=step_positions,
                             past_key_values=past, use_cache=True)
            past = out.past_key_values
            logits = out.logits[:, -1, :].float()
            scaled = logits / torch.where(greedy, torch.ones_like(temperature), temperature).unsqueeze(-1)
            next_ids = _pick(scaled, greedy, top_k, top_p, generators)
            logprobs = torch.log_softmax(scaled, dim=-1).gather(-1, next_ids.unsqueeze(-1)).squeeze(-1)
            ids_list, lp_list = next_ids.tolist(), logprobs.tolist()
            for row, r in enumerate(requests):
                if finished[row]:
                    continue
                out_tokens[row].append(ids_list[row])
                out_logprobs[row].append(lp_list[row])
                if ids_list[row] in r.stop_ids:
                    finished[row], reasons[row] = True, "stop"
                elif len(out_tokens[row]) >= r.max_tokens:
                    finished[row] = True
            if all(finished):
                break
            step_ids = next_ids.unsqueeze(-1)
            done = torch.tensor(finished, device=device)
            # finished rows keep decoding pad tokens (cheaper than reshaping the cache) but stop attending
            step_ids = torch.where(done.unsqueeze(-1), torch.full_like(step_ids, self.pad_token_id), step_ids)
            mask = torch.cat([mask, (~done).long().unsqueeze(-1)], dim=-1)
            step_positions = (mask.sum(-1, keepdim=True) - 1).clamp(min=0)
        self.tokens_generated += sum(len(t) for t in out_tokens)
        return [
            Completion(out_tokens[i], out_logprobs[i] if r.want_logprobs else None, reasons[i])
            for i, r in enumerate(requests)
        ]


def _row_generators(requests: list[Request], device: torch.device) -> list[Optional[torch.Generator]]:
    gens = []
    for r in requests:
        if r.seed is None:
            gens.append(None)
        else:
            g = torch.Generator(device=device)
            g.manual_seed(int(r.seed))
            gens.append(g)
    return gens


def _pick(scaled: torch.Tensor, greedy: torch.Tensor, top_k: torch.Tensor, top_p: torch.Tensor,
          generators: list[Optional[torch.Generator]]) -> torch.Tensor:
    """Greedy rows take the argmax; sampled rows draw from the top-k / top-p filtered distribution."""
    chosen = scaled.argmax(dim=-1)
    if bool(greedy.all()):
        return chosen
    filtered = scaled.clone()
    vocab = filtered.shape[-1]
    k = torch.where(top_k > 0, top_k.clamp(max=vocab), torch.full_like(top_k, vocab))
    sorted_logits, order = filtered.sort(dim=-1, descending=True)
    ranks = torch.arange(vocab, device=scaled.device).unsqueeze(0)
    drop = ranks >= k.unsqueeze(-1)
    probs = torch.softmax(sorted_logits.masked_fill(drop, float("-inf")), dim=-1)
    before = probs.cumsum(-1) - probs  # mass of the tokens ranked above each token
    drop |= before >= top_p.unsqueeze(-1)
    drop[:, 0] = False  # the most likely token always stays
    sorted_logits = sorted_logits.masked_fill(drop, float("-inf"))
    filtered = torch.full_like(filtered, float("-inf")).scatter(-1, order, sorted_logits)
    probs = torch.softmax(filtered, dim=-1)
    for row in range(scaled.shape[0]):
        if not bool(greedy[row]):
            chosen[row] = torch.multinomial(probs[row], 1, generator=generators[row]).squeeze(-1)
    return chosen


def _empty_cache(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.empty_cache()
