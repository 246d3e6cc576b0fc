"""One batch's decode loop in fixed-shape buffers: a static KV cache, and on a GPU the decode step as a CUDA graph.

Why: with a growing (dynamic) cache every decode step runs the model's Python forward again, a few hundred kernel
launches each paid for in Python, and under `verify`'s target guard each operator also passes through its dtype
watch. The rollout then ran 70-90 ms a step where the weights take 0.4 ms to read (docs/verify.md). With every
buffer at a fixed address (cache, token ids, positions, the cache slot, the attention mask) the step is captured
once per batch and replayed: no Python per operator, no host synchronisation.

CUDA graphs are a CUDA runtime feature, not Triton code, so they are the path on Pascal too (sm60/sm61); the guard
sees every operator of the captured step once, when the graph is captured, which is the coarser grain it checks at
during decode. On a CPU the same fixed buffers are used without a graph, so the CPU tests run the same code.

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
    """Prefill a left-padded batch, then decode one token per `step`, reusing every buffer."""

    def __init__(self, model: torch.nn.Module, prompt_mask: torch.Tensor, max_new: int,
                 graph_stream: "torch.cuda.Stream | None"):
        self.model = model
        batch, self.width = prompt_mask.shape
        self.length = self.width + max_new
        device = prompt_mask.device
        dtype = next(model.parameters()).dtype
        self.cache = static_cache(model, self.length)
        self.keep = torch.zeros((batch, self.length), dtype=torch.bool, device=device)
        self.keep[:, : self.width] = prompt_mask.bool()
        self.blocked = torch.tensor(torch.finfo(dtype).min, dtype=dtype, device=device)
        self.zero = torch.zeros((), dtype=dtype, device=device)
        self.ids = torch.zeros((batch, 1), dtype=torch.long, device=device)
        self.positions = prompt_mask.sum(-1, keepdim=True).long() - 1  # the last prompt token's position
        self.slot = torch.full((1,), self.width - 1, dtype=torch.long, device=device)
        self.graph_stream = graph_stream  # None: no graph (a CPU, or graphs switched off)
        self.graph: torch.cuda.CUDAGraph | None = None
        self.graph_logits: torch.Tensor | None = None

    def prefill(self, input_ids: torch.Tensor, prompt_mask: torch.Tensor) -> torch.Tensor:
        position_ids = (prompt_mask.cumsum(-1) - 1).clamp(min=0)
        cache_position = torch.arange(self.width, device=input_ids.device)
        out = self.model(input_ids=input_ids, attention_mask=prompt_mask, position_ids=position_ids,
                         past_key_values=self.cache, cache_position=cache_position, use_cache=True)
        return out.logits[:, -1, :]

    def step(self, next_ids: torch.Tensor) -> torch.Tensor:
        """Feed each row's newest token; the logits for the token after it."""
        self.ids.copy_(next_ids.view(-1, 1))
        self.positions.add_(1)
        self.slot.add_(1)
        if self.graph_stream is None:
            return self._forward()
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
