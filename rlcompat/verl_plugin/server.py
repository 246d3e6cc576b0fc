"""The `hf` rollout server: a Ray actor that batches concurrent token-in/token-out requests onto `HFGenerator`.

verl's agent loop calls `generate(prompt_ids, sampling_params, request_id, ...)` once per sample, concurrently; the
server hands the requests to `HFGenerator.serve` in a worker thread, which decodes them with continuous batching
(batching.py: up to `max_num_seqs` rows, a request taking a row as soon as one is free, also while others decode),
so the event loop keeps accepting requests meanwhile. The other methods are the control calls that
verl's `RolloutReplica` and `CheckpointEngineManager` make on every server (sleep, wake_up, clear_kv_cache, ...).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import time
from typing import Any, Optional

logger = logging.getLogger(__name__)

_GATHER_QUIET_SECONDS = 0.005  # a batch starts once no request arrived for this long
_GATHER_MAX_SECONDS = 0.05  # or after this long, however many keep coming
OUT_OF_SERVICE = ("hf rollout: this replica was taken out of service (abort_all_requests with reject_request); "
                  "send the request to another replica")


class HFRolloutServer:
    def __init__(self, config, model_config, replica_rank: int = 0, node_rank: int = 0,
                 cuda_visible_devices: Optional[str] = None, device: Optional[str] = None):
        import torch

        from rlcompat.knowledge.spellings import torch_dtype_name
        from rlcompat.verl_plugin.engine import HFGenerator

        self.config = config
        self.model_config = model_config
        self.replica_rank = replica_rank
        self.node_rank = node_rank
        self.global_steps: Optional[int] = None
        dtype_name = torch_dtype_name(str(getattr(config, "dtype", "float32")).replace("torch.", "")) or "float32"
        if device is None:
            device = _gpu_of_worker(cuda_visible_devices) if torch.cuda.is_available() else "cpu"
        attn = _attn_implementation(model_config)
        path = model_config.local_path if getattr(model_config, "local_path", None) else model_config.path
        self.engine = HFGenerator.from_pretrained(path, device=device, dtype=getattr(torch, dtype_name),
                                                  attn_implementation=attn,
                                                  trust_remote_code=bool(getattr(model_config, "trust_remote_code", False)))
        generation_config = getattr(self.engine.model, "generation_config", None)
        eos = getattr(generation_config, "eos_token_id", None)
        if eos is None:
            eos = getattr(self.engine.model.config, "eos_token_id", None)
        self.eos_ids = frozenset([eos] if isinstance(eos, int) else (eos or []))
        self.max_batch = max(1, int(getattr(config, "max_num_seqs", 256) or 256))
        self.engine.max_rows = self.max_batch
        self._queue: collections.deque = collections.deque()  # batching.Job, taken by the decoding thread
        self._decoding = False
        self._wakeup: Optional[asyncio.Event] = None
        self._loop_task: Optional[asyncio.Task] = None
        self._gate_open = True
        self._reject = False  # abort_all_requests(reject_request=True): fail arrivals while the gate is closed
        self.stats = {"requests": 0, "batches": 0, "tokens": 0, "generate_seconds": 0.0, "weight_loads": 0, "weight_path": None,
                      "peak_memory_bytes": 0, "wake_seconds": 0.0, "sleep_seconds": 0.0, "arrivals": [],
                      "response_tokens": []}
        # Wall-clock marks of one step (time.time(), comparable across processes): where verl's "gen" time goes
        # between the last weight bucket, the first request, the last result and the sleep.
        self._marks: dict[str, float] = {}
        logger.info("hf rollout server %s/%s: %s on %s, %s", replica_rank, node_rank, path, device, dtype_name)

    # ---- token-in/token-out -----------------------------------------------------------------------------
    async def generate(self, prompt_ids, sampling_params: dict[str, Any], request_id: str, image_data=None,
                       video_data=None, audio_data=None, mm_processor_kwargs=None, priority: int = 0, **kwargs):
        from verl.workers.rollout.replica import TokenOutput

        if image_data is not None or video_data is not None or audio_data is not None:
            raise NotImplementedError("the hf rollout serves text-only models; use vllm/sglang for multimodal input")
        requests = self._requests(list(prompt_ids), dict(sampling_params or {}))
        completions = await asyncio.gather(*[self._submit(r) for r in requests])
        first = completions[0]
        extra = {"global_steps": self.global_steps}
        if len(completions) > 1:  # n > 1: the further samples of the same prompt
            extra["n_samples"] = [{"token_ids": c.token_ids, "log_probs": c.log_probs} for c in completions[1:]]
        return TokenOutput(token_ids=first.token_ids, log_probs=first.log_probs, stop_reason="completed",
                           extra_fields=extra)

    def _requests(self, prompt_ids: list[int], params: dict[str, Any]):
        from rlcompat.verl_plugin.engine import Request

        cfg = self.config
        if "max_tokens" in params:
            max_tokens = int(params.pop("max_tokens"))
        elif "max_new_tokens" in params:
            max_tokens = int(params.pop("max_new_tokens"))
        else:  # verl's rule: the configured response length, within the prompt+response budget
            max_tokens = min(cfg.response_length, cfg.prompt_length + cfg.response_length - len(prompt_ids))
        max_len = getattr(cfg, "max_model_len", None) or (cfg.prompt_length + cfg.response_length)
        max_tokens = max(1, min(max_tokens, max_len - len(prompt_ids)))
        stop_ids = set(params.get("stop_token_ids") or [])
        if not params.get("ignore_eos", getattr(cfg, "ignore_eos", False)):
            stop_ids |= self.eos_ids
        temperature = float(params.get("temperature", 1.0))
        if params.get("do_sample") is False:
            temperature = 0.0
        seed = params.get("seed")
        n = int(params.get("n", 1) or 1)
        return [
            Request(prompt_ids=prompt_ids, max_tokens=max_tokens, temperature=temperature,
                    top_p=float(params.get("top_p", 1.0)), top_k=int(params.get("top_k", -1) or -1),
                    stop_ids=frozenset(stop_ids), want_logprobs=bool(params.get("logprobs")),
                    seed=None if seed is None else int(seed) + i)
            for i in range(n)
        ]

    async def _submit(self, request):
        from rlcompat.verl_plugin.batching import Job

        loop = asyncio.get_running_loop()
        task = self._loop_task
        if task is None or task.done() or task.get_loop() is not loop:  # first call, or a new loop after the last
            self._wakeup = asyncio.Event()
            self._loop_task = loop.create_task(self._serve_loop())
        future = loop.create_future()
        now = time.time()
        first = self._marks.setdefault("first_request", now)
        # When each request of a step arrived (ms after the step's first) and its prompt length: the traffic the
        # batching is designed for (docs/verify.md, *Continuous batching*).
        self.stats["arrivals"].append([round(1000 * (now - first), 2), len(request.prompt_ids)])

        def finish(completion):  # called on the decoding thread
            loop.call_soon_threadsafe(self._finished, future, completion)

        def fail(exc):
            loop.call_soon_threadsafe(lambda: future.done() or future.set_exception(exc))

        if not self._gate_open and self._reject:
            raise RuntimeError(OUT_OF_SERVICE)
        self._queue.append(Job(request, finish, fail))
        self._wakeup.set()
        return await future

    def _finished(self, future, completion):
        self.stats["requests"] += 1
        self.stats["tokens"] += len(completion.token_ids)
        self.stats["response_tokens"].append(len(completion.token_ids))
        if not future.done():
            future.set_result(completion)
        self._marks["last_result"] = time.time()

    def _take(self, n: int) -> list:
        """Up to `n` waiting jobs for the decoding thread (deque pops are atomic); none while aborted."""
        taken = []
        while len(taken) < n and self._gate_open:
            try:
                taken.append(self._queue.popleft())
            except IndexError:
                break
        return taken

    async def _serve_loop(self):
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            if not self._queue or not self._gate_open:
                continue
            await self._gather_arrivals()
            start = time.perf_counter()
            self._decoding = True
            loop = asyncio.get_running_loop()

            def count_group(size: int):  # on the decoding thread; the stats are the event loop's
                loop.call_soon_threadsafe(self._count_group)

            try:
                # Requests arriving while this runs are taken by the decoding thread as rows free up.
                await asyncio.to_thread(self.engine.serve, self._take, count_group)
            except Exception:  # each job in flight got the exception (batching.serve)
                # Not BaseException: the thread hands results back as rows finish, so the callers may be done and
                # the loop cancelled (asyncio.run's end, Ray's shutdown) while the thread is still returning; a
                # CancelledError caught here would leave this task waiting for a wake-up forever, and the loop too.
                logger.exception("hf rollout: decoding failed")
            finally:
                self._decoding = False
            self.stats["generate_seconds"] += time.perf_counter() - start
            self._record_memory()

    def _count_group(self):
        self.stats["batches"] += 1  # prefill groups: requests that started decoding together

    async def _gather_arrivals(self):
        """Wait while requests keep arriving: the agent loop sends a step's samples one Ray call each, a few
        milliseconds apart. Later arrivals join the running decode in free rows, but the decoder's rows are sized
        from the requests waiting when it starts (batching.rows_for), and one prefill of them all is cheaper than
        one per arrival."""
        waited = 0.0
        while waited < _GATHER_MAX_SECONDS and len(self._queue) < self.max_batch:
            before = len(self._queue)
            await asyncio.sleep(_GATHER_QUIET_SECONDS)
            waited += _GATHER_QUIET_SECONDS
            if len(self._queue) == before:
                break

    def _record_memory(self):
        import torch

        if self.engine.device.type == "cuda":
            peak = torch.cuda.max_memory_allocated(self.engine.device)
            self.stats["peak_memory_bytes"] = max(self.stats["peak_memory_bytes"], peak)

    # ---- control calls verl makes on every server --------------------------------------------------------
    async def wake_up(self, tags: Optional[list[str]] = None):
        start = time.perf_counter()
        self.engine.wake_up()
        self.stats["wake_seconds"] += time.perf_counter() - start

    async def sleep(self):
        self._marks["sleep"] = time.time()
        self._write_stats()
        start = time.perf_counter()
        self.engine.sleep()
        self.stats["sleep_seconds"] = time.perf_counter() - start  # reported with the next step's line

    def _write_stats(self):
        """One JSON line per step for `rlcompat verify --trainer` (RLCOMPAT_VERIFY_STATS), then a fresh peak."""
        path = os.environ.get("RLCOMPAT_VERIFY_STATS")
        if not path or not self.stats["requests"]:
            return
        import json

        line = dict(self.stats, replica=self.replica_rank, global_steps=self.global_steps, device=str(self.engine.device),
                    marks=dict(self._marks))
        self._marks = {}
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")
        for key in ("requests", "batches", "tokens", "generate_seconds", "peak_memory_bytes", "wake_seconds"):
            self.stats[key] = 0
        self.stats["arrivals"], self.stats["response_tokens"] = [], []
        if self.engine.device.type == "cuda":
            import torch

            torch.cuda.reset_peak_memory_stats(self.engine.device)

    async def load_weights(self, named_tensors: list) -> int:
        count = await asyncio.to_thread(self.engine.load_weights, named_tensors)
        self.stats["weight_loads"] += 1
        self.stats["weight_path"] = "host"
        self._marks["weights_loaded"] = time.time()
        return count

    async def load_weights_from_ipc(self, handle, layout) -> int:
        """A bucket the trainer worker shares as a CUDA IPC handle (`weight_buckets.pack_bucket`) on this GPU."""
        import torch

        from rlcompat.verl_plugin.weight_buckets import unpack_bucket

        rebuild, args = handle
        args = list(args)
        args[6] = self.engine.device.index if self.engine.device.index is not None else torch.cuda.current_device()
        flat = rebuild(*args)  # the storage's device index is the sender's numbering: use this process' own
        count = await asyncio.to_thread(self._load_and_sync, unpack_bucket(flat, layout))
        del flat
        self.stats["weight_loads"] += 1
        self.stats["weight_path"] = "cuda-ipc"
        self._marks["weights_loaded"] = time.time()
        return count

    def _load_and_sync(self, named_tensors) -> int:
        import torch

        count = self.engine.load_weights(named_tensors)
        torch.cuda.synchronize(self.engine.device)  # the sender frees the buffer once this call returns
        return count

    async def gpu_uuid(self):
        import torch

        if self.engine.device.type != "cuda":
            return None
        return str(torch.cuda.get_device_properties(self.engine.device).uuid)

    async def set_global_steps(self, global_steps: int):
        self.global_steps = global_steps

    async def clear_kv_cache(self):
        pass  # a row's cache is zeroed when a request fills it (decode.py: _RowLayer.update)

    async def release_kv_cache(self):
        self.engine.release_decoders()

    async def resume_kv_cache(self):
        pass

    async def wait_for_requests_to_drain(self):
        # Until nothing is decoding and nothing waits that will be taken: requests parked behind a closed gate
        # (abort_all_requests) wait for resume_generation, as at verl's vLLM server, so they do not hold the drain.
        while self._decoding or (self._queue and self._gate_open):
            await asyncio.sleep(0.01)

    async def abort_all_requests(self, reject_request: bool = False):
        """Close the gate: rows already decoding finish, requests not yet taken are parked until resume_generation
        (with `reject_request`, verl's flag for a replica leaving service, they fail instead, as do new ones)."""
        self._gate_open = False
        self._reject = reject_request
        failed = []
        if reject_request:
            while self._queue:
                job = self._queue.popleft()
                job.fail(RuntimeError(OUT_OF_SERVICE))
                failed.append(job)
        return {"aborted_count": len(failed), "request_ids": []}

    async def resume_generation(self):
        self._gate_open = True
        self._reject = False
        if self._wakeup is not None:
            self._wakeup.set()

    async def start_profile(self, **kwargs):
        pass

    async def stop_profile(self):
        pass

    async def get_stats(self) -> dict:
        return dict(self.stats, tokens_generated=self.engine.tokens_generated)


def _gpu_of_worker(worker_gpu: Optional[str]) -> str:
    """The CUDA device of the trainer worker this server shares a GPU with.

    Ray gives the server no GPU of its own (it is started with Ray's "do not set CUDA_VISIBLE_DEVICES" variables,
    as verl's servers are), so it sees what the raylet sees; the worker's Ray GPU id is an index into that list.
    Setting CUDA_VISIBLE_DEVICES here instead would be too late: importing verl (and the guard) already queried CUDA.
    """
    if not worker_gpu:
        return "cuda"
    gpu = worker_gpu.split(",")[0].strip()
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    if visible:
        return f"cuda:{visible.index(gpu)}" if gpu in visible else "cuda"
    return f"cuda:{int(gpu)}" if gpu.isdigit() else "cuda"


def _attn_implementation(model_config) -> str:
    """The attention the actor was built with (verl's override_config), so both agree; sdpa otherwise."""
    override = getattr(model_config, "override_config", None) or {}
    try:
        impl = override.get("attn_implementation")
    except AttributeError:
        impl = None
    return impl or "sdpa"
