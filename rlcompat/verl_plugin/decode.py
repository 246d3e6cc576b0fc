"""The decode loop's fixed-shape state: a KV cache with a write position per row, and on a GPU the step as a CUDA graph.

Why fixed shapes: with a growing (dynamic) cache every decode step runs the model's Python forward again, a few
hundred kernel launches each paid for in Python, and under `verify`'s target guard each operator also passes
through its dtype watch; the rollout then ran 70-90 ms a step where the weights take 0.4 ms to read
(docs/verify.md). With every buffer at a fixed address (cache, token ids, slots, the attention mask) the step is
captured once per (rows, length) and replayed, no Python per operator and no host synchronisation.

Why a position per row (continuous batching, engine.py): a row is filled by a request, decodes until it finishes
and is then filled by the next waiting request while the other rows keep decoding, so rows are at different places
in their sequences. Each row keeps its own start slot (its prompt is left-padded within the group it was prefilled
with) and its own current slot; a step writes each row's new key/value at that row's slot and each row attends
only to its own slots `start..current`. transformers' StaticCache writes one slot for the whole batch, hence
`RowCache` below.

CUDA graphs are a CUDA runtime feature, not Triton code, so they are the path on Pascal too (sm60/sm61); the guard
watches each part of the loop op by op once and then by its results (watch_grain.py). On a CPU the same fixed
buffers are used without a graph, so the CPU tests run the same code.
"""

from __future__ import annotations

import inspect

import torch


def _cache_base():
    """transformers' Cache class, which the model's forward expects; an older transformers is refused with one line."""
    from transformers import cache_utils

    base = getattr(cache_utils, "Cache", None)
    if base is None or "layers" not in inspect.signature(base.__init__).parameters:
        # Before 4.56 a Cache was not a list of layers (cache_utils.Cache in 4.51 has no `layers`).
        raise RuntimeError("the hf rollout needs transformers >= 4.56 (a Cache made of layers): "
                           "pip install 'transformers>=4.56'")
    return base


