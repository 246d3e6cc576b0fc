"""Choosing each row's next token: greedy, or sampled with temperature / top-k / top-p, row by row."""

from __future__ import annotations

from typing import Optional, Sequence

import torch


class Rows:
    """The rows' sampling settings as device tensors, and which rows sample (a host fact, known when rows are
    filled). A row without a request (`None`) is greedy and never stops on a token; its results are ignored.
    `generators` holds each seeded row's own generator, made when the row was filled and kept while it decodes."""

    def __init__(self, requests: Sequence, generators: dict, device: torch.device):
        temperature = [r.temperature if r is not None else 0.0 for r in requests]
        greedy = [t <= 0 for t in temperature]
        self.divisor = torch.tensor([1.0 if g else t for g, t in zip(greedy, temperature)],
                                    dtype=torch.float32, device=device).unsqueeze(-1)
        self.top_p = torch.tensor([r.top_p if r is not None else 1.0 for r in requests], dtype=torch.float32,
                                  device=device)
        self.top_k = torch.tensor([r.top_k if r is not None and r.top_k and r.top_k > 0 else 0 for r in requests],
                                  device=device)
        self.max_tokens = torch.tensor([r.max_tokens if r is not None else 1 for r in requests], device=device)
        stops = [sorted(r.stop_ids) if r is not None else [] for r in requests]
        widest = max([len(s) for s in stops] + [1])
        self.stop_ids = torch.tensor([s + [-1] * (widest - len(s)) for s in stops], dtype=torch.long, device=device)
        sampled = [i for i, g in enumerate(greedy) if not g]
        self.any_sampled = bool(sampled)
        # verl's default sampling (top_k -1, top_p 1) filters nothing: the vocabulary-wide sort is then skipped.
        self.filters = any((requests[i].top_k or 0) > 0 or requests[i].top_p < 1.0 for i in sampled)
        self.want_logprobs = any(r is not None and r.want_logprobs for r in requests)
        self.needs_log_softmax = self.want_logprobs or (self.any_sampled and not self.filters)
        # Seeded rows draw from their own generator, one call each; the others draw together in one call.
        self.seeded = [(i, generators[i]) for i in sampled if i in generators]
        unseeded = [i for i in sampled if i not in generators]
        self.unseeded = torch.tensor(unseeded, dtype=torch.long, device=device) if unseeded else None


def seeded_generator(seed: Optional[int], device: torch.device) -> Optional[torch.Generator]:
    if seed is None:
        return None
    g = torch.Generator(device=device)
    g.manual_seed(int(seed))
    return g


def pick(scaled: torch.Tensor, rows: Rows, logp: Optional[torch.Tensor]) -> torch.Tensor:
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


def _filtered_probs(scaled: torch.Tensor, rows: Rows) -> torch.Tensor:
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
