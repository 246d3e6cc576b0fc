"""Run verl 0.9.1's FSDP training code on a CPU without touching the tree under test.

verl has no CPU platform; its FSDP engines hard-code two things a CPU cannot do (FSDP1 `sync_module_states=True`,
pinned CPU offload for forward-only engines). Each adaptation below goes through verl's public plugin registry or
wraps a name verl looks up at call time, and each is reported so nobody mistakes it for a fix to the tree.
See docs/verify.md ("CPU adaptations").
"""

from __future__ import annotations

import os
import types
from contextlib import contextmanager

ADAPTATIONS: list[str] = []


def _cpu_device_module() -> types.ModuleType:
    """torch.cpu plus the memory/RNG calls verl makes on its device module (no-ops or host equivalents on a CPU)."""
    import torch

    mod = types.ModuleType("rlcompat_cpu_device")
    for name in dir(torch.cpu):
        if not name.startswith("__"):
            setattr(mod, name, getattr(torch.cpu, name))
    zero = lambda *a, **k: 0  # noqa: E731
    for name in ("max_memory_allocated", "max_memory_reserved", "memory_allocated", "memory_reserved"):
        setattr(mod, name, zero)
    for name in ("empty_cache", "reset_peak_memory_stats", "set_device", "manual_seed", "manual_seed_all", "ipc_collect"):
        setattr(mod, name, lambda *a, **k: None)
    mod.mem_get_info = lambda *a, **k: (0, 0)
    mod.get_device_name = lambda *a, **k: "CPU"  # verl's FLOPs table then reports no peak (MFU 0)
    mod.get_rng_state = lambda *a, **k: torch.get_rng_state()
    mod.set_rng_state = lambda state, *a, **k: torch.set_rng_state(state)
    mod.is_available = lambda: True
    mod.device_count = lambda: 1
    mod.current_device = lambda: "cpu"
    mod.synchronize = lambda *a, **k: None
    return mod


def register_cpu_platform(ray_resource: str = "CPU") -> None:
    """A `PlatformBase` for the CPU, registered and selected through verl's PlatformRegistry/set_platform.

    `ray_resource` is the Ray resource verl asks for per worker: "GPU" when Ray was started with fake GPUs
    (verify --trainer), so verl's resource pools can be placed on a CPU-only machine.
    """
    import torch
    from verl.plugin.platform.platform_base import PlatformBase
    from verl.plugin.platform.platform_manager import PlatformRegistry, set_platform

    cpu_module = _cpu_device_module()

    @PlatformRegistry.register(platform="cpu")
    class PlatformCPU(PlatformBase):
        device_name = "cpu"
        vendor_name = "cpu"
        device_module = cpu_module

        def is_available(self):
            return True

        def current_device(self):
            return "cpu"  # verl passes it to .to(...); a CPU has no index

        def device_count(self):
            return 1

        def set_device(self, device_index):
            pass

        def synchronize(self, device_index=None):
            pass

        def manual_seed(self, seed):
            torch.manual_seed(seed)

        def manual_seed_all(self, seed):
            torch.manual_seed(seed)

        def set_allocator_settings(self, settings):
            pass

        def empty_cache(self):
            pass

        def get_device_capability(self, device_index=0):
            return (None, None)

        def communication_backend_name(self):
            return "gloo"

        def visible_devices_envvar(self):
            return "CUDA_VISIBLE_DEVICES"

        def ray_resource_name(self):
            return ray_resource

        def is_ipc_supported(self):
            return False

        def ray_noset_envvars(self):
            return []

        @contextmanager
        def nvtx_range(self, msg):
            yield

        def profiler_start(self):
            pass

        def profiler_stop(self):
            pass

        @property
        def cudart(self):
            return None

    set_platform(PlatformCPU())
    # The FSDP engines register for device=["cuda", "npu"]; verl's own override says which entry to use.
    os.environ["VERL_ENGINE_DEVICE"] = "cuda"
    ADAPTATIONS.append("verl platform 'cpu' registered via PlatformRegistry/set_platform (verl 0.9.1 has none)")
    ADAPTATIONS.append("VERL_ENGINE_DEVICE=cuda, so EngineRegistry picks the FSDP engines on the CPU platform")


def _every_rank_reads_the_checkpoint(transformer_impl) -> None:
    """verl builds the model on the meta device on every rank but the first and has FSDP broadcast rank 0's weights
    (utils/fsdp_utils.py:64 get_init_weight_context_manager); on the CPU that broadcast is switched off (FSDP1) or
    goes through an accelerator (FSDP2), so with more than one process the other ranks trained and served
    uninitialised memory (NaN probabilities at the first rollout). Each rank reads the checkpoint itself instead:
    the same weights everywhere, and one process is unchanged (rank 0 always read it)."""
    if getattr(transformer_impl, "_rlcompat_cpu_init", False):
        return
    original = transformer_impl.get_init_weight_context_manager

    def init_context(use_meta_tensor=True, mesh=None):
        return original(use_meta_tensor=False, mesh=mesh)

    transformer_impl.get_init_weight_context_manager = init_context
    transformer_impl._rlcompat_cpu_init = True
    ADAPTATIONS.append("every rank reads the checkpoint (no meta-device init waiting for a broadcast from rank 0)")


def patch_fsdp_engine_for_cpu(strategy: str) -> None:
    """FSDP1 sync_module_states and pinned offload for forward-only engines: both need an accelerator."""
    from torch.distributed.fsdp import FullyShardedDataParallel
    from verl.workers.engine.fsdp import transformer_impl

    _every_rank_reads_the_checkpoint(transformer_impl)
    if strategy == "fsdp2":
        original_policy = transformer_impl.CPUOffloadPolicy

        def unpinned_policy(*args, **kwargs):
            kwargs["pin_memory"] = False
            return original_policy(*args, **kwargs)

        transformer_impl.CPUOffloadPolicy = unpinned_policy
        ADAPTATIONS.append("FSDP2: CPUOffloadPolicy(pin_memory=False) for forward-only engines (pinning needs an accelerator)")
        return

    class CPUFSDP(FullyShardedDataParallel):
        def __init__(self, module, *args, **kwargs):
            kwargs["sync_module_states"] = False  # one rank: nothing to broadcast, and it demands GPU tensors
            kwargs["cpu_offload"] = None  # the parameters already live on the CPU; pinning needs an accelerator
            super().__init__(module, *args, **kwargs)

    transformer_impl.FSDP = CPUFSDP
    ADAPTATIONS.append("FSDP1: sync_module_states=False, no CPU offload (both need an accelerator)")
