"""A token-in/token-out generator on plain transformers: what the `hf` rollout serves verl with.

No verl and no Ray here, so it can be tested on its own. Requests are decoded with continuous batching
(rlcompat/verl_plugin/batching.py): rows of a fixed-shape decoder (decode.py: a KV cache slot per row, and on a GPU
the decode step as a CUDA graph, kept for the next batches of that shape) are filled by requests as rows free up;
rows may differ in their sampling settings (temperature, top-p, top-k, max tokens, stop ids, seed).
Each group of prompts prefilled together is left-padded and positions follow the attention mask, as
`transformers.generate` does, so greedy decoding gives each request the tokens `generate` gives it
(tests/test_verl_plugin.py, tests/test_verl_plugin_decode_reuse.py, tests/test_verl_plugin_batching.py).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Callable, Iterable, Optional

import torch

from rlcompat.verl_plugin.batching import Completion, Job, Request, serve  # noqa: F401  (Request: the engine's API)
from rlcompat.verl_plugin.decode import RowDecode
from rlcompat.verl_plugin.watch_grain import WatchGrain


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
        self.steps_decoded = 0  # decode steps run (each for every row of its decoder)
        self.max_rows = 256  # rows a decoder may have (the server sets verl's max_num_seqs)
        self.model.to(self.device)
        # Decoders (cache, buffers, captured graph) by (rows, length, graphed), most recent last; see `_decoder`.
        self._decoders: "OrderedDict[tuple[int, int, bool], RowDecode]" = OrderedDict()
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
        """Completions for requests that are all waiting now, in their order (batching.py decodes them)."""
        if not requests:
            return []
        results: list[Optional[Completion]] = [None] * len(requests)
        pending = [Job(r, (lambda c, i=i: results.__setitem__(i, c))) for i, r in enumerate(requests)]

        def take(n: int) -> list[Job]:
            taken, pending[:] = pending[:n], pending[n:]
            return taken

        self.serve(take)
        return results

    @torch.no_grad()
    def serve(self, take: Callable[[int], list[Job]], on_group: Optional[Callable[[int], None]] = None) -> None:
        """Continuous batching over the jobs `take` hands out (batching.serve), until it has none left."""
        if self.asleep:
            raise RuntimeError("the hf rollout is asleep (its weights are off the device); wake_up() first")
        serve(self, take, on_group)

    def _decoder(self, batch: int, length: int) -> RowDecode:
        """A decoder for `batch` rows of `length` slots, kept for the next batches of that shape.

        At most `_DECODERS_KEPT` are kept, the least recently used dropped first, so memory stays bounded; all are
        dropped on `sleep`, which moves the weights the graphs read."""
        stream = self._graph_stream()
        key = (batch, length, stream is not None)
        decode = self._decoders.pop(key, None)
        if decode is None:
            while len(self._decoders) >= _DECODERS_KEPT:
                self._decoders.popitem(last=False)
            decode = RowDecode(self.model, batch, length, self.device, stream)
        self._decoders[key] = decode
        return decode


_DECODERS_KEPT = 2  # decoders (KV cache + graph) kept between batches


def _empty_cache(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.empty_cache()
