"""verl's side of the `hf` rollout: the replica that launches servers and the adapter inside the trainer worker.

`HFReplica` (a verl `RolloutReplica`) starts one `HFRolloutServer` Ray actor per replica, on the node and GPU of
the replica's worker. `HFServerAdapter` (a verl `BaseRollout`) lives in the hybrid actor/rollout worker: verl calls
its `resume`/`release`/`update_weights` around each training step, and it streams the FSDP actor's full weights to
the server in buckets: as CUDA IPC handles when both processes use the same GPU (no copy through host memory),
else through Ray's object store.
Interfaces read from verl 0.9.1: workers/rollout/replica.py (RolloutReplica, TokenOutput), workers/rollout/base.py
(BaseRollout), workers/engine_workers.py:728 (the naive weight sync), checkpoint_engine/base.py:304.
"""

from __future__ import annotations

import logging
import os
import time

import ray
import torch

from verl.workers.rollout.base import BaseRollout
from verl.workers.rollout.replica import RolloutMode, RolloutReplica

logger = logging.getLogger(__name__)

NAME = "hf"
_BUCKET_BYTES = 256 << 20  # weights travel in pieces of this size so host memory holds one piece at a time


def server_actor_name(replica_rank: int, node_rank: int, is_reward_model=False, is_teacher_model=False,
                      suffix: str = "") -> str:
    role = "reward_" if is_reward_model else "teacher_" if is_teacher_model else ""
    return f"{NAME}_server_{role}{replica_rank}_{node_rank}{suffix}"


class HFReplica(RolloutReplica):
    async def launch_servers(self):
        from rlcompat.verl_plugin.server import HFRolloutServer

        if self.world_size != 1:
            raise ValueError(f"the hf rollout runs one process per replica: set tensor_model_parallel_size, "
                             f"data_parallel_size and pipeline_model_parallel_size to 1 (world size is {self.world_size})")
        worker = self.workers[0]
        node_id, visible = await worker.__ray_call__.remote(_node_and_gpu)
        from verl.plugin.platform import get_platform

        platform = get_platform()
        env_vars = {var: "1" for var in platform.ray_noset_envvars()}
        device = "cpu" if platform.device_name == "cpu" else None
        name = server_actor_name(self.replica_rank, 0, self.is_reward_model, self.is_teacher_model, self.name_suffix)
        server_cls = ray.remote(HFRolloutServer)
        server = server_cls.options(
            scheduling_strategy=ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(node_id=node_id, soft=False),
            runtime_env={"env_vars": env_vars},
            name=name,
            num_cpus=0,  # it shares the worker's bundle, as verl's own servers do
            max_concurrency=self.max_concurrency,
        ).remote(config=self.config, model_config=self.model_config, replica_rank=self.replica_rank,
                 cuda_visible_devices=None if device == "cpu" else visible, device=device)
        await server.get_stats.remote()  # surface a failed model load here, not on the first request
        self.servers = [server]
        self._server_handle = server
        self._server_address = f"{name}@{node_id[:8]}"  # a key for verl's router; nothing listens on it

    async def sleep(self):
        await self.servers[0].wait_for_requests_to_drain.remote()
        await super().sleep()

    def rollout_worker_use_gpu(self) -> bool:
        return True


def _node_and_gpu(worker_self):
    ctx = ray.get_runtime_context()
    ids = ctx.get_accelerator_ids().get("GPU") or [""]
    return ctx.get_node_id(), ",".join(str(i) for i in ids)


