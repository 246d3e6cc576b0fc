"""One batch's decode loop in fixed-shape buffers: a static KV cache, and on a GPU the decode step as a CUDA graph.

Why: with a growing (dynamic) cache every decode step runs the model's Python forward again, a few hundred kernel
launches each paid for in Python, and under `verify`'s target guard each operator also passes through its dtype
watch. The rollout then ran 70-90 ms a step where the weights take 0.4 ms to read (docs/verify.md). With every
buffer at a fixed address (cache, token ids, positions, the cache slot, the attention mask) the step is captured
once per batch shape and replayed, batch after batch: no Python per operator, no host synchronisation.

CUDA graphs are a CUDA runtime feature, not Triton code, so they are the path on Pascal too (sm60/sm61); the guard
watches each part of the loop op by op once and then by its results (watch_grain.py), which is the coarser grain it
checks at during decode. On a CPU the same fixed buffers are used without a graph, so the CPU tests run the same code.

Positions and masks follow `transformers.generate` with left padding: each row's positions count its own tokens;
cache slot i is shared by the batch; a row attends to its prompt's real tokens and to every slot decoded so far.
"""

from __future__ import annotations

import inspect

import torch


def static_cache(model: torch.nn.Module, max_len: int):
    """A transformers StaticCache of `max_len` slots, sized on first use (transformers >= 4.56); an older
    transformers is refused with one line."""
    from transformers import StaticCache

    params = inspect.signature(StaticCache.__init__).parameters
    if "config" not in params or "max_batch_size" in params:
        # Before 4.56 the cache was sized by batch, dtype and device up front (cache_utils.StaticCache.__init__:
        # `config, max_batch_size, ...` in 4.51, `*args, **kwargs` in 4.55).
        raise RuntimeError("the hf rollout needs transformers >= 4.56 (a StaticCache sized on first use): "
                           "pip install 'transformers>=4.56'")
    return StaticCache(config=model.config, max_cache_len=max_len)


class StaticDecode:
    """Fixed buffers for batches of `batch` rows and up to `length` positions (prompt + new tokens).

    `begin` readies them for a batch (a left-padded prompt of any width that leaves room for its new tokens),
    `prefill` runs the prompt, `step` decodes one token. The buffers, and on a GPU the captured decode graph, are
    kept from batch to batch: the generator holds one decoder per (batch, length) and reuses it while its weights
    stay where they are (engine.py)."""

    def __init__(self, model: torch.nn.Module, batch: int, length: int, device: torch.device,
                 graph_stream: "torch.cuda.Stream | None"):
        self.model = model
        self.batch, self.length = batch, length
        dtype = next(model.parameters()).dtype
        self.cache = static_cache(model, length)
        self.keep = torch.zeros((batch, length), dtype=torch.bool, device=device)
        self.blocked = torch.tensor(torch.finfo(dtype).min, dtype=dtype, device=device)
        self.zero = torch.zeros((), dtype=dtype, device=device)
        self.ids = torch.zeros((batch, 1), dtype=torch.long, device=device)
        self.positions = torch.zeros((batch, 1), dtype=torch.long, device=device)
        self.slot = torch.zeros((1,), dtype=torch.long, device=device)
        self.width = 0
        self.graph_stream = graph_stream  # None: no graph (a CPU, or graphs switched off)
        self.graph: torch.cuda.CUDAGraph | None = None
        self.graph_logits: torch.Tensor | None = None

    def begin(self, prompt_mask: torch.Tensor) -> None:
        """Ready the buffers, in place (the graph reads them at fixed addresses), for a batch of this prompt mask."""
        self.width = prompt_mask.shape[1]
        self.keep.zero_()
        self.keep[:, : self.width] = prompt_mask.bool()
        self.positions.copy_(prompt_mask.sum(-1, keepdim=True) - 1)  # the last prompt token's position
        self.slot.fill_(self.width - 1)
        # Slots past this batch's tokens are masked, but a stale non-finite value there would still poison the
        # attention's sum (0 x NaN): start from zeros, as a new cache does.
        self.cache.reset()

    def cache_tensors(self) -> list[torch.Tensor]:
        """The KV cache's tensors (for the guard's check of what a prefill wrote)."""
        found = []
        for layer in getattr(self.cache, "layers", ()):
            found += [t for t in (getattr(layer, "keys", None), getattr(layer, "values", None))
                      if isinstance(t, torch.Tensor)]
        return found

    def prefill(self, input_ids: torch.Tensor, prompt_mask: torch.Tensor) -> torch.Tensor:
        position_ids = (prompt_mask.cumsum(-1) - 1).clamp(min=0)
        cache_position = torch.arange(self.width, device=input_ids.device)
        out = self.model(input_ids=input_ids, attention_mask=prompt_mask, position_ids=position_ids,
                         past_key_values=self.cache, cache_position=cache_position, use_cache=True)
        return out.logits[:, -1, :]

    def step(self, next_ids: torch.Tensor, recapture: bool = False) -> torch.Tensor:
        """Feed each row's newest token; the logits for the token after it. `recapture` drops a captured graph
        and captures it again from this step (for the guard to see its operators)."""
        self.ids.copy_(next_ids.view(-1, 1))
        self.positions.add_(1)
        self.slot.add_(1)
        if self.graph_stream is None:
            return self._forward()
        if recapture:
            self.graph = self.graph_logits = None
        if self.graph is None:
            return self._first_graph_step()
        self.graph.replay()
        return self.graph_logits

    def _forward(self) -> torch.Tensor:
        self.keep.index_fill_(1, self.slot, True)
        # An additive 4D mask is used as given by transformers' mask creation (no data-dependent checks, which a
        # graph capture forbids) and by both the eager and the SDPA attention.
        mask = torch.where(self.keep, self.zero, self.blocked)[:, None, None, :]
        out = self.model(input_ids=self.ids, attention_mask=mask, position_ids=self.positions,
                         past_key_values=self.cache, cache_position=self.slot, use_cache=True)
        return out.logits[:, -1, :]

    def _first_graph_step(self) -> torch.Tensor:
        # The first step runs eagerly on the side stream (CUDA's warm-up before a capture: lazy initialisation and
        # workspace allocation happen outside the graph); its logits are this step's result. Capturing records the
        # step without running it, so the buffers' values stay as the warm-up left them. The side stream is the
        # generator's, reused batch after batch: cuBLAS keeps a workspace per stream it runs on (32 MiB on Hopper),
        # so a new stream per batch would leave one more workspace behind each time.
        side = self.graph_stream
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            logits = self._forward().clone()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        # thread_local: the rollout server decodes on a worker thread while its event loop thread keeps running.
        with torch.cuda.graph(graph, stream=side, capture_error_mode="thread_local"):
            self.graph_logits = self._forward()
        self.graph = graph
        return logits