class _RowLayer:
    """One attention layer's keys and values, (rows, heads, length, head dim), allocated at the first write."""

    is_sliding = False
    is_compileable = True

    def __init__(self, owner: "RowDecode"):
        self.owner = owner
        self.keys: torch.Tensor | None = None
        self.values: torch.Tensor | None = None
        self.is_initialized = False

    def allocate(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        """The layer's tensors, zeroed, shaped after the first keys and values it is given (once)."""
        if self.keys is not None:
            return
        owner = self.owner
        shape = (owner.batch, key_states.shape[1], owner.length)
        self.keys = torch.zeros(shape + key_states.shape[3:], dtype=key_states.dtype, device=key_states.device)
        self.values = torch.zeros(shape + value_states.shape[3:], dtype=value_states.dtype, device=value_states.device)
        self.is_initialized = True

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        owner = self.owner
        self.allocate(key_states, value_states)
        rows = owner.prefill_rows
        if rows is not None:  # a group's prompts, left-padded to one width, into slots 0..width-1 of their rows
            width = key_states.shape[2]
            self.keys.index_fill_(0, rows, 0)  # the rows' earlier sequences: start from zeros, as a new cache does
            self.values.index_fill_(0, rows, 0)
            self.keys[:, :, :width].index_copy_(0, rows, key_states)
            self.values[:, :, :width].index_copy_(0, rows, value_states)
            return key_states, value_states
        # one new token per row, at that row's current slot
        b, h, _, d = key_states.shape
        self.keys.scatter_(2, owner.cur.view(b, 1, 1, 1).expand(b, h, 1, d), key_states)
        b, h, _, d = value_states.shape
        self.values.scatter_(2, owner.cur.view(b, 1, 1, 1).expand(b, h, 1, d), value_states)
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return 0  # positions are always passed explicitly

    def get_mask_sizes(self, *args, **kwargs):
        return self.owner.length, 0

    def get_max_cache_shape(self) -> int:
        return self.owner.length


def row_cache(decode: "RowDecode", num_layers: int):
    base = _cache_base()

    class RowCache(base):
        def __init__(self):
            super().__init__(layers=[_RowLayer(decode) for _ in range(num_layers)])

    return RowCache()


class RowDecode:
    """Fixed buffers for `batch` rows of up to `length` slots each (prompt + new tokens).

    `prefill` runs a group of prompts into chosen rows, `step` decodes one token for every row (rows whose request
    finished or that hold none run too, on their last slot, and their results are ignored: the shapes stay fixed).
    The buffers, and on a GPU the captured step, are kept from one batch of requests to the next: the generator
    holds one decoder per (rows, length) and reuses it while its weights stay where they are (engine.py)."""

    def __init__(self, model: torch.nn.Module, batch: int, length: int, device: torch.device,
                 graph_stream: "torch.cuda.Stream | None"):
        self.model = model
        self.batch, self.length = batch, length
        dtype = next(model.parameters()).dtype
        self.blocked = torch.tensor(torch.finfo(dtype).min, dtype=dtype, device=device)
        self.zero = torch.zeros((), dtype=dtype, device=device)
        self.slots = torch.arange(length, device=device).unsqueeze(0)
        self.ids = torch.zeros((batch, 1), dtype=torch.long, device=device)
        self.cur = torch.zeros((batch, 1), dtype=torch.long, device=device)  # the slot each row writes next
        self.start = torch.zeros((batch, 1), dtype=torch.long, device=device)  # each row's first real slot
        self.prefill_rows: torch.Tensor | None = None
        self.cache = row_cache(self, model.config.get_text_config().num_hidden_layers
                               if hasattr(model.config, "get_text_config") else model.config.num_hidden_layers)
        self.graph_stream = graph_stream  # None: no graph (a CPU, or graphs switched off)
        self.graph: torch.cuda.CUDAGraph | None = None
        self.graph_logits: torch.Tensor | None = None
        self._keep_logits = "logits_to_keep" in inspect.signature(model.forward).parameters

    def take_rows_of(self, other: "RowDecode") -> None:
        """Copy another (smaller) decoder's rows into this one's first rows: their cache and slots, as they are."""
        b, length = other.batch, other.length
        for mine, theirs in zip(self.cache.layers, other.cache.layers):
            if theirs.keys is None:
                continue
            mine.allocate(theirs.keys, theirs.values)
            mine.keys[:b, :, :length].copy_(theirs.keys)
            mine.values[:b, :, :length].copy_(theirs.values)
        self.cur[:b].copy_(other.cur)
        self.start[:b].copy_(other.start)

    def cache_tensors(self) -> list[torch.Tensor]:
        """The KV cache's tensors (for the guard's check of what a prefill wrote)."""
        return [t for layer in self.cache.layers for t in (layer.keys, layer.values) if t is not None]

    def prefill(self, rows: torch.Tensor, input_ids: torch.Tensor, prompt_mask: torch.Tensor) -> torch.Tensor:
        """Run left-padded prompts (`input_ids`, `prompt_mask`: group x width) into `rows`; each row's logits for
        its first new token. The rows' slots are set so that the next `step` writes at slot `width`."""
        group, width = input_ids.shape
        mask = prompt_mask.bool()
        position_ids = (prompt_mask.cumsum(-1) - 1).clamp(min=0)
        # a query attends to earlier real tokens of its own row (padded queries see only their row's prompt)
        allowed = torch.ones((width, width), dtype=torch.bool, device=input_ids.device).tril()
        allowed = allowed.unsqueeze(0) & mask.unsqueeze(1)
        additive = torch.where(allowed, self.zero, self.blocked)[:, None, :, :]
        extra = {"logits_to_keep": 1} if self._keep_logits else {}
        self.prefill_rows = rows
        try:
            out = self.model(input_ids=input_ids, attention_mask=additive, position_ids=position_ids,
                             past_key_values=self.cache, use_cache=True, **extra)
        finally:
            self.prefill_rows = None
        self.cur.index_copy_(0, rows, torch.full((group, 1), width - 1, dtype=torch.long, device=rows.device))
        self.start.index_copy_(0, rows, (width - mask.sum(-1, keepdim=True)).long())
        return out.logits[:, -1, :]

    def step(self, next_ids: torch.Tensor, advance: torch.Tensor, recapture: bool = False) -> torch.Tensor:
        """Feed each row's newest token; the logits for the token after it. Rows where `advance` is false (finished
        or empty) stay on their slot. `recapture` drops a captured graph and captures it again from this step (for
        the guard to see its operators)."""
        self.ids.copy_(next_ids.view(-1, 1))
        self.cur.add_(advance.view(-1, 1).long())
        if self.graph_stream is None:
            return self._forward()
        if recapture:
            self.graph = self.graph_logits = None
        if self.graph is None:
            return self._first_graph_step()
        self.graph.replay()
        return self.graph_logits

    def _forward(self) -> torch.Tensor:
        # An additive 4D mask is used as given by transformers' mask creation (no data-dependent checks, which a
        # graph capture forbids) and by both the eager and the SDPA attention.
        keep = (self.slots >= self.start) & (self.slots <= self.cur)
        mask = torch.where(keep, self.zero, self.blocked)[:, None, None, :]
        out = self.model(input_ids=self.ids, attention_mask=mask, position_ids=self.cur - self.start,
                         past_key_values=self.cache, use_cache=True)
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