class HFServerAdapter(BaseRollout):
    """In the trainer worker: wakes, sleeps and updates the replica's server."""

    def __init__(self, config, model_config, device_mesh, replica_rank: int = -1, **kwargs):
        super().__init__(config, model_config, device_mesh)
        rank = int(os.environ.get("RANK", "0"))
        world = (self.config.tensor_model_parallel_size * self.config.data_parallel_size
                 * self.config.pipeline_model_parallel_size)
        self.replica_rank = rank // world if replica_rank == -1 else replica_rank
        self.rollout_rank = rank % world
        self.is_leader_rank = self.rollout_rank == 0
        self._server = None
        self._same_gpu = None  # asked of the server at the first weight sync
        self.last_sync_seconds = 0.0
        self.last_sync_bytes = 0

    def _handle(self):
        if self._server is None:
            self._server = ray.get_actor(server_actor_name(self.replica_rank, 0))
        return self._server

    async def resume(self, tags: list[str]):
        if self.config.free_cache_engine and self.is_leader_rank:
            await self._handle().wake_up.remote(tags=tags)

    async def release(self):
        if self.config.free_cache_engine and self.is_leader_rank:
            await self._handle().sleep.remote()

    @torch.no_grad()
    async def update_weights(self, weights, wire_format: str = "named_tensors", global_steps: int = None, **kwargs):
        if wire_format != "named_tensors":
            raise NotImplementedError(f"the hf rollout takes full named tensors (checkpoint_engine.backend=naive), "
                                      f"not {wire_format!r}")
        if kwargs.get("peft_config") is not None:
            raise NotImplementedError("the hf rollout takes merged weights: set actor_rollout_ref.model.lora.merge=True")
        start = time.perf_counter()
        server = self._handle() if self.is_leader_rank else None
        if server is not None and self._same_gpu is None:
            self._same_gpu = await _same_gpu(server)
        send = self._send_over_ipc if self._same_gpu else self._send_through_host
        bucket, size, sent = [], 0, 0
        async for name, tensor in _aiter(weights):
            if hasattr(tensor, "full_tensor"):  # a DTensor shard: every rank takes part in gathering it
                tensor = tensor.full_tensor()
            if server is None:
                continue
            bucket.append((name, tensor.detach()))
            size += tensor.numel() * tensor.element_size()
            if size >= _BUCKET_BYTES:
                await send(server, bucket)
                sent, bucket, size = sent + size, [], 0
        if server is not None:
            if bucket:
                await send(server, bucket)
                sent += size
            if global_steps is not None:
                await server.set_global_steps.remote(global_steps)
        self.last_sync_seconds = time.perf_counter() - start
        self.last_sync_bytes = sent

    async def _send_through_host(self, server, bucket):
        await server.load_weights.remote([(name, t.to("cpu", copy=True)) for name, t in bucket])

    async def _send_over_ipc(self, server, bucket):
        """One flat device buffer per bucket, handed over as a CUDA IPC handle: the server copies from it before
        the call returns, so the buffer may be freed afterwards. Falls back to host memory for good if the server
        cannot open the handle."""
        from torch.multiprocessing.reductions import reduce_tensor

        from rlcompat.verl_plugin.weight_buckets import pack_bucket

        if any(t.device.type != "cuda" for _, t in bucket):  # offloaded weights: nothing on the device to share
            await self._send_through_host(server, bucket)
            return
        flat, layout = pack_bucket(bucket)
        try:
            await server.load_weights_from_ipc.remote(reduce_tensor(flat), layout)
        except Exception as exc:  # noqa: BLE001 - any failure to share memory means: use the host path
            logger.warning("hf rollout: CUDA IPC weight sync failed (%s); sending weights through host memory", exc)
            self._same_gpu = False
            await self._send_through_host(server, bucket)

    def generate_sequences(self, prompts):
        raise NotImplementedError("the hf rollout serves verl's agent loop (async mode) only")


async def _same_gpu(server) -> bool:
    """Whether this process and the server use one physical GPU (compared by UUID), so CUDA IPC can hand over
    device memory; a CPU run or two GPUs take the host path."""
    if not torch.cuda.is_available():
        return False
    mine = str(torch.cuda.get_device_properties(torch.cuda.current_device()).uuid)
    try:
        return mine == await server.gpu_uuid.remote()
    except Exception:  # noqa: BLE001 - a server without a GPU answers None or fails: host path
        return False


async def _aiter(items):
    if hasattr(items, "__aiter__"):
        async for item in items:
            yield item
    else:
        for item in items:
            yield item


__all__ = ["HFReplica", "HFServerAdapter", "RolloutMode", "NAME"]
